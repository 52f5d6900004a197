"""Batch files in, the callers' buckets and reports out."""
from __future__ import annotations

import json

import pytest

from flow.workflows.reproduce.batch.entries import (
    BatchEntry, Bucket, InvalidEntry, build_report, bucket_of, parse_batch, render_json,
    render_markdown,
)
from flow.workflows.reproduce.verdict.models import (
    CannotVerify, NoReproducer, NotReproduced, Reproduced, Stage,
)

TEXT = """# nightly failures
test/xpu/test_ops_xpu.py::TestCommonXPU::test_a_xpu

TestFoo::test_bar
"""
JSON_LIST = json.dumps([
    {"id": "a", "command": "pytest t.py::a", "failure_pattern": "boom"},
    {"id": "b", "command": ""},
    {"id": "c", "command": "pytest t.py::c", "stage": "weekly"},
    {"id": "d", "command": "pytest t.py::again", "repeat": 0},
    "not an object",
])
JSONL = '{"id": "x", "command": "python -c \\"1/0\\""}\n{oops\n'


@pytest.mark.parametrize("text,expected", [
    (TEXT, [("entry-1", True), ("entry-2", True)]),
    (JSON_LIST, [("a", True), ("b", False), ("c", False), ("d", False), ("entry-5", False)]),
    (JSONL, [("x", True), ("entry-2", False)]),
    (json.dumps({"entries": [{"command": "pytest t.py"}]}), [("entry-1", True)]),
])
def test_parse_batch(text: str, expected: list[tuple[str, bool]]) -> None:
    """Text, JSON and JSON lines parse; bad rows become invalid entries."""
    assert expected == [(e.id, isinstance(e, BatchEntry)) for e in parse_batch(text)]


@pytest.mark.parametrize("text,ids", [
    (json.dumps([{"id": "a", "command": "x"}, {"id": "b", "command": "y"},
                 {"id": "a", "command": "z"}]), ["a"]),
    (json.dumps([{"command": "x"}, {"id": "entry-1", "command": "y"}]), ["entry-1"]),
    ('{"id": "q", "command": "x"}\n{"id": "q", "command": "x"}\n', ["q"]),
])
def test_a_repeated_id_refuses_the_whole_batch_naming_it(text: str, ids: list[str]) -> None:
    """Every id once (the rule campaign items share): the repeated ids are named."""
    from flow.core.errors import WorkflowInputError

    with pytest.raises(WorkflowInputError) as caught:
        parse_batch(text)
    assert ("duplicate_ids", ids) == (caught.value.code, caught.value.details["ids"])


@pytest.mark.parametrize("verdict,bucket", [
    (Reproduced(stage=Stage.NIGHTLY, refined_command="pytest t.py"), Bucket.STILL_FAILING),
    (NotReproduced(checked_stages=[Stage.NIGHTLY], reason="passes"), Bucket.ALREADY_FIXED),
    (NoReproducer(reason="collected_zero"), Bucket.INVALID_ENTRY),
    (CannotVerify(stage=Stage.CI_ENV, blocker="no_wheel_extracted"), Bucket.UNVERIFIED),
    (None, Bucket.UNVERIFIED),
])
def test_bucket_of(verdict: object, bucket: Bucket) -> None:
    """Each verdict falls in the bucket the callers use; no verdict is unverified."""
    assert bucket == bucket_of(verdict)  # type: ignore[arg-type]


def test_report_markdown_and_json() -> None:
    """The report counts every bucket and lists each entry once, in batch order."""
    entries = [BatchEntry(id="a", command="pytest t.py::a | x"), BatchEntry(id="b", command="pytest t.py::b"),
               BatchEntry(id="c", command="pytest t.py::c"), InvalidEntry(id="d", error="command: too short")]
    verdicts = {"a": Reproduced(stage=Stage.NIGHTLY, refined_command="pytest t.py::a"),
                "b": NotReproduced(checked_stages=[Stage.NIGHTLY], reason="passes on nightly")}
    report = build_report(entries, verdicts)
    markdown = render_markdown(report)
    data = json.loads(render_json(report))
    assert (
        {"still_failing": 1, "already_fixed": 1, "invalid_entry": 1, "unverified": 1},
        ["a", "b", "c", "d"],
        True, True, True,
    ) == (
        data["counts"], [r["id"] for r in data["rows"]],
        "| a | `pytest t.py::a \\| x` | REPRODUCED | `pytest t.py::a` |   | nightly on origin/main |"
        in markdown,
        "## Unverified (1)" in markdown and "no verdict recorded" in markdown,
        "## Invalid entry (1)" in markdown,
    )
