"""Only ``orchestrator.py mcp`` imports the mcp SDK; every other call stays as fast as before."""

from __future__ import annotations

import json
from pathlib import Path

from tests.contract.driver import Driver, modules_after as _modules_after

TOY = {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow"}


def test_resume_feed_status_and_schema_do_not_import_mcp(tmp_path: Path) -> None:
    """--resume (full path), --feed, status and schema never import mcp, anyio or flow.mcp."""
    drv = Driver(tmp_path, TOY)
    spec = drv.call(["start", "toy", "fast"]).spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps({"ok": True, "value": 1}))
    (Path(spec["workspace"]) / ".last_spec.json").unlink()
    base = ["--workspace", str(tmp_path)]
    for argv in ([*base, "--flow", "toy/fast", "--resume"],
                 [*base, "--flow", "toy/fast", "--feed", "coder", "--feed-file", task["feed_file"]],
                 [*base, "status", "--json"], [*base, "schema", "spec"]):
        mods = _modules_after(argv, drv.env)
        assert "orchestrator" in mods
        assert not {m for m in mods if m.split(".")[0] in {"mcp", "mcp_types", "anyio"}
                    or m.startswith("flow.mcp")}, argv
