"""Disputes, waivers and local-test verdicts: pure decisions on findings, cases as data."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from flow.workflows.refactor.decisions import (
    Dispute, DisputeDecision, check_disputes, check_verdicts, decide, round_given_back, show,
    unwaived,
)
from flow.workflows.refactor.feedmodels import CheckerDisputeFeed, CheckerReviewFeed, CoderFeed
from flow.workflows.refactor.findings import Finding

SOURCE = 'class T:\n    def test_a(self, device):\n        if self.device_type == "cuda":\n            x = torch.ones(1, device="cuda")\n'


def _f(line: int, code: str = "L006") -> Finding:
    return Finding(check="lint", code=code, severity="error", file="t.py", line=line, message=f"{code} at {line}")


def test_shown_findings_carry_id_place_and_source_text() -> None:
    """Each listed finding gets an id, its file:line and the stripped source line; no `None` line."""
    shown = show([_f(4), Finding(check="x", code="V502", severity="error", file="d/s", line=0, message="m")], SOURCE, "L")
    assert (["L1", "L2"], 'x = torch.ones(1, device="cuda")', "[L2] d/s (whole file) V502: m") == (
        [s.id for s in shown], shown[0].text, shown[1].render())


def test_upheld_dispute_waives_the_finding_even_after_it_moved() -> None:
    """A waiver keys on code, file and source text, so the finding stays waived when lines shift."""
    shown = show([_f(4)], SOURCE, "L")
    waivers, notes = decide([Dispute(finding="L1", reason="compare")], [DisputeDecision(finding="L1", upheld=True)], shown)
    moved = "# a new first line\n" + SOURCE
    assert ([], [], True) == (unwaived([_f(5)], moved, waivers), notes, round_given_back(shown, waivers))


CASES = [
    ("rejected", [DisputeDecision(finding="L1", upheld=False, reason="it places a tensor")], 0,
     ["dispute of L006 at t.py:4 rejected by the checker: it places a tensor"]),
    ("undecided", [], 0, ["dispute of L006 at t.py:4 rejected by the checker: no decision given"]),
]


@pytest.mark.parametrize(("name", "decisions", "waived", "notes"), CASES, ids=[c[0] for c in CASES])
def test_dispute_not_upheld_keeps_the_finding(name: str, decisions: list[DisputeDecision], waived: int, notes: list[str]) -> None:
    """A rejected or undecided dispute waives nothing and says why."""
    shown = show([_f(4)], SOURCE, "L")
    waivers, got = decide([Dispute(finding="L1", reason="x")], decisions, shown)
    assert (waived, notes, False) == (len(waivers), got, round_given_back(shown, waivers))


def test_a_round_with_one_real_finding_is_not_given_back() -> None:
    """Only a round whose every finding was upheld burns nothing."""
    shown = show([_f(4), _f(3, "L007")], SOURCE, "L")
    waivers, _ = decide([Dispute(finding="L1", reason="x")], [DisputeDecision(finding="L1", upheld=True)], shown)
    assert not round_given_back(shown, waivers)


def test_disputes_must_name_listed_findings() -> None:
    """Unknown and repeated ids are problems."""
    shown = show([_f(4)], SOURCE, "L")
    problems = check_disputes([Dispute(finding="L9", reason="x"), Dispute(finding="L1", reason="a"),
                               Dispute(finding="L1", reason="b")], shown)
    assert 2 == len(problems) and "L9" in problems[0] and "more than once" in problems[1]


FAILING = ["m.TestACPU.test_x_cpu", "m.TestB.test_y [cuda]"]
VERDICTS = [
    ("ok", [("m.TestACPU.test_x_cpu", "fixed", "moved it", None), ("m.TestB.test_y [cuda]", "deferred", None, "flaky on CI")], 0),
    ("made-up-name", [("m.TestACPU.test_x_cpu", "fixed", "x", None), ("m.TestB.test_y [cuda]", "deferred", None, "r"),
                      ("m.TestGhost.test_z", "deferred", None, "r")], 1),
    ("missing-one", [("m.TestACPU.test_x_cpu", "fixed", "x", None)], 1),
    ("deferred-without-reason", [("m.TestACPU.test_x_cpu", "fixed", "x", None), ("m.TestB.test_y [cuda]", "deferred", None, " ")], 1),
    ("fixed-without-fix", [("m.TestACPU.test_x_cpu", "fixed", None, None), ("m.TestB.test_y [cuda]", "deferred", None, "r")], 1),
    ("twice", [("m.TestACPU.test_x_cpu", "fixed", "x", None), ("m.TestACPU.test_x_cpu", "fixed", "x", None),
               ("m.TestB.test_y [cuda]", "deferred", None, "r")], 1),
]


@pytest.mark.parametrize(("name", "verdicts", "problems"), VERDICTS, ids=[v[0] for v in VERDICTS])
def test_verdicts_must_name_the_failing_tests(name: str, verdicts: list, problems: int) -> None:
    """Every verdict names a failing JUnit id exactly once, with its reason or fix."""
    assert problems == len(check_verdicts(verdicts, FAILING))


def test_feed_models_stay_strict() -> None:
    """The dispute fields are optional but strict: unknown keys and empty reasons are refused."""
    ok = CoderFeed.model_validate({"success": False, "disputed": [{"finding": "L1", "reason": "compare"}]})
    review = CheckerReviewFeed.model_validate({"all_clear": True, "dispute_decisions": [{"finding": "R1", "upheld": True}]})
    assert (1, 1) == (len(ok.disputed), len(review.dispute_decisions))
    for model, bad in ((CoderFeed, {"success": True, "disputed": [{"finding": "L1", "reason": ""}]}),
                       (CoderFeed, {"success": True, "disputes": []}),
                       (CheckerDisputeFeed, {"decisions": [{"finding": "L1"}]}),
                       (CheckerDisputeFeed, {"decisions": [], "extra": 1})):
        with pytest.raises(ValidationError):
            model.model_validate(bad)
