"""Calling ``orchestrator.main`` in this process (fast), capturing the one JSON object."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import orchestrator

TOY_PLUGIN = "tests.contract.toyflow"


def call(argv: list[str]) -> tuple[int, dict[str, Any]]:
    """Run one CLI call; returns its exit code and the JSON object it printed."""
    out = io.BytesIO()
    real = sys.stdout
    wrapper = io.TextIOWrapper(out, encoding="utf-8")
    sys.stdout = wrapper
    try:
        code = orchestrator.main(argv)
    finally:
        wrapper.flush()
        data = out.getvalue()
        wrapper.detach()
        sys.stdout = real
    return code, json.loads(data)


def start_toy(ws: Path, name: str = "hard") -> dict[str, Any]:
    """Start the toy flow (needs ORCHESTRATOR_PLUGINS set) and return its first spec."""
    code, spec = call(["--workspace", str(ws), "start", "toy", name])
    assert 0 == code, spec
    return spec


def feed(ws: Path, spec: dict[str, Any], task: dict[str, Any], content: str | bytes | None,
         feed_file: str | None = None) -> tuple[int, dict[str, Any]]:
    """Write ``content`` to the task's feed file (unless None) and feed it."""
    path = Path(feed_file or task["feed_file"])
    if content is not None:
        path.write_bytes(content.encode() if isinstance(content, str) else content)
    return call(["--workspace", str(ws), "--flow", spec["flow_id"], "--feed",
                 task["feed_as"], "--feed-file", str(path)])
