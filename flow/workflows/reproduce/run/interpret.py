"""Interpret one run of a reproducer (seed: Stage 1 "Run test"), per form.

Pure: the caller runs the command and passes exit code, output and (for pytest, when it
asked for one) the JUnit XML text. The result is a ``RunOutcome`` whose ``kind`` the
stage tables in ``stages`` turn into verdicts. A run that yields nothing readable is
never read as PASSED.
"""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.unskip.marker import DEFAULT_XPU_SKIP_MARKERS


class Outcome(StrEnum):
    FAILED = "failed"                  # -> REPRODUCED (pytest FAILED/xfailed; pattern matched)
    PASSED = "passed"                  # -> next stage (auto) / NOT_REPRODUCED (nightly)
    SKIPPED_XPU_MARKER = "skipped_xpu_marker"  # -> remove the decorator, re-run once
    BLOCKED = "blocked"                # -> CANNOT_VERIFY(blocker=detail)
    COLLECTED_ZERO = "collected_zero"  # -> NO_REPRODUCER(collected_zero)


class RunOutcome(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    kind: Outcome
    detail: str = ""


class PytestCounts(BaseModel):
    model_config = ConfigDict(extra="forbid")
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    xfailed: int = 0
    xpassed: int = 0
    skip_reasons: list[str] = []
    # the first line of each error (setup, fixture, teardown or collection): no test body
    # failed there, so these are not reproductions by themselves
    error_lines: list[str] = []


# Reasons torch's XPU markers print (common_utils.skipIfXpu, common_device_type.skipXPU).
_XPU_SKIP_REASON = re.compile(r"skipIfXpu:|on the XPU stack|on XPU backend|\bskipXPU", re.I)

# Causes unrelated to the bug: a missing dependency, a permission error, a missing device,
# or the in-tree-import trap. Matched against the tail of the output.
INFRA_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("missing dependency", re.compile(r"ModuleNotFoundError: No module named '?[\w.]+'?")),
    ("missing dependency", re.compile(r"ImportError: lib[\w.+-]+\.so[\w.]*: cannot open shared")),
    ("in-tree import (stale torch/_C)", re.compile(r"ImportError: .*undefined symbol")),
    ("permission error", re.compile(r"PermissionError: .*|Permission denied")),
    ("missing device", re.compile(
        r"No XPU devices? (are|is) available|PyTorch is not linked with support for xpu"
        r"|Torch not compiled with \w+ enabled|XPU device not found|no XPU device"
        r"|RuntimeError: No \w+ GPUs? (are|is) available", re.I)),
    ("command not found", re.compile(r"command not found|can't open file .*No such file or directory")),
)

_SUMMARY = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected|warnings?)")
_SKIP_LINE = re.compile(r"^SKIPPED \[\d+\] [^:]+(?::\d+)?: (.*)$", re.M)


def infra_blocker(output: str) -> str | None:
    """``"<cause>: <matching line>"`` when the output shows an infra cause, else None."""
    for cause, pattern in INFRA_PATTERNS:
        m = pattern.search(output)
        if m:
            return f"{cause}: {m.group(0).strip()}"
    return None


def is_collected_zero(exit_code: int, output: str) -> bool:
    """The collect-only check: pytest collected nothing (and no collection error)."""
    if exit_code not in (0, 4, 5) or re.search(r"\b\d+ errors?\b", output):
        return False  # a collection error is not "nothing to collect"
    return (
        "collected 0 items" in output
        or "no tests collected" in output
        or exit_code == 5
        or (exit_code == 4 and "not found" in output)
    )


def collect_only(exit_code: int, output: str) -> RunOutcome:
    """Interpret ``pytest --collect-only``: COLLECTED_ZERO, BLOCKED (collection error) or PASSED."""
    if is_collected_zero(exit_code, output):
        return RunOutcome(kind=Outcome.COLLECTED_ZERO, detail="collected 0 items")
    if exit_code != 0:
        cause = infra_blocker(output) or _last_line(output)
        return RunOutcome(kind=Outcome.BLOCKED, detail=f"collection error: {cause}")
    return RunOutcome(kind=Outcome.PASSED, detail="collected")


def parse_junit(xml_text: str) -> PytestCounts:
    """Count outcomes in a pytest JUnit report. Raises ValueError on unparsable XML."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ValueError(f"JUnit XML does not parse ({exc}); pass pytest's --junitxml output") from exc
    counts = PytestCounts()
    for case in root.iter("testcase"):
        children = {child.tag: child for child in case}
        if "failure" in children:
            counts.failed += 1
        elif "error" in children:
            counts.errors += 1
            counts.error_lines.append(_error_line(case, children["error"]))
        elif "skipped" in children:
            node = children["skipped"]
            if node.get("type") == "pytest.xfail":
                counts.xfailed += 1
            else:
                counts.skipped += 1
                counts.skip_reasons.append(node.get("message", "") or (node.text or ""))
        else:
            counts.passed += 1
    return counts


def _error_line(case: ET.Element, node: ET.Element) -> str:
    """``<test id>: <first line of the error>`` of a JUnit ``<error>`` (pytest writes
    ``failed on setup with "..."`` or ``collection failure`` as its message and the
    traceback as its text: the last ``E   `` line of the text says what went wrong)."""
    name = "::".join(filter(None, [case.get("classname", ""), case.get("name", "")]))
    message = (node.get("message") or "").strip().splitlines()
    text = node.text or ""
    raised = [l[1:].strip() for l in text.splitlines() if l.startswith("E ")]
    first = raised[0] if raised else (message[0] if message else _last_line(text))
    phase = message[0] if message else "error"
    if first != phase:
        first = f"{phase}: {first}"
    return f"{name}: {first}"[:400]


_ERROR_LINE = re.compile(r"^ERROR (\S+)(?: - (.*))?$", re.M)


def parse_summary(output: str) -> PytestCounts:
    """Counts from pytest's final ``=== N failed, M passed in Xs ===`` line and -rs lines."""
    counts = PytestCounts()
    lines = [l for l in output.splitlines() if re.search(r" in [\d.]+s", l) and _SUMMARY.search(l)]
    if lines:
        for number, word in _SUMMARY.findall(lines[-1]):
            key = {"error": "errors", "errors": "errors"}.get(word, word)
            if key in PytestCounts.model_fields and key != "skip_reasons":
                setattr(counts, key, int(number))
    counts.skip_reasons = _SKIP_LINE.findall(output)
    counts.error_lines = [f"{node}: {why}" if why else node for node, why in _ERROR_LINE.findall(output)]
    return counts


def _last_line(output: str) -> str:
    lines = [l.strip() for l in output.strip().splitlines() if l.strip()]
    return lines[-1] if lines else "no output"


def is_xpu_skip(reasons: list[str], decorators: list[str],
                markers: tuple[str, ...] = DEFAULT_XPU_SKIP_MARKERS) -> bool:
    """A profile's skip marker caused the skip: one of ``markers`` decorates the test
    (dotted names, ``skipmarker.marker_matches``), or the reason is the text torch's XPU
    markers print."""
    from flow.workflows.reproduce.unskip.marker import marker_matches

    return (any(marker_matches(d, m) for d in decorators for m in markers)
            or any(_XPU_SKIP_REASON.search(r) for r in reasons))


def signal_death(exit_code: int) -> str | None:
    """The signal that ended a run (``SIGKILL``: what the OOM killer sends), from a negative
    exit code (the child itself) or 129-192 (a shell reporting 128 + N), else None."""
    import signal

    number = -exit_code if exit_code < 0 else exit_code - 128 if 128 < exit_code <= 192 else 0
    try:
        return signal.Signals(number).name if number else None
    except ValueError:
        return f"signal {number}"


def _killed(exit_code: int, output: str, failure_pattern: str | None) -> RunOutcome | None:
    """BLOCKED (CANNOT_VERIFY) naming the signal for a run a signal ended, unless the output
    shows the given failure pattern: a killed run (out of memory, a person) proves no bug."""
    name = signal_death(exit_code)
    if name is None or (failure_pattern and failure_pattern in output):
        return None
    return RunOutcome(kind=Outcome.BLOCKED, detail=(
        f"the run was killed by {name} (exit {exit_code}"
        f"{', out of memory?' if name == 'SIGKILL' else ''}): {_last_line(output)}"))


def interpret_pytest(exit_code: int, output: str, junit_xml: str | None = None,
                     decorators: list[str] | Callable[[], list[str]] | None = None,
                     markers: tuple[str, ...] = DEFAULT_XPU_SKIP_MARKERS,
                     failure_pattern: str | None = None) -> RunOutcome:
    """Pytest rules: FAILED or xfailed -> FAILED (unless the output shows an infra cause and
    not the given failure pattern: a missing device is not the bug); all skipped by an XPU marker ->
    SKIPPED_XPU_MARKER; other all-skipped -> BLOCKED (environmental skip); PASSED -> PASSED;
    nothing ran -> COLLECTED_ZERO; errors in setup, fixtures, teardown or collection with no
    failure in a test body -> BLOCKED with the first error's line (FAILED only when the
    given failure pattern is in the output).
    ``decorators`` are the names on the target test (``skipmarker.decorator_names``), or
    a function giving them, called only when every test was skipped."""
    killed = _killed(exit_code, output, failure_pattern)
    if killed is not None:
        return killed
    counts = parse_junit(junit_xml) if junit_xml else parse_summary(output)
    ran = counts.passed + counts.failed + counts.errors + counts.skipped + counts.xfailed + counts.xpassed
    if ran == 0:
        if exit_code in (0, 5) or is_collected_zero(exit_code, output):
            return RunOutcome(kind=Outcome.COLLECTED_ZERO, detail="no test ran")
        reason = infra_blocker(output) or _last_line(output)
        return RunOutcome(kind=Outcome.BLOCKED, detail=f"pytest exit {exit_code}: {reason}")
    if counts.failed or counts.xfailed:
        cause = infra_blocker(output)
        if cause and counts.failed and not (failure_pattern and failure_pattern in output):
            return RunOutcome(kind=Outcome.BLOCKED, detail=cause)
        return RunOutcome(kind=Outcome.FAILED,
                          detail=f"{counts.failed} failed, {counts.xfailed} xfailed")
    if counts.errors:
        # no test body failed: every error is in setup, a fixture, teardown or collection
        # (seed: "Do NOT report REPRODUCED on a setup or infra failure"), unless the
        # caller's failure pattern shows it is the bug
        if failure_pattern and failure_pattern in output:
            return RunOutcome(kind=Outcome.FAILED, detail=(
                f"{counts.errors} error(s) outside the test body, matched {failure_pattern!r}"))
        cause = infra_blocker(output)
        if cause:
            return RunOutcome(kind=Outcome.BLOCKED, detail=cause)
        first = counts.error_lines[0] if counts.error_lines else _last_line(output)
        return RunOutcome(kind=Outcome.BLOCKED, detail=(
            f"{counts.errors} error(s) in setup or collection, no test body ran to a failure: "
            f"{first}"))
    if counts.passed or counts.xpassed:
        return RunOutcome(kind=Outcome.PASSED, detail=f"{counts.passed} passed")
    reasons = counts.skip_reasons
    names = decorators() if callable(decorators) else decorators
    if is_xpu_skip(reasons, names or [], markers):
        return RunOutcome(kind=Outcome.SKIPPED_XPU_MARKER, detail="; ".join(reasons))
    return RunOutcome(kind=Outcome.BLOCKED,
                      detail="environmental skip: " + ("; ".join(reasons) or "no reason shown"))


def interpret_command(exit_code: int, output: str, failure_pattern: str | None) -> RunOutcome:
    """Non-pytest rules: exit 0 -> PASSED; non-zero with the failure pattern -> FAILED;
    non-zero with an infra cause -> BLOCKED; non-zero without the pattern -> BLOCKED
    (a different failure is not the bug). Without a pattern, any non-infra non-zero exit
    counts as FAILED (the caller had nothing more specific to match)."""
    if exit_code == 0:
        return RunOutcome(kind=Outcome.PASSED, detail="exit 0")
    killed = _killed(exit_code, output, failure_pattern)
    if killed is not None:
        return killed
    if failure_pattern and failure_pattern in output:
        return RunOutcome(kind=Outcome.FAILED, detail=f"exit {exit_code}, matched {failure_pattern!r}")
    cause = infra_blocker(output)
    if cause:
        return RunOutcome(kind=Outcome.BLOCKED, detail=cause)
    if failure_pattern:
        return RunOutcome(kind=Outcome.BLOCKED, detail=(
            f"exit {exit_code} without the failure pattern {failure_pattern!r}: {_last_line(output)}"))
    return RunOutcome(kind=Outcome.FAILED, detail=f"exit {exit_code}: {_last_line(output)}")


def setup_blocker(step_text: str, exit_code: int) -> str | None:
    """The blocker for a failed shell-block setup step (CANNOT_VERIFY(blocker=<the step>))."""
    return None if exit_code == 0 else f"setup step failed (exit {exit_code}): {step_text}"
