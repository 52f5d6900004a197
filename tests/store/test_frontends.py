"""The MCP server and the dashboard (``serve``) work on the store ``--store`` /
``ORCHESTRATOR_STORE`` names: a real PostgreSQL server, flows run from another workspace
(another machine, as far as they can tell), the real stdio MCP server and the real web
server as child processes."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

from tests.contract.driver import Driver
from tests.contract.scenarios import REPRODUCE, TOY
from tests.mcp.client import Mcp, drive
from tests.web.workspace import serving


def _machine_a(tmp_path: Path, url: str) -> tuple[dict[str, str], str, dict]:
    """On workspace A: a reproduce flow run to its verdict, a toy flow waiting on a task."""
    env = {**TOY.env, "ORCHESTRATOR_STORE": url}
    a = Driver(tmp_path / "A", env)
    ended = a.run(REPRODUCE)[-1]
    assert "done" == ended["status"], ended
    toy = a.call(TOY.start).spec
    while toy["status"] not in {"need_agent", "waiting"}:
        toy = a.step(toy, TOY).spec
    return env, ended["flow_id"], toy


def test_the_mcp_server_lists_feeds_and_reads_flows_in_the_store_it_is_given(
        tmp_path: Path, pg_url: str) -> None:
    """``mcp --store URL`` on an empty workspace B: status lists A's flows, a feed applies
    to A's waiting flow, and the verdict and audit trail are read from the database."""
    env, repro, toy = _machine_a(tmp_path, pg_url)
    verdict = (tmp_path / "A" / repro / "verdict.json").read_text()
    task = toy["tasks"][0]

    async def body(mcp: Mcp) -> None:
        listed = await mcp.ok("status")
        assert {repro, "toy/alpha"} == {f["flow_id"] for f in listed["flows"]}
        fed = await mcp.ok("feed", {"flow_id": "toy/alpha", "task_id": task["task_id"],
                                    "result": TOY.answer(task)})
        assert fed["status"] in {"need_agent", "waiting"}
        assert str(tmp_path / "B") in json.dumps(fed) and str(tmp_path / "A") not in \
            json.dumps(fed)
        uris = [str(r.uri) for r in (await mcp.client.list_resources()).resources]
        assert f"orchestrator://flow/{repro}/verdict.json" in uris
        assert verdict == await mcp.read(f"orchestrator://flow/{repro}/verdict.json")
        audit = await mcp.read("orchestrator://flow/toy/alpha/audit.jsonl")
        assert "fed" in [json.loads(line)["event"] for line in audit.splitlines()]

    drive(tmp_path / "B", body, {"ORCHESTRATOR_PLUGINS": TOY.env["ORCHESTRATOR_PLUGINS"]},
          "--store", pg_url)


def test_the_mcp_server_refuses_a_store_url_with_a_password(tmp_path: Path) -> None:
    """A bad ``--store`` stops the server at once with one JSON error, no traceback."""
    import subprocess
    import sys

    from tests.mcp.client import ROOT, SCRIPT

    proc = subprocess.run([sys.executable, str(SCRIPT), "mcp", "--workspace", str(tmp_path),
                           "--store", "postgresql://u:secret@h/db"], capture_output=True,
                          text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL)
    err = json.loads(proc.stderr.strip().splitlines()[-1])
    assert (2, "bad_store") == (proc.returncode, err["error"]["code"])
    assert "secret" not in proc.stderr and "Traceback" not in proc.stderr


def test_the_dashboard_shows_the_flows_and_verdict_of_the_store(
        tmp_path: Path, pg_url: str) -> None:
    """``serve`` with ORCHESTRATOR_STORE on workspace B lists A's flows and shows A's verdict
    (read from the database) on the flow's page; the printed object names the store."""
    env, repro, _ = _machine_a(tmp_path, pg_url)
    verdict = json.loads((tmp_path / "A" / repro / "verdict.json").read_text())["verdict"]
    (tmp_path / "B").mkdir()
    with serving(tmp_path / "B", **env) as (url, printed):
        assert pg_url == printed["store"]
        index = urllib.request.urlopen(url, timeout=30).read().decode()
        assert repro in index and "toy/alpha" in index
        page = urllib.request.urlopen(f"{url}flow/{repro}", timeout=30).read().decode()
        assert re.search(rf'<span id="verdict">{re.escape(verdict)}</span>', page), page[:2000]
        toy = urllib.request.urlopen(f"{url}flow/toy/alpha", timeout=30).read().decode()
        feed_file = str(tmp_path / "B" / "toy/alpha/feeds/work-v1-left-a1.json")
        assert f"feed file <code>{feed_file}</code>" in toy
        command = re.search(r'<pre id="feed-1">([^<]*)</pre>', toy)
        assert command is not None
        assert f"--store {pg_url}" in command[1] and feed_file in command[1]
