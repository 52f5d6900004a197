"""Piped, every command prints one JSON object (docs/contract.md): a harness or a script that
reads stdout through a pipe never gets the text a person reads on a terminal.

Each command of ``flow.cli.argv.COMMANDS`` runs as its own process with stdout a pipe, with no
``--json``, on arguments that answer at once without GitHub (an answer or a usage error: both
are the one object). ``serve`` prints its object and then serves, so only its first object is
read; ``mcp`` speaks JSON-RPC, one object a line, on the same pipe.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from flow.cli.argv import COMMANDS
from tests.contract.driver import SCRIPT

CALLS = {  # command -> its arguments after the command word
    "reproduce": [],  # a usage error: no --command
    "refactor": [],
    "ci-check": [],  # no token: github_missing_token
    "affected-tests": ["--base", "HEAD"],
    "ci-targeted": [],
    "review-queue": [],
    "ingest": [],
    "status": [],
    "campaign": ["nightly"],  # no PostgreSQL store: a usage error
    "schema": [],
    "graph": ["reproduce"],
    "demo": ["no-such-demo"],
    "start": ["reproduce"],
}


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("GITHUB_TOKEN", "GH_TOKEN", "ORCHESTRATOR_STORE")}
    return {**env, "ORCHESTRATOR_WORKSPACE": str(tmp_path / "ws")}


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (repo / "a.py").write_text("A = 1\n")
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "a"], check=True)
    return repo


def test_every_command_prints_one_json_object_when_piped(tmp_path: Path) -> None:
    """Each command, help included, answers one parseable JSON object with a status."""
    repo = _repo(tmp_path)
    assert set(COMMANDS) - {"serve", "mcp"} == set(CALLS), "name the new command's call here"
    answers = {}
    for command, rest in [*CALLS.items(), ("--help", []), ("status", ["--help"])]:
        proc = subprocess.run([sys.executable, str(SCRIPT), command, *rest], cwd=repo,
                              capture_output=True, text=True, env=_env(tmp_path), timeout=120)
        answers[(command, *rest)] = json.loads(proc.stdout)["status"]  # one object, or it raises
    assert set(answers.values()) <= {"done", "error", "need_agent", "waiting"}
    assert ("done", "done", "done") == (answers[("status",)], answers[("affected-tests", "--base",
                                        "HEAD")], answers[("--help",)])


def test_serve_and_mcp_speak_json_on_a_pipe(tmp_path: Path) -> None:
    """serve's first output is one JSON object naming its URL; mcp answers initialize with a
    JSON-RPC object."""
    serve = subprocess.Popen([sys.executable, str(SCRIPT), "serve", "--port", "0"],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                             env=_env(tmp_path))
    try:
        text = ""
        while True:  # the object may span lines: read until it parses
            line = serve.stdout.readline()
            assert line, f"serve ended before printing its object: {text!r}"
            text += line
            try:
                first = json.loads(text)
                break
            except json.JSONDecodeError:
                continue
        assert first["url"].startswith("http://127.0.0.1:")
    finally:
        serve.terminate()
        serve.wait(timeout=60)
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "pipe-test", "version": "0"}}}
    mcp = subprocess.run([sys.executable, str(SCRIPT), "mcp"], input=json.dumps(init) + "\n",
                         capture_output=True, text=True, env=_env(tmp_path), timeout=120)
    [reply] = [json.loads(line) for line in mcp.stdout.splitlines() if line.strip()]
    assert (1, True) == (reply["id"], "serverInfo" in reply["result"])
