"""The SDK's own client starting ``orchestrator.py mcp`` over stdio, with small helpers.

A test writes its scenario as ``async def body(mcp: Mcp)`` and runs it with ``drive``; every
call goes over a real stdio pipe to a real server process.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests import forkserver

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "orchestrator.py"
CALC = ROOT / "examples" / "calc"
FAILING = "pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"
PASSING = "pytest tests/test_calc.py::test_add"


def reproduce_args(command: str, **extra: Any) -> dict[str, Any]:
    """The README's main command as start arguments (local profile, the bundled example)."""
    return {"workflow": "reproduce", "profile": "local", "source_dir": str(CALC),
            "command": command, **extra}


@dataclass
class Mcp:
    """A connected client; ``call`` returns (structured object, is_error)."""

    client: Client
    workspace: Path
    progress: list[tuple[float, float | None, str | None]] = field(default_factory=list)

    async def call(self, tool: str, args: dict[str, Any] | None = None, *,
                   track: bool = False) -> tuple[dict[str, Any], bool]:
        async def on_progress(done: float, total: float | None, message: str | None) -> None:
            self.progress.append((done, total, message))

        result = await self.client.call_tool(tool, args or {},
                                             progress_callback=on_progress if track else None)
        spec = result.structured_content
        assert isinstance(spec, dict), result
        assert json.loads(result.content[0].text) == spec  # the same object as text
        return spec, result.is_error

    async def ok(self, tool: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
        spec, failed = await self.call(tool, args)
        assert not failed, spec
        return spec

    async def read(self, uri: str) -> str:
        got = await self.client.read_resource(uri)
        return str(got.contents[0].text)  # type: ignore[union-attr]


def params(workspace: Path, env: dict[str, str] | None = None,
           *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=[str(SCRIPT), "mcp", "--workspace", str(workspace), *extra],
        env={"PYTHONPATH": str(ROOT), **(env or {})}, cwd=str(ROOT))


def drive(workspace: Path, body: Callable[[Mcp], Awaitable[None]],
          env: dict[str, str] | None = None, *extra: str) -> None:
    """Start a server on ``workspace``, run ``body`` against it, stop the server."""
    async def main() -> None:
        async with Client(params(workspace, env, *extra), read_timeout_seconds=300) as client:
            await body(Mcp(client, workspace))

    anyio.run(main)


def cli(workspace: Path, *argv: str,
        env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
    """The same flow through the command line (from another directory)."""
    import os

    proc = subprocess.run([forkserver.python("orchestrator"), str(SCRIPT), "--workspace",
                           str(workspace), *argv], capture_output=True, text=True, cwd="/",
                          timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})
    return proc.returncode, json.loads(proc.stdout)


def shell(command: str) -> tuple[int, dict[str, Any]]:
    """Run a command exactly as a spec printed it, from another directory."""
    import os

    proc = subprocess.run(command, shell=True, capture_output=True, text=True, cwd="/",
                          timeout=300, env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc.returncode, json.loads(proc.stdout)


def run_task(task: dict[str, Any]) -> dict[str, Any]:
    """Do a ``run`` task as a harness would: its argv in its cwd, output to its log_file."""
    with open(task["log_file"], "wb") as log:
        code = subprocess.run(task["argv"], cwd=task["cwd"], stdout=log, stderr=subprocess.STDOUT,
                              timeout=600).returncode
    return {"exit_code": code, "log_path": task["log_file"]}


def state_bytes(workspace: Path, flow_id: str) -> bytes:
    return (workspace / flow_id / "flow_state.json").read_bytes()
