"""Artifact probe, download and extraction against a real HTTP server on 127.0.0.1."""
from __future__ import annotations

import io
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest

from flow.workflows.reproduce.errors import ArtifactError
from flow.workflows.reproduce.profiles import load_profile
from flow.workflows.reproduce.stage3.artifacts import (
    download, extract_wheels, flatten_wheels, probe,
)
from flow.workflows.reproduce.stage3.rules import artifact_url
from flow.workflows.reproduce.verdict.models import BLOCKER_NO_WHEEL_EXTRACTED


def make_zip(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in names:
            zf.writestr(name, f"content of {name}")
    return buf.getvalue()


BODY = make_zip(["dist/torch-2.9.0-cp310-linux_x86_64.whl", "dist/logs.txt"])


class Handler(BaseHTTPRequestHandler):
    """Routes: /ok honours Range (206); /full ignores it (200); /redirect -> /ok;
    /flaky fails twice with 500; /truncated lies about its length once; /gone is 404."""

    hits: dict[str, int] = {}

    def log_message(self, *args: object) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        path = self.path.split("?")[0]
        Handler.hits[path] = Handler.hits.get(path, 0) + 1
        ranged = self.headers.get("Range") == "bytes=0-0"
        if path.endswith("/ok/artifacts.zip"):
            self._send(206, BODY[:1]) if ranged else self._send(200, BODY)
        elif path.endswith("/full/artifacts.zip"):
            self._send(200, BODY)
        elif path.endswith("/redirect/artifacts.zip"):
            self.send_response(302)
            self.send_header("Location", path.replace("/redirect/", "/ok/"))
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path.endswith("/flaky/artifacts.zip") and Handler.hits[path] <= 2:
            self._send(500, b"try again")
        elif path.endswith("/flaky/artifacts.zip"):
            self._send(200, BODY)
        elif path.endswith("/truncated/artifacts.zip") and Handler.hits[path] == 1:
            self.send_response(200)
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            self.wfile.write(BODY[:10])
            self.close_connection = True
        elif path.endswith("/truncated/artifacts.zip"):
            self._send(200, BODY)
        else:
            self._send(404, b"no such key")


@pytest.fixture
def base_url() -> Iterator[str]:
    """A real HTTP server on 127.0.0.1, its base URL a profile setting."""
    Handler.hits = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def url_for(base: str, env: str) -> str:
    profile = load_profile("pytorch-xpu", {"ci_env.pytorch.artifact_base_url": base}).ci_env.pytorch
    return artifact_url(profile.artifact_url_template, base_url=profile.artifact_base_url,
                        run_id=7, build_env=env)


@pytest.mark.parametrize("env,status,ok", [
    ("ok", 206, True), ("full", 200, True), ("redirect", 206, True), ("gone", 404, False),
])
def test_probe(base_url: str, env: str, status: int, ok: bool) -> None:
    """A one-byte range GET, following redirects, accepts 200 or 206 only."""
    result = probe(url_for(base_url, env))
    assert (status, ok) == (result.status, result.ok)


def test_probe_sends_range_get(base_url: str) -> None:
    """The probe is a GET with Range: bytes=0-0 (HEAD is rejected by some intermediaries)."""
    seen: list[tuple[str, str | None]] = []
    original = Handler.do_GET

    def spy(self: Handler) -> None:
        seen.append((self.command, self.headers.get("Range")))
        original(self)

    Handler.do_GET = spy  # type: ignore[method-assign]
    try:
        probe(url_for(base_url, "ok"))
    finally:
        Handler.do_GET = original  # type: ignore[method-assign]
    assert [("GET", "bytes=0-0")] == seen


def test_probe_no_server() -> None:
    """No answer at all is ok=False with no status, never an exception."""
    result = probe("http://127.0.0.1:9/x", timeout=2)
    assert (None, False) == (result.status, result.ok)


@pytest.mark.parametrize("env,attempts", [("ok", 1), ("flaky", 3), ("truncated", 2)])
def test_download_with_retries(base_url: str, tmp_path: Path, env: str, attempts: int) -> None:
    """Transient 5xx and truncated bodies are retried; the file is complete at the end."""
    sleeps: list[float] = []
    path = download(url_for(base_url, env), tmp_path / "artifacts.zip", retries=3, delay=5,
                    sleep=sleeps.append)
    assert (BODY, [5] * (attempts - 1), attempts) == (
        path.read_bytes(), sleeps, Handler.hits[f"/pytorch/pytorch/7/{env}/artifacts.zip"])


def test_download_404_not_retried(base_url: str, tmp_path: Path) -> None:
    """A 404 fails at once with an ArtifactError naming the URL; no partial file is left."""
    with pytest.raises(ArtifactError, match="HTTP 404"):
        download(url_for(base_url, "gone"), tmp_path / "a.zip", sleep=lambda _s: None)
    assert ([], 1) == (list(tmp_path.iterdir()), Handler.hits["/pytorch/pytorch/7/gone/artifacts.zip"])


@pytest.mark.parametrize("names,expected", [
    (["dist/torch-1-py3-none-any.whl", "dist/tv-1-py3-none-any.whl", "x.txt"],
     ["torch-1-py3-none-any.whl", "tv-1-py3-none-any.whl"]),
    (["torch-1-py3-none-any.whl", "logs/build.log"], ["torch-1-py3-none-any.whl"]),
])
def test_extract_either_layout(tmp_path: Path, names: list[str], expected: list[str]) -> None:
    """Wheels under dist/ or at the root are extracted flat."""
    archive = tmp_path / "a.zip"
    archive.write_bytes(make_zip(names))
    assert expected == [p.name for p in extract_wheels(archive, tmp_path / "wheels")]


@pytest.mark.parametrize("data,blocker", [
    (make_zip(["README.md", "build/x.so"]), BLOCKER_NO_WHEEL_EXTRACTED),
    (BODY[:20], "bad artifact zip"),
], ids=["no-wheel", "truncated"])  # zip bytes hold a timestamp: ids must not (xdist workers)
def test_extract_blockers(tmp_path: Path, data: bytes, blocker: str) -> None:
    """No wheel gives the seed's no_wheel_extracted; a truncated zip is named as such."""
    archive = tmp_path / "a.zip"
    archive.write_bytes(data)
    with pytest.raises(ArtifactError) as info:
        extract_wheels(archive, tmp_path / "wheels")
    assert blocker == info.value.blocker[: len(blocker)]


def test_flatten_wheels(tmp_path: Path) -> None:
    """Wheels in per-artifact sub-folders (gh run download's layout) move up into the dir."""
    (tmp_path / "Torch-XPU-Wheel-1-2-1").mkdir()
    (tmp_path / "Torch-XPU-Wheel-1-2-1" / "torch-1-py3-none-any.whl").write_text("w")
    (tmp_path / "Torch-XPU-Wheel-1-2-1-baseline" / "deep").mkdir(parents=True)
    (tmp_path / "Torch-XPU-Wheel-1-2-1-baseline" / "deep" / "tv-1-py3-none-any.whl").write_text("w")
    assert ["torch-1-py3-none-any.whl", "tv-1-py3-none-any.whl"] == [
        p.name for p in flatten_wheels(tmp_path)]
