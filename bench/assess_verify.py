"""Bench: assess + verify on a 10,000-line PyTorch-style test file, and the mechanical rules
on a 4,000-line one.

The files are built by repeating the large fixture's classes under fresh names until they
reach the target size. The "after" text is the same file with the decorator rules applied
by plain text substitution (setup only, not timed). Prints one JSON object:

- ``median_s``: median wall time of ``assess_source(before)`` + ``verify(...)`` (pyflakes
  included), ``ast_parse_median_s`` and the median of their per-pair ratios (each pair run
  back to back, so a shared machine's load hits both). Target: median <= 1.0 s.
- ``codemod_median_s``: TR001 + TR002 (``decorator_rules``, one parse, one pass, usort on
  the import block) on the ``--codemod-lines`` file, ``libcst_parse_median_s`` and their
  ratio. Target: ratio <= 2.0.

Run: ``python bench/assess_verify.py [--lines 10000] [--codemod-lines 4000] [--repeat 7]``
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flow.workflows.refactor.analysis import AnalystReport  # noqa: E402
from flow.workflows.refactor.assess import assess_source  # noqa: E402
from flow.workflows.refactor.verify import VerifyInput, verify  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "refactor" / "large" / "large_ops_before.py"
TARGET_S = 1.0
CODEMOD_TARGET_RATIO = 2.0


def build(lines: int) -> str:
    """Return a file of at least ``lines`` lines: the fixture's header, then renamed copies of its body."""
    text = FIXTURE.read_text(encoding="utf-8")
    main = text.index('\nif __name__ == "__main__":')
    first_class = text.index("\nclass ")
    header, body = text[:first_class], text[first_class:main]
    names = re.findall(r"^class (\w+)\(", body, flags=re.M)
    chunks = [header]
    copy = 0
    while sum(c.count("\n") for c in chunks) < lines:
        chunk = body
        for name in names:
            chunk = re.sub(rf"\b{name}\b", f"{name}R{copy}", chunk)
        chunks.append(chunk)
        copy += 1
    chunks.append(text[main:])
    return "".join(chunks)


def refactor_text(before: str) -> str:
    """Apply the decorator rules by text substitution (bench setup only)."""
    after = re.sub(r"@onlyCUDA\n|@onlyOn\([^)]*\)\n", "@onlyAccelerator\n", before)
    after = re.sub(r"\n\s*@onlyNativeDeviceTypes(And\([^)]*\))?(?=\n)", "", after)
    return after.replace("    onlyCUDA,\n", "    onlyAccelerator,\n")


def identity_plan(before: str) -> AnalystReport:
    """Every test stays in its class with the strategy its instantiation implies."""
    a = assess_source(before, "bench.py")
    device = {i.target for i in a.instantiations if i.kind == "device_type"}
    rows = [
        {"test": f"{c.name}.{t.name}", "strategy": "device_agnostic" if c.name in device else "cpu_only", "target_class": c.name}
        for c in a.classes
        for t in c.tests
    ]
    return AnalystReport.model_validate({"file": "bench.py", "classifications": rows})


def paired_ratio(fn, ref, repeat: int) -> tuple[float, float, float]:
    """(median of fn, median of ref, median of the per-pair ratios), the two run alternately.

    Alternating keeps both under the same load on a shared machine, so the ratio is fair
    even when the absolute times are not.
    """
    fn(), ref()
    a, b, r = [], [], []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        mid = time.perf_counter()
        ref()
        end = time.perf_counter()
        a.append(mid - start)
        b.append(end - mid)
        r.append((mid - start) / (end - mid))
    return statistics.median(a), statistics.median(b), statistics.median(r)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--codemod-lines", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    before = build(args.lines)
    after = refactor_text(before)
    plan = identity_plan(before)
    inp = VerifyInput(path="bench.py", before=before, after=after, plan=plan)

    def run() -> None:
        # As in the workflow: phase 1's assessment is handed to verify, not recomputed.
        assessment = assess_source(before, "bench.py")
        verify(inp.model_copy(update={"before_assessment": assessment}))

    report = verify(inp)
    assess = assess_source(before, "bench.py")
    median, parse, parse_ratio = paired_ratio(run, lambda: ast.parse(before), args.repeat)
    import libcst

    from flow.workflows.refactor.codemods import decorator_rules
    from flow.workflows.refactor.imports import usort_config

    small = build(args.codemod_lines)
    config = usort_config()
    edits = len(decorator_rules(small, usort_config=config).changes)
    codemod, cst_parse, ratio = paired_ratio(lambda: decorator_rules(small, usort_config=config),
                                             lambda: libcst.parse_module(small), args.repeat)
    print(json.dumps({
        "bench": "assess_verify",
        "lines": before.count("\n"),
        "classes": len(assess.classes),
        "tests": len(assess.test_ids()),
        "findings": len(report.findings),
        "repeat": args.repeat,
        "median_s": round(median, 4),
        "ast_parse_median_s": round(parse, 4),
        "ratio_to_ast_parse": round(parse_ratio, 2),
        "target_s": TARGET_S,
        "within_target": median <= TARGET_S,
        "codemod_lines": small.count("\n"),
        "codemod_edits": edits,
        "codemod_median_s": round(codemod, 4),
        "libcst_parse_median_s": round(cst_parse, 4),
        "codemod_ratio_to_libcst_parse": round(ratio, 2),
        "codemod_within_target": ratio <= CODEMOD_TARGET_RATIO,
    }))


if __name__ == "__main__":
    main()
