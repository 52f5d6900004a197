"""The set-up files and docs/mcp.md lines for each harness name a server that starts and serves."""

from __future__ import annotations

import json
import re
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


@pytest.mark.parametrize("where", [".mcp.json", "plugin.json", "README toml", "README json"])
def test_each_configuration_starts_a_server_with_the_six_tools(where: str, tmp_path: Path) -> None:
    """Each set-up's arguments start orchestrator.py mcp with the six tools."""
    server = _server(where)
    fill = {"${CLAUDE_PLUGIN_ROOT}": str(ROOT), "${CLAUDE_PROJECT_DIR:-.}": str(ROOT),
            "/abs/skill-orchestrator": str(ROOT),
            "/abs/agent_space": str(tmp_path)}
    args = list(server["args"])
    for placeholder, value in fill.items():
        args = [a.replace(placeholder, value) for a in args]
    assert server["command"].endswith(".venv/bin/python")
    assert (Path(args[0]).name, args[1]) == ("orchestrator.py", "mcp")

    async def main() -> set[str]:
        params = StdioServerParameters(command=sys.executable, args=args, cwd=str(ROOT),
                                       env={"PYTHONPATH": str(ROOT),
                                            "ORCHESTRATOR_WORKSPACE": str(tmp_path)})
        # mode="legacy": the initialize handshake today's harnesses speak
        async with Client(params, mode="legacy") as client:
            assert client.protocol_version and client.protocol_version < "2026"
            status = await client.call_tool("status", {})
            assert (False, []) == (status.is_error, status.structured_content["flows"])
            return {t.name for t in (await client.list_tools()).tools}

    assert TOOLS == anyio.run(main)


def test_the_plugin_ships_the_skill_that_says_when_to_prefer_the_tools() -> None:
    """plugin.json's skills folder holds SKILL.md, which has the MCP section."""
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    skill = ROOT / plugin["skills"] / "skill-orchestrator" / "SKILL.md"
    assert "prefer them" in skill.read_text()


def test_the_project_config_names_absolute_paths_and_the_plugin_its_author() -> None:
    """.mcp.json's command and script sit under ${CLAUDE_PROJECT_DIR} (absolute whatever
    directory Claude Code starts in); plugin.json names an author."""
    server = _server(".mcp.json")
    plugin = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    assert (True, True, True) == (server["command"].startswith("${CLAUDE_PROJECT_DIR"),
                                  server["args"][0].startswith("${CLAUDE_PROJECT_DIR"),
                                  bool(plugin["author"]["name"]))
