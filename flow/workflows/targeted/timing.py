"""``est_time`` for a new or moved CUDA test, and its PR-description timing line.

The seed says ``est_time = ceil(1.25 x measured)``, "rounded up per the rule". The rule is
a config value (``Timing``): the value rounds up to ``fine_step`` while at or below
``threshold`` and to ``coarse_step`` above it. The ``miles`` profile carries the rule from
miles' ``ci-test-registration.md`` (10 s up to 200 s, then 100 s: 362 s -> 453 -> 500).
The defaults (10 s up to 300 s, then 30 s) are our reading for repositories without one.
"""

from __future__ import annotations

import math
from fractions import Fraction

from flow.workflows.targeted.config import Timing
from flow.workflows.targeted.errors import TargetedError

DEFAULT_RULE = Timing()


def est_time(measured_s: float, rule: Timing = DEFAULT_RULE) -> int:
    """``ceil(factor x measured_s)`` rounded up by ``rule``; raises TargetedError when the
    measurement is not a positive number of seconds."""
    if not isinstance(measured_s, (int, float)) or isinstance(measured_s, bool) \
            or not math.isfinite(measured_s) or measured_s <= 0:
        raise TargetedError(f"measured runtime {measured_s!r} is not a positive number of "
                            "seconds", "read it from the job's 'Run tests' step")
    # Exact arithmetic: 1.25 x 41 must be 51.25 -> 52, not a float a hair above 52.
    raw = math.ceil(Fraction(str(rule.factor)) * Fraction(str(measured_s)))
    step = rule.fine_step if raw <= rule.threshold else rule.coarse_step
    return -(-raw // step) * step


def timing_line(path: str, suite: str, measured_s: int, est: int, run_url: str) -> str:
    """The seed's PR-description line, e.g. ``CI timing: tests/fast-gpu/test_x.py on
    stage-b-2-gpu-h200, Run tests 41 s, est_time=60, https://.../actions/runs/1``."""
    return (f"CI timing: {path} on {suite}, Run tests {int(measured_s)} s, "
            f"est_time={est}, {run_url}")
