"""Patterns data validation and log trimming (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.workflows.ci.logs import trim_log
from flow.workflows.ci.patterns import DEFAULT_PATH, PatternsInvalid, load_patterns

BROKEN = [
    ('green = ["success"]', 'green = ["success", "failure"]', "listed in both"),
    ("'^FAILED ',", "'^FAILED (',", "bad regular expression"),
    ("context = 2", "context = 2\ncontxt = 3", "contxt"),
]


@pytest.mark.parametrize("old, new, message", BROKEN)
def test_invalid_patterns_are_refused(tmp_path: Path, old: str, new: str, message: str) -> None:
    """A duplicated conclusion, a bad regex or a misspelt key stops loading with the file named."""
    bad = tmp_path / "patterns.toml"
    bad.write_text(DEFAULT_PATH.read_text().replace(old, new, 1))
    with pytest.raises(PatternsInvalid) as err:
        load_patterns(bad)
    assert (True, True) == (message in err.value.message, str(bad) in err.value.message)


TRIM_CASES = [
    ("ok\nok\nFAILED a::b - x\nok\nok\nmid\nok\nok\nE   assert 1 == 2\n", ["ok", "ok", "FAILED a::b - x", "ok", "ok", "...",
                                                                         "ok", "ok", "E   assert 1 == 2"], 2),
    ("building\n##[error]Process completed with exit code 2.\n", [], 0),
    ("Traceback (most recent call last):\n  File x\nValueError: bad\n", ["Traceback (most recent call last):",
                                                                      "  File x", "ValueError: bad"], 2),
]


@pytest.mark.parametrize("text, lines, hits", TRIM_CASES)
def test_trim_log(text: str, lines: list[str], hits: int) -> None:
    """Failure lines are kept with two lines of context; the generic exit-code epilogue is not a failure."""
    got = trim_log(text, load_patterns())
    assert (lines, hits) == (got.lines, got.failure_lines)


def test_trim_log_caps_length() -> None:
    """A log with more failure lines than max_lines keeps the last ones and says it truncated."""
    text = "\n".join(f"FAILED t::test_{i} - boom" for i in range(500))
    got = trim_log(text, load_patterns())
    assert (120, True, "FAILED t::test_499 - boom") == (len(got.lines), got.truncated, got.lines[-1])
