"""Which flow a start command means: the checkout and the file's content are part of it, and
a flow that changed nothing leaves its checkout as it found it (seed "Resuming After
Interruption", phase 7)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.contract.driver import InProcess, Scenario
from tests.refactor.conftest import FIXTURES, needs_hw_classification
from tests.refactor.test_hw_workflow import DONE_REPORT as REPORT, _answer

HW = FIXTURES / "hw"
LISTED = ["test/test_aaa_other.py", "test/test_done.py", "test/test_zzz_other.py"]


def _checkout(where: Path) -> Path:
    """A git checkout with the fixture TEST_LINTER, an allowlist naming test/test_done.py, and
    that file already migrated: a refactor has nothing to change in it."""
    (where / "test").mkdir(parents=True)
    shutil.copytree(HW / "checkout" / "tools", where / "tools")
    (where / "tools/linter/adapters/test_linter_allowlist.json").write_text(json.dumps(LISTED, indent=4) + "\n")
    shutil.copy(HW / "compliant.py", where / "test" / "test_done.py")
    # as PyTorch's own: the runs' bytecode is not a change (whatever PYTHONDONTWRITEBYTECODE says)
    (where / ".gitignore").write_text("__pycache__/\n")
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c"]):
        subprocess.run(["git", "-C", str(where), *argv], check=True)
    return where


def _needs_enum() -> None:
    needs_hw_classification(': the migrated file cannot import')


@pytest.mark.torch
def test_another_checkout_or_other_content_is_another_flow_never_the_earlier_answer(tmp_path: Path) -> None:
    """A finished flow of test/test_done.py in checkout A, which changed nothing: verify took
    the file out of the allowlist to lint it and ending `unchanged` put the allowlist back byte
    for byte (its own indent kept), so A's git status is clean. The same command with
    --pytorch-dir B starts a flow of its own (not A's `done` with reused_from); A's file with
    other content is another flow too; A's file as it was is A's flow, reused and said so."""
    _needs_enum()
    a, b = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    drv = InProcess(tmp_path / "ws")
    first = drv.run(Scenario("refactor", ["test/test_done.py", "--pytorch-dir", str(a)], _answer(REPORT)))[-1]
    status = subprocess.run(["git", "-C", str(a), "status", "--porcelain"], capture_output=True, text=True).stdout
    assert ("unchanged", "", True) == (first["outcome"], status,
                                       any("put back in tools/linter" in n for n in first["notes"]))
    in_b = drv.call(["test/test_done.py", "--pytorch-dir", str(b)]).spec
    again = drv.call(["test/test_done.py", "--pytorch-dir", str(a)]).spec
    with (a / "test" / "test_done.py").open("a") as f:
        f.write("# a later upstream edit\n")
    edited = drv.call(["test/test_done.py", "--pytorch-dir", str(a)]).spec
    assert first["status"] == "done" and in_b is not None and again is not None and edited is not None
    ids = {first["flow_id"], in_b["flow_id"], edited["flow_id"]}
    assert (3, "refactor/core/test_done", "done", None, None, first["flow_id"], "done", True) == (
        len(ids), first["flow_id"], first["status"], in_b.get("reused_from"), edited.get("reused_from"),
        again["flow_id"], again["status"], "reused_from" in again)
    assert in_b["status"] in {"need_agent", "waiting"}


def test_a_folder_no_flow_was_saved_in_is_still_the_files_own(tmp_path: Path) -> None:
    """A call killed before its first save leaves the flow's folder without a state: the
    next start of the same file takes the seed's folder, not a suffixed sibling; a folder
    holding another checkout's saved flow gives the suffixed one."""
    from flow.workflows.refactor.identity import STATE, flow_for

    repo = tmp_path / "pytorch"
    (repo / "test").mkdir(parents=True)
    target = repo / "test" / "test_ops.py"
    target.write_text("import torch\n")
    root = tmp_path / "ws"
    (root / "refactor/ops/test_ops" / "logs").mkdir(parents=True)
    assert "refactor/ops/test_ops" == flow_for(root, "refactor/ops/test_ops", repo, target,
                                               "test/test_ops.py")
    (root / "refactor/ops/test_ops" / STATE).write_text(json.dumps(
        {"data": {"repo": str(tmp_path / "other"), "file": str(target)}, "result": None}))
    other = flow_for(root, "refactor/ops/test_ops", repo, target, "test/test_ops.py")
    assert other.startswith("refactor/ops/test_ops-") and len(other) == len("refactor/ops/test_ops") + 9


@pytest.mark.torch
def test_on_a_shared_store_another_machines_checkout_is_another_flow(tmp_path: Path,
                                                                    pg_url: str) -> None:
    """Machines of a fleet on one PostgreSQL store, each with its own workspace: machine A's
    finished flow of test/test_done.py is not machine B's answer for its own checkout (B
    starts a flow of its own, not A's `done` with reused_from), while a third workspace
    refactoring A's checkout as it was finds A's flow, reused and said so."""
    _needs_enum()
    a, b = _checkout(tmp_path / "a"), _checkout(tmp_path / "b")
    store = {"ORCHESTRATOR_STORE": pg_url}
    first = InProcess(tmp_path / "ws-a", store).run(
        Scenario("refactor", ["test/test_done.py", "--pytorch-dir", str(a)], _answer(REPORT)))[-1]
    in_b = InProcess(tmp_path / "ws-b", store).call(["test/test_done.py", "--pytorch-dir", str(b)]).spec
    again = InProcess(tmp_path / "ws-c", store).call(["test/test_done.py", "--pytorch-dir", str(a)]).spec
    assert in_b is not None and again is not None
    assert ("refactor/core/test_done", "done", None, "refactor/core/test_done", "done", True) == (
        first["flow_id"], first["status"], in_b.get("reused_from"), again["flow_id"],
        again["status"], "reused_from" in again)
    assert in_b["flow_id"].startswith("refactor/core/test_done-")
    assert in_b["status"] in {"need_agent", "waiting"}


@pytest.mark.torch
def test_a_rerun_on_an_uncommitted_result_says_the_checkout_holds_that_change(tmp_path: Path) -> None:
    """The first flow labels test/test_done.py and takes it out of the allowlist; nothing is
    committed. The same command again is a flow of the result, which changes nothing more: it
    ends `unchanged` and says the checkout holds uncommitted changes to both files (git's
    word), the first flow's result, with that flow's summary, never "there is no PR to open"."""
    _needs_enum()
    repo = _checkout(tmp_path / "a")
    done = repo / "test" / "test_done.py"
    labelled = done.read_text()
    done.write_text("\n".join(line for line in labelled.splitlines()
                              if "hw_classification =" not in line).replace("HardwareClassification, ", "") + "\n")
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam",
                    "unlabelled"], check=True)
    drv = InProcess(tmp_path / "ws")
    first = drv.run(Scenario("refactor", ["test/test_done.py", "--pytorch-dir", str(repo)], _answer(REPORT)))[-1]
    second = drv.run(Scenario("refactor", ["test/test_done.py", "--pytorch-dir", str(repo)], _answer(REPORT)))[-1]
    status = subprocess.run(["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True).stdout
    summary = Path(second["summary_path"]).read_text()
    steps = " ".join(second["next_steps"])
    assert ("refactored", "unchanged", 2, ["test/test_done.py", "tools/linter/adapters/test_linter_allowlist.json"],
            first["summary_path"]) == (
        first["outcome"], second["outcome"], len(status.splitlines()), sorted(second["uncommitted"]),
        second["earlier_summary"])
    assert ("no PR to open" in steps + summary, "holds uncommitted changes to" in steps,
            first["summary_path"] in steps, "`test/test_done.py`" in summary.split("## Field")[0] + summary) == (
        False, True, True, True)
