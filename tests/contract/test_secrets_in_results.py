"""An agent's result that quotes a secret (a token shape, the value of a secret setting) is
masked on the way in, before the state, the audit log or any file is written, and every way
out masks what a flow's files hold: ``status`` (CLI and the MCP tool) and MCP
``resources/read``, as the dashboard does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.contract.inproc import TOY_PLUGIN, call, feed, start_toy
from tests.mcp.client import Mcp, drive

VALUE = "s3cr3t-v4lue-of-the-service"
SHAPE = "ghp_" + "A1b2C3d4E5" * 4


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    settings = {"ORCHESTRATOR_PLUGINS": TOY_PLUGIN, "MY_SERVICE_TOKEN": VALUE}
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    return settings


def _everything(ws: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in ws.rglob("*") if p.is_file())


def test_a_fed_result_quoting_secrets_is_stored_masked(tmp_path: Path,
                                                       env: dict[str, str]) -> None:
    """The state, the audit log and every file of the flow hold ``***`` instead."""
    ws = tmp_path / "ws"
    spec = start_toy(ws)
    task = spec["tasks"][0]
    result = {"ok": True, "value": 1, "agent_id": f"agent {SHAPE}",
              "agent_name": f"saw {VALUE} in the log"}
    code, out = feed(ws, spec, task, json.dumps(result))
    feed_file = Path(task["feed_file"])
    feed_file.unlink()  # the harness's own file; what the flow keeps is checked below
    assert 0 == code, out
    state = json.loads((ws / spec["flow_id"] / "flow_state.json").read_text())
    stored = [t["result"] for t in state["tasks"] if t["task_id"] == task["task_id"]][0]
    assert ("agent ***", "saw *** in the log") == (stored["agent_id"], stored["agent_name"])
    assert VALUE not in _everything(ws) and SHAPE not in _everything(ws)


def _plant(ws: Path, flow_id: str) -> None:
    """What an older run left: an error and a report that quote the secrets."""
    folder = ws / flow_id
    (folder / ".last_error.json").write_text(json.dumps(
        {"code": "x", "message": f"the agent said {VALUE} and {SHAPE}"}))
    (folder / "report.md").write_text(f"# report\nthe token was {SHAPE}, the value {VALUE}\n")


def test_status_masks_what_the_flows_files_hold(tmp_path: Path, env: dict[str, str]) -> None:
    """``status --json`` shows the last error with the secrets masked."""
    ws = tmp_path / "ws"
    spec = start_toy(ws)
    _plant(ws, spec["flow_id"])
    code, out = call(["--workspace", str(ws), "status", "--json"])
    assert 0 == code
    row = out["flows"][0]
    assert "x: the agent said *** and ***" == row["last_error"]
    assert VALUE not in json.dumps(out) and SHAPE not in json.dumps(out)


def test_the_mcp_server_masks_status_and_resources(tmp_path: Path,
                                                    env: dict[str, str]) -> None:
    """The MCP ``status`` tool and ``resources/read`` of a report mask them too."""
    ws = tmp_path / "ws"
    spec = start_toy(ws)
    _plant(ws, spec["flow_id"])
    seen: list[str] = []

    async def body(mcp: Mcp) -> None:
        seen.append(json.dumps(await mcp.ok("status")))
        seen.append(await mcp.read(f"orchestrator://flow/{spec['flow_id']}/report.md"))

    drive(ws, body, env)
    assert "the token was ***, the value ***" in seen[1]
    assert "the agent said *** and ***" in seen[0]
    assert not any(VALUE in s or SHAPE in s for s in seen)
