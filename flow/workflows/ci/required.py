"""Which verdicts decide a CI tick: the checks the base branch requires.

Green means every required check passed. `split` keeps the verdicts of required checks (by
name: a check run's name or a status's context, and by app where a rule ties the context to
one), adds a pending verdict for each required
check that has not reported yet (GitHub shows it "Expected"), and hands back the red
verdicts of optional checks apart: they are reported at the end, never debugged or re-run,
unless the flow was started with ORCHESTRATOR_CI_OPTIONAL_CHECKS=babysit (then every check
counts, and a required check that has not reported is still waited for). When GitHub would
not say which checks are required (`RequiredChecks.source` "every_check"), every check
counts, as before, and the fallback's note is printed on each tick. Pure; imports no PyGithub.
"""

from __future__ import annotations

from flow.github.models import CheckState, RequiredChecks
from flow.workflows.ci.classify import RED, CheckVerdict, TickClassification

OPTIONAL_ENV = "ORCHESTRATOR_CI_OPTIONAL_CHECKS"  # report (default) | babysit


def split(result: TickClassification, required: RequiredChecks | None,
          babysit_optional: bool = False) -> tuple[TickClassification, list[CheckVerdict]]:
    """(the verdicts that decide, the red verdicts of optional checks); see the module doc."""
    if required is None or required.source == "every_check":
        return result, []
    kept: list[CheckVerdict] = []
    optional: list[CheckVerdict] = []
    for v in result.verdicts:
        (kept if babysit_optional or required.requires(v.check.name, v.check.app_id)
         else optional).append(v)
    reported = {v.check.name for v in result.verdicts if v.check.kind != "workflow_run"
                and required.requires(v.check.name, v.check.app_id)}
    for context in required.contexts:
        if context not in reported:
            kept.append(CheckVerdict(
                check=CheckState(kind="status", name=context, status="expected"), category="pending",
                reason=f"required by branch {required.branch!r}"
                       + (f" from app {', '.join(map(str, required.apps[context]))}"
                          if context in required.apps else "")
                       + "; it has not reported on this commit yet"))
    return (TickClassification(sha=result.sha, verdicts=kept),
            [v for v in optional if v.category in RED])
