"""What a campaign's items are: reproduce --batch entries, the test files of a checkout
still on the test linter's allowlist (in both shapes the allowlist has had), a given list."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flow.cli.argv import parse
from flow.cli.campaigns import items_for
from flow.core.errors import WorkflowInputError


def _checkout(tmp: Path, allowlist: object) -> Path:
    root = tmp / "pytorch"
    (root / "tools/linter/adapters").mkdir(parents=True)
    (root / "tools/linter/adapters/test_linter_allowlist.json").write_text(json.dumps(allowlist))
    for rel in ("test/test_sort_and_select.py", "test/distributed/test_c10d_common.py",
                "test/test_done_already.py"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("import torch\n")
    return root


@pytest.mark.parametrize("shape", ["list", "object"])
def test_refactor_items_are_the_allowlisted_test_files_of_the_checkout(
        tmp_path: Path, shape: str) -> None:
    """Every listed file that exists becomes one refactor item (a listed file gone from the
    checkout is skipped), in path order."""
    listed = ["test/test_sort_and_select.py", "test/distributed/test_c10d_common.py",
              "test/removed_since.py"]
    root = _checkout(tmp_path, listed if shape == "list" else dict.fromkeys(listed, True))
    args, _ = parse(["refactor", "--campaign", "td", "--pytorch-dir", str(root)])
    kind, items = items_for(args, list(args.args), tmp_path)
    assert "refactor" == kind
    assert [("test/distributed/test_c10d_common.py",
             {"argv": ["refactor", "test/distributed/test_c10d_common.py", "--pytorch-dir",
                       str(root)]}),
            ("test/test_sort_and_select.py",
             {"argv": ["refactor", "test/test_sort_and_select.py", "--pytorch-dir",
                       str(root)]})] == items


def test_a_checkout_without_the_allowlist_is_refused_naming_it(tmp_path: Path) -> None:
    """No allowlist in the checkout: a clear refusal that names the file it looked for."""
    args, _ = parse(["refactor", "--campaign", "td", "--pytorch-dir", str(tmp_path)])
    with pytest.raises(WorkflowInputError, match="test_linter_allowlist.json"):
        items_for(args, list(args.args), tmp_path)


def test_batch_entries_become_one_reproduce_item_each(tmp_path: Path) -> None:
    """Each --batch entry is one item: its own reproduce command with its fields as flags,
    the call's profile and source dir repeated."""
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "mean", "command": "pytest tests/test_calc.py::test_mean", "stage": "nightly"},
        {"command": "pytest tests/test_calc.py::test_add", "repeat": 3}]))
    args, _ = parse(["reproduce", "--batch", str(batch), "--campaign", "nightly",
                     "--profile", "local", "--source-dir", str(tmp_path)])
    kind, items = items_for(args, list(args.args), tmp_path)
    common = ["--profile", "local", "--source-dir", str(tmp_path)]
    assert ("reproduce", [
        ("mean", {"argv": ["reproduce", "--command", "pytest tests/test_calc.py::test_mean",
                           *common, "--stage", "nightly"]}),
        ("entry-2", {"argv": ["reproduce", "--command", "pytest tests/test_calc.py::test_add",
                              *common, "--repeat", "3"]})]) == (kind, items)


def test_an_items_file_with_a_repeated_id_is_refused(tmp_path: Path) -> None:
    """A given list must name each item once."""
    path = tmp_path / "items.json"
    path.write_text(json.dumps([{"id": "a", "argv": ["start", "toy", "a"]}] * 2))
    args, _ = parse(["campaign", "c", "--items", str(path)])
    with pytest.raises(WorkflowInputError, match=r"repeats the id\(s\) .a."):
        items_for(args, list(args.args), tmp_path)
