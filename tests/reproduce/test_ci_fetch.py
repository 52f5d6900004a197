"""Stage 3 Path B end to end: the run found on the fake GitHub, each build_env's S3 artifact
probed with a one-byte range GET on a real 127.0.0.1 server, downloaded and unzipped."""
from __future__ import annotations

import io
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterator

import pytest

from flow.workflows.reproduce.profiles import load_profile
from flow.workflows.reproduce.stage3.fetch import ARTIFACT_URL_ENV, CiWheels, fetch
from flow.workflows.reproduce.stage3.rules import CiRepo
from flow.workflows.reproduce.verdict.models import CannotVerify
from tests.fakegithub import FakeGitHub

NOBLE, JAMMY = "linux-noble-xpu-n-py3.10", "linux-jammy-xpu-n-1-py3.10"
WHEEL = "torch-2.9.0-cp310-cp310-linux_x86_64.whl"


def _zip(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name in names:
            zf.writestr(name, f"content of {name}")
    return buf.getvalue()


class S3(BaseHTTPRequestHandler):
    """Serves ``S3.files`` by path (206 for a one-byte range), 404 otherwise; logs requests."""

    files: dict[str, bytes] = {}
    seen: list[tuple[str, str | None]] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        S3.seen.append((self.path, self.headers.get("Range")))
        body = S3.files.get(self.path)
        if body is None:
            status, body = 404, b"NoSuchKey"
        elif self.headers.get("Range") == "bytes=0-0":
            status, body = 206, body[:1]
        else:
            status = 200
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def s3() -> Iterator[str]:
    """The artifact host on 127.0.0.1 (its base URL is ORCHESTRATOR_REPRODUCE_ARTIFACT_URL)."""
    S3.files, S3.seen = {}, []
    server = ThreadingHTTPServer(("127.0.0.1", 0), S3)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _run(fake: FakeGitHub, builds: list[str]) -> int:
    """A completed xpu run with ``builds`` (a leading ``!`` marks a failed build) and a
    test job whose log sets a CI env var."""
    repo = fake.repo("pytorch/pytorch")
    run = repo.add_run(repo.add_workflow("xpu", ".github/workflows/xpu.yml"), "d" * 40,
                       head_branch="main", event="schedule", status="completed",
                       conclusion="success", jobs=[(f"{b.lstrip('!')} / build", "failure" if b[0] == "!" else "success")
                             for b in builds])
    repo.add_job(run, f"{NOBLE} / test (default, 1, 1)", "failure",
                 log="env:\n  PYTORCH_TEST_WITH_SLOW: 1\n")
    return run.id


@pytest.mark.parametrize("builds, served, expected", [
    ([NOBLE, JAMMY], {NOBLE: [f"dist/{WHEEL}"]},
     {"path": "B", "wheels": [WHEEL], "probe_404": [JAMMY], "image": "noble"}),
    ([NOBLE], {NOBLE: [WHEEL]}, {"path": "B", "wheels": [WHEEL], "probe_404": [], "image": "noble"}),
    ([NOBLE], {NOBLE: ["logs/build.log"]}, {"blocker": "no_wheel_extracted"}),
    ([NOBLE, JAMMY], {}, {"blocker": "no artifact of run"}),
    ([NOBLE, "linux-new-xpu-py3.12"], {NOBLE: [f"dist/{WHEEL}"]},
     {"blocker": "unknown_build_env=linux-new-xpu-py3.12"}),
    ([NOBLE, f"!{JAMMY}"], {NOBLE: [WHEEL]}, {"blocker": "no_recent_successful_xpu_workflow_run"}),
], ids=["second-env", "root-layout", "no-wheel", "nothing-served", "unknown-env", "no-run"])
def test_path_b(fake_github: FakeGitHub, s3: str, tmp_path: Path, builds: list[str],
                served: dict[str, list[str]], expected: dict[str, Any]) -> None:
    """Path B takes the newest run whose builds all passed, probes each PVC build_env in
    sorted order (a 404 is a note, the next env is tried), unzips dist/*.whl or root *.whl;
    every dead end is a CANNOT_VERIFY blocker, never an exception."""
    run_id = _run(fake_github, builds)
    for env, names in served.items():
        S3.files[f"/pytorch/pytorch/{run_id}/{env}/artifacts.zip"] = _zip(names)
    profile = load_profile("pytorch-xpu", {"ci_env.download_retries": 0})
    settings = {"ORCHESTRATOR_GITHUB_API": fake_github.base_url, "GITHUB_TOKEN": fake_github.token,
                ARTIFACT_URL_ENV: s3}
    got = fetch(profile, [CiRepo.PYTORCH], None, settings, tmp_path / "ci_env" / "wheels")
    if "blocker" in expected:
        assert (CannotVerify, "ci_env", True) == (
            type(got), got.stage, got.blocker.startswith(expected["blocker"])), got
        return
    assert isinstance(got, CiWheels), got
    probes = [p for p, r in S3.seen if r == "bytes=0-0"]
    assert ({"path": "B", "wheels": [WHEEL], "probe_404": expected["probe_404"], "image": "noble"},
            run_id, "d" * 40, [str(tmp_path / "ci_env" / "wheels" / WHEEL)],
            [f"/pytorch/pytorch/{run_id}/{e}/artifacts.zip" for e in sorted([NOBLE, JAMMY][:len(builds)])],
            True) == (
        {"path": got.path, "wheels": [Path(w).name for w in got.wheels],
         "probe_404": [e for e in (JAMMY, NOBLE) if any(n.startswith(f"{e}: probe 404") for n in got.notes)],
         "image": "noble" if "noble" in (got.image or "") else got.image},
        got.run_id, got.head_sha, got.wheels, probes, "PYTORCH_TEST_WITH_SLOW" in got.job_log)
