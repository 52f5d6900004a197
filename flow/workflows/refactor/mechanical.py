"""The checkout's IO: phase 3 applies the mechanical rules; phase 5 reads what refers to the file.

Every codemod is computed from a snapshot taken before distribute first touched anything
(the test file's ``original/<name>`` from assess, ``original/decorate_info-<n>.py`` for
each ``common_methods_invocations.py``, ``sentinels_before.json`` for the sentinel folder
listings) and its result is written over the current file. So when distribute crashes
after an edit but before the engine saved its state, the re-run recomputes the same edits
from the same snapshots, writes the same files and records the same change counts, rather
than finding nothing left to change and reporting 0. Edits are atomic (``write_atomic``).

``external_files`` gives verify's external-refs check the other files that name a class
the plan removes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flow.workflows.refactor.analysis import AnalystReport, TestMove, moves
from flow.workflows.refactor.assess import Assessment
from flow.workflows.refactor.distribute import CoderTask
from flow.workflows.refactor.errors import CatalogueError
from flow.workflows.refactor.sentinels import SENTINEL_DIRS
from flow.workflows.refactor.summary import AppliedRule

CMI = "torch/testing/_internal/common_methods_invocations.py"
FILE_CODEMODS = ("only_accelerator", "remove_only_native")


def original(ctx: Any) -> Path:
    """The flow folder's copy of the test file as it was before the refactor."""
    return ctx.path(f"original/{Path(ctx.data.file).name}")


def cmi_files(ctx: Any) -> list[Path]:
    """common_methods_invocations.py in the repository, or next to the file (fixtures)."""
    repo, here = Path(ctx.data.repo), Path(ctx.data.file).parent
    return [p for p in (repo / CMI, here / "common_methods_invocations.py") if p.is_file()]


def sentinel_dirs(ctx: Any) -> list[Path]:
    """test/dynamo_skips and test/dynamo_expected_failures (or beside the file)."""
    repo, here = Path(ctx.data.repo), Path(ctx.data.file).parent
    found = [d for base in (repo / "test", here) for d in (base / n for n in SENTINEL_DIRS)]
    return [d for d in dict.fromkeys(found) if d.is_dir()]


def removed_classes(report: AnalystReport) -> set[str]:
    """Classes the plan empties: every test's source class that is no test's target class."""
    return {c.source_class for c in report.classifications} - {c.target_class for c in report.classifications}


def external_files(ctx: Any, report: AnalystReport) -> dict[str, str]:
    """Python files under the checkout's ``test/`` (else the file's folder) naming a removed class.

    Keys are paths relative to the repository; the refactored file and the
    ``common_methods_invocations.py`` files (checked by decorate_info) are left out. A byte
    search keeps this cheap: nothing is read when the plan removes no class, and a file is
    decoded only when it contains a name (device variants ``TestFooCPU`` contain ``TestFoo``).
    """
    names = [n.encode() for n in sorted(removed_classes(report))]
    if not names:
        return {}
    repo, file = Path(ctx.data.repo), Path(ctx.data.file)
    root = repo / "test" if (repo / "test").is_dir() else file.parent
    skip = {file.resolve(), *(p.resolve() for p in cmi_files(ctx))}
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.py")):
        if path.resolve() in skip or not path.is_file():
            continue
        data = path.read_bytes()
        if any(n in data for n in names):
            rel = path.relative_to(repo) if path.is_relative_to(repo) else path
            found[rel.as_posix()] = data.decode("utf-8", errors="replace")
    return found


def _write(path: Path, text: str) -> None:
    from workspace.atomic import write_atomic

    if path.read_text(encoding="utf-8") != text:
        write_atomic(path, text.encode("utf-8"))


def _snapshot(ctx: Any, name: str, source: Path) -> str:
    """``source``'s text as first seen by distribute, kept in the flow folder as ``name``."""
    kept = ctx.path(name)
    if not kept.exists():
        ctx.write_text(name, source.read_text(encoding="utf-8"), copy=True)
    return kept.read_text(encoding="utf-8")


def _decorate_info(ctx: Any, test_moves: list[TestMove]) -> int:
    from flow.workflows.refactor import codemods

    count = 0
    for n, cmi in enumerate(cmi_files(ctx)):
        result = codemods.decorate_info(_snapshot(ctx, f"original/decorate_info-{n}.py", cmi),
                                        codemods.class_map(test_moves))
        _write(cmi, result.code)
        count += len(result.changes)
    return count


def _sentinel_rename(ctx: Any, test_moves: list[TestMove]) -> int:
    from flow.workflows.refactor.sentinels import apply_renames, list_sentinels, plan_renames

    name = "sentinels_before.json"
    if not ctx.path(name).exists():
        ctx.write_json(name, {str(d): list_sentinels(d) for d in sentinel_dirs(ctx)})
    count = 0
    for folder, names in ctx.read_json(name).items():
        plan = plan_renames(names, test_moves)
        apply_renames(Path(folder), plan)  # skips what an interrupted run already renamed
        count += sum((Path(folder) / r.new).exists() for r in plan.renames)
        # Kept as data, not text: the summary re-checks each file, so a sentinel renamed
        # later (by the coder) is no longer reported.
        for u in plan.unresolved:
            row = (folder, u.name, u.reason)
            if row not in ctx.data.sentinel_notes:
                ctx.data.sentinel_notes.append(row)
    return count


def apply_mechanical(ctx: Any, tasks: list[CoderTask], report: AnalystReport,
                     before: Assessment) -> list[AppliedRule]:
    """Apply every mechanical task in order; one ``AppliedRule`` (by "codemod") per task.

    Raises ``CatalogueError`` for a codemod this module does not know.
    """
    from flow.workflows.refactor import codemods
    from flow.workflows.refactor.imports import usort_config

    test_moves = moves(report, before)
    text = original(ctx).read_text(encoding="utf-8")
    file_rules = tuple(str(t.codemod) for t in tasks if t.codemod in FILE_CODEMODS)
    by_rule: dict[str, int] = {}
    if file_rules:
        # All decorator rules in one parse and one pass; the import block kept as PyTorch's
        # usort lint wants it (the checkout's [tool.usort], else PyTorch's bundled settings).
        # A test the plan keeps on one device keeps its @onlyCUDA: widening it would claim
        # coverage the test cannot have (it moves to its device's class instead).
        keep_device = frozenset((c.source_class, c.test.split(".", 1)[1])
                                for c in report.classifications if c.strategy == "device_specific")
        result = codemods.decorator_rules(text, file_rules, usort_config(Path(ctx.data.file)),
                                          keep_device)
        text = result.code
        for change in result.changes:
            by_rule[change.rule_id] = by_rule.get(change.rule_id, 0) + 1
    applied: list[AppliedRule] = []
    for task in tasks:
        if task.codemod in FILE_CODEMODS:
            changes = by_rule.get(task.rule_id, 0)
        elif task.codemod == "decorate_info":
            changes = _decorate_info(ctx, test_moves)
        elif task.codemod == "sentinel_rename":
            changes = _sentinel_rename(ctx, test_moves)
        else:
            raise CatalogueError("reference/refactor/rules.json",
                                 f"rule {task.rule_id} names unknown codemod {task.codemod!r}")
        applied.append(AppliedRule(rule_id=task.rule_id, title=task.title, by="codemod",
                                   changes=changes))
    if file_rules:
        _write(Path(ctx.data.file), text)
    return applied
