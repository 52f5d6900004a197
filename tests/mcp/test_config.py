"""The set-up files and docs/mcp.md lines for each harness name a server that starts and serves:
from the checkout's root and from a folder below it, where Claude Code finds the project's
``.mcp.json`` too."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from tests.mcp.client import ROOT

TOOLS = {"start", "resume", "feed", "answer", "status", "schema"}


def _readme_block(lang: str) -> str:
    section = (ROOT / "docs" / "mcp.md").read_text()
    [block] = re.findall(rf"```{lang}\n(.*?)```", section, re.S)
    return str(block)


def _server(where: str) -> dict[str, Any]:
    if where == "README toml":
        tomllib = pytest.importorskip("tomllib")  # Python 3.11+
        return dict(tomllib.loads(_readme_block("toml"))["mcp_servers"]["skill-orchestrator"])
    text = {".mcp.json": (ROOT / ".mcp.json").read_text(),
            "plugin.json": (ROOT / ".claude-plugin" / "plugin.json").read_text(),
            "README json": _readme_block("json")}[where]
    return dict(json.loads(text)["mcpServers"]["skill-orchestrator"])


def _tools(command: str, args: list[str], cwd: Path, env: dict[str, str]) -> set[str]:
    """The tools of the server that ``command args`` starts in ``cwd``; ``status`` answers."""
    async def main() -> set[str]:
        params = StdioServerParameters(command=command, args=args, cwd=str(cwd), env=env)
        # mode="legacy": the initialize handshake today's harnesses speak
        async with Client(params, mode="legacy") as client:
            assert client.protocol_version and client.protocol_version < "2026"
            status = await client.call_tool("status", {})
            assert (False, []) == (status.is_error, status.structured_content["flows"])
            return {t.name for t in (await client.list_tools()).tools}

    return anyio.run(main)


@pytest.mark.parametrize("where", ["plugin.json", "README toml", "README json"])
def test_each_configuration_starts_a_server_with_the_six_tools(where: str, tmp_path: Path) -> None:
    """Each set-up's arguments start orchestrator.py mcp with the six tools."""
    server = _server(where)
    fill = {"${CLAUDE_PLUGIN_ROOT}": str(ROOT), "/abs/skill-orchestrator": str(ROOT),
            "/abs/agent_space": str(tmp_path)}
    args = list(server["args"])
    for placeholder, value in fill.items():
        args = [a.replace(placeholder, value) for a in args]
    assert server["command"].endswith(".venv/bin/python")
    assert (Path(args[0]).name, args[1]) == ("orchestrator.py", "mcp")
    env = {"PYTHONPATH": str(ROOT), "ORCHESTRATOR_WORKSPACE": str(tmp_path)}
    assert TOOLS == _tools(sys.executable, args, ROOT, env)


def _venv_python() -> Path:
    python = ROOT / ".venv" / "bin" / "python"
    if not python.exists():
        pytest.skip(f".mcp.json starts {python}, which this checkout has not built (the "
                    "README's commands build it)")
    return python


@pytest.mark.parametrize("cwd", [".", "tests/mcp"])
def test_the_project_config_starts_the_server_from_the_root_and_below_it(
        cwd: str, tmp_path: Path) -> None:
    """.mcp.json as Claude Code starts it outside a session (``claude mcp list``): no
    ``CLAUDE_PROJECT_DIR``, the folder Claude Code was started in; the server's workspace is
    the root's ``agent_space`` unless ``ORCHESTRATOR_WORKSPACE`` says otherwise."""
    _venv_python()
    server = _server(".mcp.json")
    assert "${" not in json.dumps(server)  # nothing for Claude Code to expand: sh decides
    env = {"PATH": "/usr/bin:/bin", "ORCHESTRATOR_WORKSPACE": str(tmp_path)}
    assert TOOLS == _tools(server["command"], server["args"], ROOT / cwd, env)


def _claude(tmp_path: Path) -> tuple[str, dict[str, str]]:
    """Claude Code, with a HOME of its own that approves the project's MCP servers."""
    claude = shutil.which("claude")
    if claude is None:
        pytest.skip("Claude Code is not installed (npm install -g @anthropic-ai/claude-code): "
                    "`claude mcp list` cannot run here")
    _venv_python()
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "settings.json").write_text('{"enableAllProjectMcpServers": true}')
    return claude, {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
                    "ORCHESTRATOR_WORKSPACE": str(tmp_path / "ws")}


def _listed(claude: str, cwd: Path, env: dict[str, str]) -> dict[str, str]:
    """``claude mcp list`` in ``cwd``: each server's name and its last word (Connected...)."""
    out = subprocess.run([claude, "mcp", "list"], cwd=cwd, capture_output=True, text=True,
                         env=env, timeout=180).stdout
    return {line.split(":", 1)[0]: line.rsplit(" ", 1)[-1] for line in out.splitlines()
            if ": " in line}


def test_claude_mcp_list_connects_from_a_subfolder_and_the_user_line_adds_its_own_name(
        tmp_path: Path) -> None:
    """Real Claude Code: the project's server connects from ``tests/mcp``; docs/mcp.md's
    ``claude mcp add`` line, run in that subfolder, adds a user server that connects from
    another directory and does not take the project server's name."""
    claude, env = _claude(tmp_path)
    assert {"skill-orchestrator": "Connected"} == _listed(claude, ROOT / "tests" / "mcp", env)
    [block] = re.findall(r"```bash\n(.*?)```", (ROOT / "docs" / "mcp.md").read_text(), re.S)
    [add] = [line for line in block.splitlines() if "claude mcp add" in line]
    done = subprocess.run(["bash", "-c", add], cwd=ROOT / "tests" / "mcp", env=env,
                          capture_output=True, text=True, timeout=180)
    assert 0 == done.returncode, done.stdout + done.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert {"orchestrator": "Connected"} == _listed(claude, elsewhere, env)
    assert {"skill-orchestrator": "Connected", "orchestrator": "Connected"} == _listed(
        claude, ROOT / "tests" / "mcp", env)


def test_the_plugin_ships_the_skill_that_says_when_to_prefer_the_tools() -> None:
    """plugin.json's skills folder holds SKILL.md, which has the MCP section."""
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    skill = ROOT / plugin["skills"] / "skill-orchestrator" / "SKILL.md"
    assert "prefer them" in skill.read_text()


def test_the_plugin_names_its_author() -> None:
    """plugin.json names an author (Claude Code's validator warns without one)."""
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert plugin["author"]["name"]
