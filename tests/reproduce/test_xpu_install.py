"""Stage 1's install through the ``pytorch-xpu`` profile, for real: tiny torch /
torchvision / torchaudio wheels on a PEP 503 index served from 127.0.0.1, installed by pip
into a throwaway venv named by ORCHESTRATOR_REPRODUCE_PYTHON, driven through the CLI.

The index plays the seed's race ("the index metadata refreshes before all wheels land"):
at first torchvision has only the previous day's wheel, so ``pip install --upgrade``
leaves a mixed set; the same day's torchvision lands once the old one was downloaded, so
the reinstall together can (``lands=True``) or cannot (``lands=False``) make it one day.
"""
from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import pytest

from tests import projectenv
from tests.contract.driver import Driver
from tests.reproduce.conftest import build_wheel

TORCH = "2.9.0.dev20250102+xpu"
AUDIO = "2.9.0.dev20250102+xpu"
VISION_OLD = "0.24.0.dev20250101+xpu"
VISION_NEW = "0.24.0.dev20250102+xpu"
COMMAND = 'python -c "import torch; print(\'torch\', torch.__version__); raise SystemExit(1)"'
PATTERN = f"torch {TORCH}"


class LateWheelIndex:
    """A simple index on 127.0.0.1 whose listing changes: ``late`` is listed only after
    ``trigger`` (a file name) was downloaded (when ``lands``)."""

    def __init__(self, wheels: list[Path], late: Path, trigger: str, lands: bool) -> None:
        self.files = {w.name: w for w in [*wheels, late]}
        self.listed = {w.name for w in wheels}
        self.late, self.trigger, self.lands = late.name, trigger, lands
        self.downloads: list[str] = []
        index = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                index.serve(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple"

    def serve(self, req: BaseHTTPRequestHandler) -> None:
        path = unquote(req.path.split("?")[0])
        if path.startswith("/simple/"):
            project = path[len("/simple/"):].strip("/")
            links = "".join(f'<a href="/files/{quote(n)}">{n}</a>\n' for n in sorted(self.listed)
                            if n.split("-")[0] == project.replace("-", "_"))
            body, kind = f"<html><body>\n{links}</body></html>".encode(), "text/html"
        elif path.startswith("/files/") and path[len("/files/"):] in self.files:
            name = path[len("/files/"):]
            self.downloads.append(name)
            body, kind = self.files[name].read_bytes(), "application/octet-stream"
            if name == self.trigger and self.lands:
                self.listed.add(self.late)
        else:
            req.send_error(404)
            return
        req.send_response(200)
        req.send_header("Content-Type", kind)
        req.send_header("Content-Length", str(len(body)))
        req.send_header("Cache-Control", "no-store")
        req.end_headers()
        req.wfile.write(body)


def _wheels(folder: Path) -> tuple[list[Path], Path]:
    torch = build_wheel(folder, "torch", TORCH, {
        "torch/version.py": f'__version__ = "{TORCH}"\ngit_version = "{"a" * 40}"\n'})
    return ([torch, build_wheel(folder, "torchvision", VISION_OLD),
             build_wheel(folder, "torchaudio", AUDIO)],
            build_wheel(folder, "torchvision", VISION_NEW))


@pytest.fixture(scope="module")
def venv_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway venv with pip (a copy of this environment's), never the project's .venv."""
    return projectenv.make(tmp_path_factory.mktemp("xpu-venv") / "venv", ["pip"])


@contextmanager
def _index(tmp_path: Path, lands: bool) -> Iterator[LateWheelIndex]:
    wheels, late = _wheels(tmp_path / "wheels")
    index = LateWheelIndex(wheels, late, trigger=wheels[1].name, lands=lands)
    thread = threading.Thread(target=index.server.serve_forever, daemon=True)
    thread.start()
    try:
        yield index
    finally:
        index.server.shutdown()
        index.server.server_close()


def _installed(python: Path) -> dict[str, str]:
    code = ("import json,importlib.metadata as m;"
            "print(json.dumps({p: m.version(p) for p in ('torch','torchvision','torchaudio')}))")
    return json.loads(subprocess.run([str(python), "-c", code], capture_output=True, text=True,
                                     check=True).stdout)


def _env(index_url: str, python: Path) -> dict[str, str]:
    return {"ORCHESTRATOR_REPRODUCE_INDEX_URL": index_url,
            "ORCHESTRATOR_REPRODUCE_PYTHON": str(python),
            "PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_CONFIG_FILE": "/dev/null", "NO_PROXY": "127.0.0.1"}


def _reproduce(drv: Driver) -> dict[str, Any]:
    call = drv.call(["reproduce", "--profile", "pytorch-xpu", "--stage", "nightly",
                     "--command", COMMAND, "--failure-pattern", PATTERN])
    assert call.spec is not None, call.stderr
    return call.spec


def _clean(python: Path) -> None:
    subprocess.run([str(python), "-m", "pip", "uninstall", "-y", "torch", "torchvision",
                    "torchaudio"], capture_output=True, timeout=300)


def test_mixed_set_is_reinstalled_together_and_the_torch_version_recorded(
        tmp_path: Path, venv_python: Path) -> None:
    """A mixed nightly set is uninstalled and reinstalled together into the named venv; the
    verdict's report records the exact torch version and that the set is now one day."""
    _clean(venv_python)
    with _index(tmp_path, lands=True) as index:
        spec = _reproduce(Driver(tmp_path / "ws", _env(index.url, venv_python)))
        assert 2 == index.downloads.count(f"torch-{TORCH}-py3-none-any.whl")
    expected = {"torch": TORCH, "torchvision": VISION_NEW, "torchaudio": AUDIO}
    assert ("done", "REPRODUCED", "nightly") == (spec["status"], spec["outcome"],
                                                 spec["verdict"]["stage"]), spec
    assert expected == spec["report"]["installed_versions"]
    assert expected == _installed(venv_python)
    assert [f"nightly: after install, mixed build days: torch={TORCH}, "
            f"torchvision={VISION_OLD}, torchaudio={AUDIO}; uninstalled and reinstalled "
            f"together: now one build day (torch={TORCH}, torchvision={VISION_NEW}, "
            f"torchaudio={AUDIO})"] == spec["report"]["notes"]


def test_set_still_mixed_after_the_reinstall_cannot_be_verified(
        tmp_path: Path, venv_python: Path) -> None:
    """A set still mixed after the reinstall together is CANNOT_VERIFY(nightly) naming the
    versions, never a run of the reproducer on it."""
    _clean(venv_python)
    with _index(tmp_path, lands=False) as index:
        spec = _reproduce(Driver(tmp_path / "ws", _env(index.url, venv_python)))
    listed = f"torch={TORCH}, torchvision={VISION_OLD}, torchaudio={AUDIO}"
    assert ("done", "CANNOT_VERIFY", "nightly") == (spec["status"], spec["outcome"],
                                                    spec["verdict"]["stage"]), spec
    assert listed in spec["verdict"]["blocker"]
    assert {"torch": TORCH, "torchvision": VISION_OLD, "torchaudio": AUDIO} \
        == spec["report"]["installed_versions"]
    assert spec["report"]["notes"][0].endswith(f"together: still mixed build days: {listed}")


@pytest.mark.parametrize("value", ["/nonexistent/bin/python", "", str(Path(__file__))])
def test_python_that_is_not_an_executable_file_is_refused_at_start(
        tmp_path: Path, value: str) -> None:
    """ORCHESTRATOR_REPRODUCE_PYTHON naming no executable file stops the start with a hint
    and writes no flow."""
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": value})
    call = drv.call(["reproduce", "--profile", "pytorch-xpu", "--stage", "nightly",
                     "--command", COMMAND])
    assert call.spec is not None, call.stderr
    assert ("error", "bad_input") == (call.spec["status"], call.spec["error"]["code"])
    assert f"ORCHESTRATOR_REPRODUCE_PYTHON={value!r} is not an executable file" \
        == call.spec["error"]["message"]
    assert "ORCHESTRATOR_REPRODUCE_PYTHON" in call.spec["error"]["hint"]
    assert not (tmp_path / "ws" / "reproduce").exists()
