"""The outputs a flow's page renders, read from files written by the workflows' own models:
a batch report's buckets, a refactor's diff against its kept original, the CI rounds."""

from __future__ import annotations

from pathlib import Path

from flow.web.outputs import outputs


def test_a_batch_reports_rows_are_grouped_by_bucket(tmp_path: Path) -> None:
    """report.json (the batch's own BatchReport) becomes buckets in first-seen order."""
    from flow.workflows.reproduce.batch.entries import BatchReport, BatchRow, Bucket

    report = BatchReport(rows=[BatchRow(id="a", command="pytest a.py", bucket=Bucket.STILL_FAILING),
                               BatchRow(id="b", command="pytest b.py", bucket=Bucket.ALREADY_FIXED),
                               BatchRow(id="c", command="pytest c.py", bucket=Bucket.STILL_FAILING)],
                         counts={Bucket.STILL_FAILING: 2, Bucket.ALREADY_FIXED: 1})
    (tmp_path / "report.json").write_text(report.model_dump_json(indent=2))
    shown = outputs(tmp_path, tmp_path, {"data": {}})["buckets"]
    assert [("still_failing", ["a", "c"]), ("already_fixed", ["b"])] == [
        (b["bucket"], [r["id"] for r in b["rows"]]) for b in shown]


def test_a_refactor_shows_its_summary_and_the_diff_from_its_kept_original(tmp_path: Path) -> None:
    """final_summary.md is shown as written; the diff runs from original/<name> to the file."""
    (tmp_path / "original").mkdir()
    (tmp_path / "original" / "test_x.py").write_text("import torch\nx = 'cuda'\n")
    target = tmp_path / "checkout" / "test" / "test_x.py"
    target.parent.mkdir(parents=True)
    target.write_text("import torch\nx = device\n")
    (tmp_path / "final_summary.md").write_text("# Refactoring summary\n")
    shown = outputs(tmp_path, tmp_path, {"data": {"file": str(target), "rel": "test/test_x.py"}})
    assert ("# Refactoring summary\n", ["--- a/test/test_x.py", "+++ b/test/test_x.py", "@@ -1,2 +1,2 @@",
            " import torch", "-x = 'cuda'", "+x = device"]) == (
        shown["summary"], shown["diff"].splitlines())


def test_ci_rounds_come_from_the_fix_history(tmp_path: Path) -> None:
    """A ci-check flow's FixRound records are listed, one per round."""
    from flow.workflows.ci.decide import FixRound

    rounds = [FixRound(round=1, head_sha="abc", failures=["test_a"]).model_dump(),
              FixRound(round=2, head_sha="def", failures=[], pushed_commit="123").model_dump()]
    shown = outputs(tmp_path, tmp_path, {"data": {"fix_history": rounds}})
    assert [1, 2] == [r["round"] for r in shown["ci_rounds"]]


def test_only_plain_web_addresses_become_links() -> None:
    """http(s) with a host is linked; javascript:, data:, a bare path or spaces are not."""
    from flow.web.outputs import web_link

    given = ["https://github.example/o/r/pull/1", "http://ci.example/x", "javascript:alert(1)",
             "JAVASCRIPT:alert(1)", "data:text/html,x", "/repos/o/r", "https://a b", None, 7,
             "https:///nohost"]
    assert ["https://github.example/o/r/pull/1", "http://ci.example/x", None, None, None,
            None, None, None, None, None] == [web_link(g) for g in given]


def test_the_ci_pull_section_is_the_ci_workflows_alone(tmp_path: Path) -> None:
    """A flow of another workflow, even one with ``checks`` in its data, gets no PR section;
    a ci flow's checks come red first, then pending, then green."""
    from flow.web.outputs import ci_pull
    from flow.workflows.ci.decide import CiData, SeenCheck

    data = CiData(repo="o/r", number=3, pr_url="https://github.example/o/r/pull/3",
                  head_sha="a" * 40, checks_sha="a" * 40, checks=[
                      SeenCheck(name="lint", category="green"),
                      SeenCheck(name="build", category="pending", status="queued"),
                      SeenCheck(name="test", category="regression", conclusion="failure")])
    raw = {"workflow": "ci", "data": data.model_dump(mode="json")}
    shown = ci_pull(raw)
    assert shown is not None
    assert (["test", "build", "lint"], [("regression", 1), ("pending", 1), ("green", 1)],
            False) == ([c["name"] for c in shown["checks"]], shown["counts"], shown["stale"])
    assert ci_pull({**raw, "workflow": "reproduce"}) is None
    assert "ci" not in outputs(tmp_path, tmp_path, {**raw, "workflow": "refactor"})
