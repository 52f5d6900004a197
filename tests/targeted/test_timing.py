"""est_time = ceil(1.25 x measured) rounded by the configured rule, and the timing line."""

from __future__ import annotations

import pytest

from flow.workflows.targeted.config import Timing, load_profile
from flow.workflows.targeted.errors import TargetedError
from flow.workflows.targeted.timing import est_time, timing_line

MILES = load_profile("miles").timing

CASES = [
    ("seed example 41 s", 41, Timing(), 60),
    ("default: fine step at the 300 s threshold", 240, Timing(), 300),
    ("default: coarse step above 300 s", 241, Timing(), 330),
    ("default: 362 s", 362, Timing(), 480),
    ("exact multiple stays", 8, Timing(), 10),
    ("float measurement", 7.9, Timing(), 10),
    ("miles: 362 -> 453 -> 500", 362, MILES, 500),
    ("miles: 160 -> 200 stays fine", 160, MILES, 200),
    ("miles: 161 -> 202 -> 300", 161, MILES, 300),
    ("miles: seed example 41 s", 41, MILES, 60),
]


@pytest.mark.parametrize("name,measured,rule,expected", CASES, ids=[c[0] for c in CASES])
def test_est_time_rounding(name, measured, rule, expected):
    """The rounding rule applies to ceil(1.25 x measured)."""
    assert expected == est_time(measured, rule)


@pytest.mark.parametrize("bad", [0, -3, float("nan"), True])
def test_est_time_refuses_bad_measurement(bad):
    """A measurement that is not a positive number raises TargetedError quoting it."""
    with pytest.raises(TargetedError) as info:
        est_time(bad)
    assert repr(bad) in info.value.message


def test_timing_line_matches_seed_format():
    """The PR-description line has the seed's exact shape."""
    line = timing_line("tests/fast-gpu/test_x.py", "stage-b-2-gpu-h200", 41, 60,
                       "https://github.com/radixark/miles/actions/runs/7")
    assert ("CI timing: tests/fast-gpu/test_x.py on stage-b-2-gpu-h200, Run tests 41 s, "
            "est_time=60, https://github.com/radixark/miles/actions/runs/7") == line


@pytest.mark.parametrize("seconds, expected", [
    (41, "CI timing: t/test_n.py on s, Run tests 41 s, est_time=60, u"),
    (0, "t/test_n.py: the run's 'Run tests' step has no timing; read it from u"),
    (None, "t/test_n.py: the run's 'Run tests' step has no timing; read it from u"),
])
def test_timing_lines_need_a_measured_positive_time(seconds, expected):
    """A new test's line comes from its passing run's time; none or 0 s gives a note, not an
    error that would stop the final report."""
    from flow.workflows.targeted.config import TargetedConfig
    from flow.workflows.targeted.loop import Attempt, FileRun, TargetedData, timing_lines

    run = Attempt(round=0, sha="a" * 40, conclusion="success", seconds=seconds, url="u")
    data = TargetedData(repo="o/r", number=1, repo_dir="/x", base="main", head_sha="a" * 40,
                        new_tests=["t/test_n.py"], suites={"t/test_n.py": "s"},
                        files={"t/test_n.py": FileRun(path="t/test_n.py", attempts=[run])})
    assert [expected] == timing_lines(data, TargetedConfig())
