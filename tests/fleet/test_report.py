"""What an operator reads about a campaign on a real PostgreSQL server: a reproduce campaign
is a fleet-wide batch, so ``status --campaign`` shows each item's verdict and writes the very
report ``reproduce --batch`` writes (its buckets and rows), and shows whether each holder is
alive; a done item keeps no stale error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg

from tests.contract.driver import ROOT, Driver
from tests.contract.scenarios import REPRODUCE
from tests.terminal import on_a_terminal

CALC = ["--profile", "local", "--source-dir", str(ROOT / "examples/calc"), "--ci-commit",
        "a" * 40]
BATCH = [{"id": "add", "command": "pytest tests/test_calc.py::test_add"},
         {"id": "mean", "command": "pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"}]


def _drive_campaign(drv: Driver, first: dict[str, Any]) -> dict[str, Any]:
    """Follow the JSON as a harness does until the campaign says it is finished."""
    spec = first
    for _ in range(200):
        if spec["status"] == "done":
            if spec.get("outcome") == "campaign_finished":
                return spec
            spec = drv.call(["campaign", "n"]).spec
            continue
        call = drv.step(spec, REPRODUCE)
        assert call is not None and call.spec is not None, call
        spec = call.spec
    raise AssertionError("the campaign never finished")


def _rows(markdown: str) -> list[tuple[str, str]]:
    """(bucket title, entry id) of every row of a batch report."""
    out, bucket = [], ""
    for line in markdown.splitlines():
        if line.startswith("## "):
            bucket = line[3:].rsplit(" (", 1)[0]
        elif line.startswith("| ") and not line.startswith("| id ") and bucket:
            out.append((bucket, line.split("|")[1].strip()))
    return out


def test_a_reproduce_campaign_reports_each_verdict_in_the_batch_buckets(
        tmp_path: Path, pg_url: str) -> None:
    """Two batch entries run as a campaign: the call that finds it finished and status
    --campaign write report.md with the same buckets and rows as reproduce --batch of the
    same file; each done item shows its verdict and who finished it; no stale error."""
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps(BATCH))
    drv = Driver(tmp_path / "fleet", {"ORCHESTRATOR_STORE": pg_url, "ORCHESTRATOR_WORKER": "a"})
    first = drv.call(["reproduce", "--batch", str(batch), "--campaign", "n", *CALC])
    assert 0 == first.code, first.stderr
    with psycopg.connect(pg_url) as conn:  # an error of an earlier attempt, since mended
        conn.execute("UPDATE campaign_items SET last_error = 'busy: an earlier call' "
                     "WHERE item_id = 'add'")
    end = _drive_campaign(drv, first.spec)
    report = Path(end["campaign"]["report"]["report_path"])
    shown = drv.call(["status", "--campaign", "n", "--json"]).spec["campaigns"][0]
    assert [] == shown["errors"]
    done = {d["item"]: d for d in shown["done"]}
    assert ["add", "mean"] == sorted(done)
    for item in done.values():
        assert ("a", item["verdict"]["verdict"]) == (item["by"], item["outcome"])
    assert sum(shown["report"]["counts"].values()) == 2

    alone = Driver(tmp_path / "alone", {})
    spec = alone.call(["reproduce", "--batch", str(batch), *CALC]).spec
    for _ in range(200):
        if spec["status"] == "done":
            break
        spec = alone.step(spec, REPRODUCE).spec
    single = Path(spec["report_path"]).read_text()
    assert _rows(single) and _rows(single) == _rows(report.read_text())
    assert single.splitlines()[2] == report.read_text().splitlines()[2]  # the count line
    _, table = on_a_terminal(tmp_path / "fleet", "status", "--campaign", "n", env=drv.env,
                             stderr=False)
    verdict = done["add"]["outcome"]
    assert f"done add: {verdict} by a" in table and str(report) in table


def test_status_says_whether_each_holder_is_alive(tmp_path: Path, pg_url: str) -> None:
    """A holder that renewed its lease is alive; one whose lease ran out (its harness died)
    is shown NOT ALIVE, whatever became of the pid of the call that claimed it."""
    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"id": "i0", "argv": ["start", "tick", "i0"]}]))
    drv = Driver(tmp_path / "A", {"ORCHESTRATOR_PLUGINS": "tests.fleet.tickflow",
                                  "ORCHESTRATOR_STORE": pg_url, "ORCHESTRATOR_WORKER": "a",
                                  "ORCHESTRATOR_LEASE_S": "600"})
    assert 0 == drv.call(["campaign", "c", "--items", str(items)]).code
    [lease] = drv.call(["status", "--campaign", "c", "--json"]).spec["campaigns"][0]["leases"]
    assert (True, "a") == (lease["alive"], lease["holder"])
    # its harness dies: nothing renews the lease, which runs out (moved to 3 s ago here
    # rather than waited for, so a busy machine cannot make the first reading late)
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE campaign_items SET lease_until = now() - interval '3 seconds' "
                     "WHERE item_id = 'i0'")
    [lease] = drv.call(["status", "--campaign", "c", "--json"]).spec["campaigns"][0]["leases"]
    assert (False, "a") == (lease["alive"], lease["holder"])
    assert lease["last_seen_s_ago"] >= 2
    _, table = on_a_terminal(tmp_path / "A", "status", "--campaign", "c", env=drv.env,
                             stderr=False)
    assert "i0: a on " in table and "NOT ALIVE (lease expired)" in table
