#!/usr/bin/env python3
"""Feed latency: the ``feed`` tool of a warm MCP server vs the CLI's ``--feed``.

Both apply one real result (validated, saved, audited, the spec re-rendered) to a fresh flow of
the contract suite's toy workflow (``tests/contract/toyflow.py``, a two-task wave, so each feed
applies one task and answers ``waiting``). The CLI is timed as a whole process (interpreter
start included: that is what a harness pays per shell call; the harness also writes the feed
file first, which is not timed). The MCP feed is timed from the client's call to its answer
over stdio, the server started once before (it writes the feed file itself). Each flow is
started by the CLI, untimed. ``resume`` of a waiting flow is measured the same way (the CLI
takes its cached-spec fast path there; the server always takes the full path).

Usage: python bench/mcp_latency.py [--runs 20]   (prints one JSON object)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "orchestrator.py"
RESULT = {"ok": True, "value": 1}


def _cli(ws: Path, env: dict[str, str], *argv: str) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, str(SCRIPT), "--workspace", str(ws), *argv],
                          capture_output=True, text=True, env=env, check=True)
    return dict(json.loads(proc.stdout))


def _timed_cli(ws: Path, env: dict[str, str], *argv: str) -> float:
    t = time.perf_counter()
    _cli(ws, env, *argv)
    return time.perf_counter() - t


def _summary(times: list[float]) -> dict[str, float]:
    ordered = sorted(times)
    return {"median_s": round(statistics.median(ordered), 4),
            "p90_s": round(ordered[int(0.9 * (len(ordered) - 1))], 4),
            "min_s": round(ordered[0], 4)}


async def _mcp_runs(ws: Path, env: dict[str, str], runs: int) -> dict[str, list[float]]:
    params = StdioServerParameters(command=sys.executable,
                                   args=[str(SCRIPT), "mcp", "--workspace", str(ws)],
                                   env=env, cwd=str(ROOT))
    feeds, resumes = [], []
    async with Client(params) as client:
        await client.call_tool("status", {})  # warm: imports done, tool list fetched
        for i in range(runs):
            spec = _cli(ws, env, "start", "toy", f"mcp{i}")
            args = {"flow_id": spec["flow_id"], "task_id": spec["tasks"][0]["task_id"],
                    "result": RESULT}
            t = time.perf_counter()
            got = await client.call_tool("feed", args)
            feeds.append(time.perf_counter() - t)
            assert not got.is_error and got.structured_content["status"] == "waiting", got
            t = time.perf_counter()
            got = await client.call_tool("resume", {"flow_id": spec["flow_id"]})
            resumes.append(time.perf_counter() - t)
            assert not got.is_error, got
    return {"feed": feeds, "resume": resumes}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=20)
    runs = parser.parse_args().runs
    env = {**os.environ, "ORCHESTRATOR_PLUGINS": "tests.contract.toyflow",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp)
        cli_feeds, cli_resumes = [], []
        for i in range(runs):
            spec = _cli(ws, env, "start", "toy", f"cli{i}")
            task = spec["tasks"][0]
            Path(task["feed_file"]).write_text(json.dumps(RESULT))
            cli_feeds.append(_timed_cli(ws, env, "--flow", spec["flow_id"], "--feed", "coder",
                                        "--feed-file", task["feed_file"]))
            cli_resumes.append(_timed_cli(ws, env, "--flow", spec["flow_id"], "--resume"))
        mcp = anyio.run(_mcp_runs, ws, env, runs)
    cli_feed, mcp_feed = _summary(cli_feeds), _summary(mcp["feed"])
    print(json.dumps({
        "runs": runs,
        "cli_feed": cli_feed, "mcp_feed": mcp_feed,
        "feed_speedup": round(cli_feed["median_s"] / mcp_feed["median_s"], 1),
        "cli_resume": _summary(cli_resumes), "mcp_resume": _summary(mcp["resume"]),
    }, indent=2))


if __name__ == "__main__":
    main()
