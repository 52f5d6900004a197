"""The collect-only adapter: confirm the test count with a real ``pytest --collect-only``.

``collect_tests`` runs pytest through the process runner (argument list, no shell) and returns the
node ids; ``compare_collected`` (pure) maps collected method names back to the original
tests and reports tests that vanished. Collected counts are not compared directly: on a
CPU-only machine a device-specific class (``only_for="cuda"``) collects nothing, so the
tests the plan marks ``device_specific`` may legitimately disappear there.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.assess import Assessment
from flow.workflows.refactor.errors import CollectError
from flow.workflows.refactor.findings import Finding


class CollectResult(BaseModel):
    """What one ``pytest --collect-only -q`` run produced."""

    model_config = ConfigDict(extra="forbid")

    node_ids: list[str]
    returncode: int
    stderr_tail: str


def collect_argv(file: Path, python: str = sys.executable) -> list[str]:
    """``python -m pytest FILE --collect-only -q`` (no cache written into the checkout)."""
    return [python, "-m", "pytest", str(file), "--collect-only", "-q", "-p", "no:cacheprovider"]


_NODE = re.compile(r"^[^\s:][^:]*\.py::\S")


def read_collected(file: Path, code: int, output: str) -> CollectResult:
    """The node ids of a collect-only run's output (the lines before pytest's summary that
    name a ``file.py::...`` node); ``CollectError`` when it did not collect (exit not 0 or 5)."""
    ids = []
    for line in output.splitlines():
        if line.startswith("=") or line.startswith("no tests ran"):
            break  # the summary and the warnings after it name nodes too: not collected items
        if _NODE.match(line):
            ids.append(line.strip())
    result = CollectResult(node_ids=ids, returncode=code, stderr_tail=output[-2000:])
    if code not in (0, 5):
        # pytest's own lines naming the error (E   ImportError: ...) first: the tail alone can
        # cut them off for a long traceback
        named = [line.strip() for line in output.splitlines() if re.match(r"E\s+\w*(Error|Exception)\b", line)][:3]
        raise CollectError(str(file), f"exited {code}: " + "".join(f"{n!r}; " for n in named)
                           + f"{result.stderr_tail[-400:]!r}")
    return result


def collect_tests(file: Path, cwd: Path, *, python: str = sys.executable, timeout: float = 600.0,
                  env: dict[str, str] | None = None) -> CollectResult:
    """Run the collect-only command in ``cwd`` in the foreground; return the node ids (the
    workflow runs the same command as a background job, ``fixloop._collected``).

    Raises ``CollectError`` when pytest fails to collect (exit code not 0 or 5), cannot be
    started (no such interpreter) or times out.
    """
    from flow.core import proc as runner

    got = runner.capture(collect_argv(file, python), cwd=cwd,
                         env={**os.environ, **(env or {})}, timeout=timeout)
    if got.timed_out or got.code == runner.NOT_FOUND:
        raise CollectError(str(file), f"could not run {python!r}: {got.problem}")
    return read_collected(file, got.code, got.text + got.stderr)


def base_test(method: str, known: set[str]) -> str | None:
    """Map a collected method (``test_mul_cpu_float32``, ``test_pad_n_1``) to the known test it came from.

    The longest known name that equals ``method`` or prefixes it followed by ``_`` wins;
    None when nothing matches.
    """
    parts = method.split("_")
    for end in range(len(parts), 0, -1):
        candidate = "_".join(parts[:end])
        if candidate in known:
            return candidate
    return None


def compare_collected(before: CollectResult, after: CollectResult, assessment: Assessment,
                      plan: AnalystReport | None, path: str) -> list[Finding]:
    """Report original tests collected before but not after (device-specific ones excepted)."""
    tests = {t.name: (c.name, t.start) for c in assessment.classes for t in c.tests}
    known = set(tests)
    exempt = {c.test_name for c in plan.classifications if c.strategy == "device_specific"} if plan else set()

    def bases(result: CollectResult) -> set[str]:
        found = (base_test(node.rsplit("::", 1)[-1].split("[", 1)[0], known) for node in result.node_ids)
        return {b for b in found if b is not None}

    missing = sorted(bases(before) - bases(after) - exempt)
    return [
        Finding(check="collect_only", code="V203", severity="error", file=path, line=tests[name][1],
                message=f"{tests[name][0]}.{name} was collected before the refactor but not after; pytest --collect-only lost it")
        for name in missing
    ]
