"""A result fed from another file naming a task's ``task_id`` (another harness, the MCP
server) on both stores: it is applied, but a feed file the harness already wrote its own
result into is never replaced, so the harness's own ``feed_command`` is refused
(``already_applied``, exit 2) instead of reading the rival's result back and passing as a
harmless re-feed. Where the harness wrote nothing yet, the rival's result is left in the
task's feed file, the trail of a file feed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.contract.driver import Driver
from tests.contract.scenarios import TOY


def test_a_rival_feed_never_replaces_the_harness_s_feed_file(tmp_path: Path,
                                                              store: Any) -> None:
    ws = tmp_path / "ws"
    drv = Driver(ws, {**store.env(ws), **TOY.env})
    spec = drv.call(TOY.start).spec
    assert spec is not None and "need_agent" == spec["status"], spec
    mine, other = spec["tasks"][0], spec["tasks"][1]
    own = {**TOY.answer(mine), "agent_id": "/root/the-harness"}
    Path(mine["feed_file"]).write_text(json.dumps(own))
    written = Path(mine["feed_file"]).read_bytes()
    rival = tmp_path / "rival.json"
    rival.write_text(json.dumps({**TOY.answer(mine), "agent_id": "/root/a-rival",
                                 "task_id": mine["task_id"]}))
    took = drv.call(["--flow", spec["flow_id"], "--feed", mine["feed_as"], "--feed-file",
                     str(rival)])
    assert 0 == took.code, took.spec
    assert written == Path(mine["feed_file"]).read_bytes()  # the harness's own, untouched
    late = drv.shell(mine["feed_command"])
    assert (2, "already_applied") == (late.code, late.spec["error"]["code"]), late.spec
    assert mine["task_id"] == late.spec["error"]["task_id"]
    state = json.loads(store.state_bytes(ws, spec["flow_id"]))
    [task] = [t for t in state["tasks"] if t["task_id"] == mine["task_id"]]
    assert ("applied", "/root/a-rival") == (task["status"], task["result"]["agent_id"])
    # no file of the harness's yet: the rival's result becomes the task's feed file
    assert not Path(other["feed_file"]).exists()
    rival.write_text(json.dumps({**TOY.answer(other), "task_id": other["task_id"]}))
    assert 0 == drv.call(["--flow", spec["flow_id"], "--feed", other["feed_as"],
                          "--feed-file", str(rival)]).code
    trail = json.loads(Path(other["feed_file"]).read_text())
    assert TOY.answer(other) == {k: v for k, v in trail.items() if k != "task_id"}
    again = drv.shell(other["feed_command"])  # the same result again: a harmless re-feed
    assert 0 == again.code, again.spec
