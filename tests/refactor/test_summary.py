"""Phase 7: final_summary.md rendered from typed inputs."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flow.workflows.refactor.analysis import AnalystReport, moves
from flow.workflows.refactor.assess import Assessment
from flow.workflows.refactor.findings import CheckResult
from flow.workflows.refactor.summary import (
    AppliedRule, DeferredFailure, SummaryInput, moved_tests, render_summary,
)


def _input(**overrides: object) -> SummaryInput:
    base = {
        "file": "test/test_small_ops.py",
        "field": "core",
        "rules": [AppliedRule(rule_id="TR001", title="onlyCUDA to onlyAccelerator", by="codemod", changes=2),
                  AppliedRule(rule_id="TR004", title="device-agnostic class", by="coder")],
        "checks": [CheckResult(name="lint", passed=True, errors=0, warnings=1)],
        "retries": {"TR004": 1, "final_review": 0},
        "deferred": [DeferredFailure(test_name="test_small_ops.TestSmallOpsDeviceCPU.test_add_cpu", reason="pre-existing")],
        "local_tests": "cpu: 9 passed, 2 skipped",
        "ci_check_command": "/v/python /o.py --workspace /ws --harness codex --ci-check",
    }
    base.update(overrides)
    return SummaryInput.model_validate(base)


def test_moves_grouped_by_class_pair(small_before: Assessment, small_report: AnalystReport) -> None:
    """Moves are grouped per (source, target); a change of mechanism alone is not a move."""
    actual = [(m.source_class, m.target_class, len(m.tests)) for m in moved_tests(moves(small_report, small_before))]
    assert [("TestSmallOps", "TestSmallOpsDevice", 5), ("TestSmallUtils", "TestSmallOpsDevice", 1), ("TestSmallUtils", "TestSmallCudnn", 1)] == actual


def test_sections_and_next_steps(small_before: Assessment, small_report: AnalystReport) -> None:
    """Every section appears with its content; the next step is the flow's own absolute command."""
    text = render_summary(_input(moves=moved_tests(moves(small_report, small_before))))
    expected_lines = [
        "| TestSmallOps | TestSmallOpsDevice | 5: test_add, test_mul_dtypes, test_to_accelerator, test_pinned_copy, test_native_only |",
        "- `TR001` onlyCUDA to onlyAccelerator (2 edits)",
        "- `TR004` device-agnostic class (applied by the coder, accepted by the checker)",
        "| lint | pass | 0 | 1 |",
        "- TR004: 1",
        "cpu: 9 passed, 2 skipped",
        "- `test_small_ops.TestSmallOpsDeviceCPU.test_add_cpu`: pre-existing",
        '2. Start CI monitoring: say "look after the CI" or run `/v/python /o.py --workspace /ws --harness codex --ci-check` (add `--pr-number N` to skip detecting the PR).',
    ]
    assert [] == [line for line in expected_lines if line not in text.splitlines()]


def test_empty_inputs_say_none() -> None:
    """A baseline run with nothing moved still renders every section, saying so."""
    text = render_summary(SummaryInput(file="test/distributed/test_c10d_nccl.py", field="distributed",
                                      ci_check_command="/v/python /o.py --ci-check"))
    assert ["No test changed class.", "Not run (no local test gate for this field)."] == [
        line for line in text.splitlines() if line in ("No test changed class.", "Not run (no local test gate for this field).")
    ]


def test_table_cells_are_escaped() -> None:
    """A pipe in a name cannot break the Markdown table."""
    text = render_summary(_input(checks=[CheckResult(name="a|b", passed=False, errors=1, warnings=0)]))
    assert ["| a\\|b | FAIL | 1 | 0 |"] == [line for line in text.splitlines() if line.startswith("| a")]


def test_person_decisions_come_from_the_recorded_list_not_the_notes() -> None:
    """The next step names the gates a person decided; prose in the notes alone adds no step."""
    decided = render_summary(_input(decided_by_person=["review-gate-3"], notes=["review-gate-3: carried on"]))
    prose_only = render_summary(_input(notes=["a note mentioning a person's decision"]))
    assert (["4. Say in the PR description which gate was passed by a person's decision "
             "(`review-gate-3`), and why (see Decisions and notes)."], []) == (
        [line for line in decided.splitlines() if "which gate" in line],
        [line for line in prose_only.splitlines() if "which gate" in line])


def test_the_ci_check_command_is_required() -> None:
    """No relative default stands in for the flow's absolute command."""
    with pytest.raises(ValidationError, match="ci_check_command"):
        SummaryInput(file="test/test_small_ops.py", field="core")  # type: ignore[call-arg]


def test_rules_listed_under_who_applied_them() -> None:
    """Codemod rules sit under the orchestrator with their edit counts; agent rules under agents, with no edit count."""
    text = render_summary(_input(rules=[
        AppliedRule(rule_id="TR009", title="DecorateInfo", by="codemod", changes=0),
        AppliedRule(rule_id="TR006", title="device strings", by="coder")]))
    lines = text.splitlines()
    orchestrator = lines[lines.index("## Rules applied by the orchestrator (codemods)") + 2]
    agents = lines[lines.index("## Rules applied by agents") + 2]
    assert ("- `TR009` DecorateInfo (nothing to change)",
            "- `TR006` device strings (applied by the coder, accepted by the checker)") == (orchestrator, agents)


def test_skipped_check_says_why_never_pass() -> None:
    """A check that did not run shows skipped and the reason, not pass."""
    text = render_summary(_input(checks=[CheckResult(name="collect_only", passed=True, errors=0, warnings=0,
                                                     skipped="the test interpreter /p has no torch")]))
    assert ["| collect_only | skipped: the test interpreter /p has no torch | - | - |"] == [
        line for line in text.splitlines() if line.startswith("| collect_only")]


def test_notes_appear_once() -> None:
    """A note recorded twice (a step re-run) is listed once."""
    text = render_summary(_input(notes=["lint-gate-3: carried on by a person's decision"] * 2))
    assert 1 == text.count("lint-gate-3: carried on")


def test_an_agent_rule_is_applied_only_where_it_changed_lines() -> None:
    """A coder's rule that changed no line says so; one that did names how many lines, and by whom."""
    text = render_summary(_input(rules=[
        AppliedRule(rule_id="TR006", title="hard-coded devices", by="coder", changed_lines=0),
        AppliedRule(rule_id="TR004", title="device-agnostic class", by="coder", changed_lines=7)]))
    assert ["- `TR006` hard-coded devices (the coder changed no line: nothing to apply)",
            "- `TR004` device-agnostic class (applied by the coder: 7 lines changed, accepted by the checker)"] == [
        line for line in text.splitlines() if line.startswith("- `TR00")]


def test_an_unchanged_run_proposes_no_pr_and_a_changed_one_opens_with_the_pr() -> None:
    """`unchanged` says so and has no PR step; otherwise the summary starts with the PR description."""
    from flow.workflows.refactor.prtext import PrInput

    unchanged = render_summary(_input(unchanged=True, pr=PrInput(rel="test/test_small_ops.py")))
    changed = render_summary(_input(pr=PrInput(rel="test/test_small_ops.py", hw_passed=True, linter_passed=True,
                                               cuda_decoupled=True,
                                               hw_counts={"GENERIC": 3})))
    assert (True, False, True, True) == (
        "None: nothing changed." in unchanged, "open a PR" in unchanged,
        "### [Testcase Refactoring] Decouple test/test_small_ops.py from CUDA-specific" in changed,
        'open a PR titled "[Testcase Refactoring] Decouple test/test_small_ops.py from CUDA-specific"' in changed)
