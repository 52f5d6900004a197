"""A batch entry that ``cd``s into another git tree is credited with that tree's commit
(``environment.tree`` and ``base``), not with --source-dir's; an entry run in --source-dir
keeps its HEAD."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.contract.driver import Driver
from tests.reproduce import tinyproject


def test_an_entry_that_cds_into_another_tree_names_that_tree(tmp_path: Path) -> None:
    src = tinyproject.make(tmp_path / "src")
    other = tmp_path / "other-clone"
    subprocess.run(["git", "clone", "-q", str(src), str(other)], check=True,
                   env=tinyproject.git_env(tmp_path))
    (other / "NOTES.txt").write_text("a commit only the clone has\n")
    subprocess.run(["git", "-C", str(other), "add", "-A"], check=True,
                   env=tinyproject.git_env(tmp_path))
    subprocess.run(["git", "-C", str(other), "commit", "-qm", "clone only"], check=True,
                   env=tinyproject.git_env(tmp_path))
    node = "tests/test_add.py::TestAdd::test_add"
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "here", "stage": "nightly", "command": f"pytest {node}"},
        {"id": "there", "stage": "nightly", "command": f"cd {other} && python -m pytest {node}"},
    ]))
    call = Driver(tmp_path / "ws").call(["reproduce", "--profile", "local", "--source-dir",
                                          str(src), "--batch", str(batch)])
    assert call.spec is not None, call.stderr
    rows = {r["id"]: r["verdict"] for r in
            json.loads(Path(call.spec["report_json_path"]).read_text())["rows"]}

    def credited(row: dict) -> tuple:
        tree = (row.get("environment") or {}).get("tree") or {}
        return row["verdict"], row.get("base"), tree.get("head"), tree.get("path")

    src_head, other_head = tinyproject.head(src), tinyproject.head(other)
    assert ((("REPRODUCED", src_head, src_head, str(src)),
             ("REPRODUCED", other_head, other_head, str(other)))) == (
        credited(rows["here"]), credited(rows["there"])), rows
