"""A batch entry's verdict is its own: it runs at the command line's ``--stage`` unless it
sets its own, and a verdict of an entry that ``cd``s into another project's clone names
that project, that tree and that tree's reinstall (never --source-dir's), on real git trees
and a real venv."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from flow.cli.argv import parse
from flow.cli.campaigns import items_for
from tests import projectenv
from tests.contract.driver import Driver
from tests.reproduce import tinyproject

NODE = "tests/test_add.py::TestAdd::test_add"


def _rows(call: object) -> dict[str, dict]:
    spec = call.spec  # type: ignore[attr-defined]
    assert spec is not None and spec.get("status") == "done", call
    return {r["id"]: r for r in json.loads(Path(spec["report_json_path"]).read_text())["rows"]}


def test_the_command_lines_stage_is_every_entrys_unless_it_sets_its_own(tmp_path: Path) -> None:
    """At a fixed commit where bash passes, ``--stage nightly`` ends every entry that names
    no stage at Stage 1 (NOT_REPRODUCED, checked [nightly]: no source build asked for);
    an entry that says ``"stage": "auto"`` still goes on to the source build."""
    src = tinyproject.make(tmp_path / "src")
    tinyproject.fix(src)
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "plain", "command": f"python -m pytest {NODE}"},
        {"id": "snippet", "command": 'python -c "from tinycalc import add; assert add(1, 2) == 3"'},
    ]))
    drv = Driver(tmp_path / "ws")
    base = ["reproduce", "--profile", "local", "--source-dir", str(src), "--batch", str(batch)]
    rows = _rows(drv.call([*base, "--stage", "nightly"]))
    assert {"plain": ("NOT_REPRODUCED", ["nightly"], "already_fixed"),
            "snippet": ("NOT_REPRODUCED", ["nightly"], "already_fixed")} == {
        k: (r["verdict"]["verdict"], r["verdict"]["checked_stages"], r["bucket"])
        for k, r in rows.items()}, rows

    # one entry asks for auto itself: the batch goes on to build the source for it alone
    batch.write_text(json.dumps([
        {"id": "plain", "command": f"python -m pytest {NODE}"},
        {"id": "mine", "command": f"python -m pytest {NODE}", "stage": "auto"},
    ]))
    call = Driver(tmp_path / "ws2").call([*base, "--stage", "nightly"])
    assert call.spec is not None, call.stderr
    state = json.loads(next((tmp_path / "ws2").rglob("flow_state.json")).read_text())
    data = state["data"]
    assert ("need_agent", "batch_build", ["mine"], {"plain"}) == (
        call.spec["status"], state["phase"], data["batch_to_stage2"],
        set(data["batch_verdicts"])), call.spec
    assert ["nightly"] == data["batch_verdicts"]["plain"]["checked_stages"]


def test_a_campaigns_entries_take_the_command_lines_flags_too(tmp_path: Path) -> None:
    """``reproduce --batch F --campaign N --stage nightly``: each item runs at nightly unless
    its entry says otherwise, as the plain batch does."""
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "a", "command": f"pytest {NODE}"},
        {"id": "b", "command": f"pytest {NODE}", "stage": "auto", "repeat": 2}]))
    args, _ = parse(["reproduce", "--batch", str(batch), "--campaign", "c", "--stage", "nightly",
                     "--repeat", "3", "--source-dir", str(tmp_path)])
    _, items = items_for(args, list(args.args), tmp_path)
    flags = {i: argv["argv"][argv["argv"].index("--source-dir") + 2:] for i, argv in items}
    assert {"a": ["--stage", "nightly", "--repeat", "3"],
            "b": ["--stage", "auto", "--repeat", "2"]} == flags


@pytest.mark.slow
def test_each_entry_is_told_about_its_own_tree(tmp_path: Path) -> None:
    """--source-dir is project A (not installed: imported from the tree); an entry ``cd``s
    into project B's clone, installed non-editable in the project interpreter. B's
    verdict names B (project, version, tree, HEAD) and its rerun_after_fix reinstalls B:
    after a fix committed in B, that rerun and refined_command pass. A's entry keeps A."""
    a = tinyproject.make(tmp_path / "a")
    b = tinyproject.make_named(tmp_path / "b", "othercalc")
    python = projectenv.make(tmp_path / "venv", ["pip"])
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-index",
                    "--no-build-isolation", "--no-deps", str(b)], check=True)
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "in-a", "command": 'python -c "from tinycalc import add; assert add(1, 2) == 3"'},
        {"id": "in-b", "command": f'cd {b} && python -c "from othercalc import add; '
                                  'assert add(1, 2) == 3"'},
    ]))
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_REPRODUCE_PYTHON": str(python)})
    rows = _rows(drv.call(["reproduce", "--profile", "local", "--stage", "nightly",
                           "--source-dir", str(a), "--batch", str(batch)]))

    def told(row: dict) -> tuple:
        v = row["verdict"]
        env = v.get("environment") or {}
        return (v["verdict"], env.get("project"), env.get("project_install"),
                (env.get("tree") or {}).get("path"), v.get("base"))

    reinstall = rows["in-b"]["verdict"].get("rerun_after_fix", "")
    assert (("REPRODUCED", "tinycalc", "not installed", str(a), tinyproject.head(a)),
            ("REPRODUCED", "othercalc", "installed", str(b), tinyproject.head(b)),
            "", True, False) == (
        told(rows["in-a"]), told(rows["in-b"]), rows["in-a"]["verdict"].get("rerun_after_fix"),
        reinstall.endswith(f"--force-reinstall {b}"), str(a) in reinstall), rows

    package = b / "src" / "othercalc" / "__init__.py"
    package.write_text(tinyproject.FIXED)
    fresh = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    rerun = subprocess.run(["bash", "-c", reinstall],
                           env={**fresh, "PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0"},
                           capture_output=True, text=True)
    after = subprocess.run(["bash", "-c", rows["in-b"]["verdict"]["refined_command"]],
                           env=fresh, capture_output=True, text=True)
    assert (0, 0) == (rerun.returncode, after.returncode), (rerun.stderr, after.stderr)
