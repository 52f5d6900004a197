"""The contract suite: every registered workflow, driven only through the JSON it prints."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.contract.driver import CRASH_HOOK, Call, Driver, InProcess, Scenario
from tests.contract.scenarios import SCENARIOS

IDS = [s.name for s in SCENARIOS]


def _spec_schema() -> dict[str, Any]:
    from flow.cli.schemas import Spec

    return Spec.model_json_schema()


def _live_flow(ws: Path, store: Any) -> str:
    [flow_id] = store.live_flows(ws)
    return str(flow_id)


def _audited_revisions(ws: Path, store: Any) -> list[int]:
    """The revisions recorded in the audit log, in order (each must appear exactly once)."""
    return [r["revision"] for r in store.audit(ws, _live_flow(ws, store))
            if r.get("revision") is not None]


def _final_revision(ws: Path, store: Any) -> int:
    return int(json.loads(store.state_bytes(ws, _live_flow(ws, store)))["revision"])


def _final_state(ws: Path, store: Any) -> dict[str, Any]:
    text = store.state_bytes(ws, _live_flow(ws, store)).decode()
    for url in store.env(ws).values():  # printed commands name each workspace's own database
        text = text.replace(url, "<store>")
    raw = json.loads(text.replace(str(ws), "<ws>"))
    for key in ("revision", "created_at", "updated_at", "audit_record"):
        raw.pop(key)
    for h in raw["history"]:
        h.pop("at")
    for job in raw.get("jobs", {}).values():
        # a background job's clock, pid and start count (a kill before its launch restarts
        # it once) are not part of where the flow ends; what ran and how it ended is
        for key in ("started_at", "deadline_at", "pid", "starts", "history"):
            job.pop(key, None)
        result = job.get("result") or {}
        for key in ("duration_s", "header_bytes", "cut_bytes", "reason"):
            result.pop(key, None)
    return raw


@pytest.fixture(params=SCENARIOS, ids=IDS)
def scenario(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    sc: Scenario = request.param
    for k, v in sc.env.items():
        monkeypatch.setenv(k, v)
    sc.fresh()
    return sc


def test_every_spec_is_valid_and_resume_reemits_the_pending_one_identically(
        scenario: Scenario, tmp_path: Path, store: Any) -> None:
    """Driven to done through the printed commands: each object printed on the way (re-prints
    included) validates against the published spec schema, and --resume on a waiting flow
    prints the same object, from the cache and from a full load.

    Only the call that handed out a wave says need_agent; a re-print says waiting, with the
    very same tasks (ids, feed files, prompts) so a harness that lost them can restart them.
    """
    drv = Driver(tmp_path / "ws", store.env(tmp_path / "ws"))
    spec = drv.call(scenario.start).spec
    checked = 0
    while spec and spec["status"] != "done":
        if spec["status"] in {"need_agent", "waiting", "need_human"}:
            again = drv.shell(spec["resume_command"])
            if spec["status"] == "need_agent":
                assert "waiting" == again.spec["status"]
                assert spec["tasks"] == again.spec["tasks"]
                assert [t["task_id"] for t in spec["tasks"]] == [
                    t["task_id"] for t in again.spec["in_flight"]]
            else:
                assert spec == again.spec
            _drop_spec_cache(store, tmp_path / "ws", spec)
            cold = drv.shell(again.argv[0])
            assert again.spec == cold.spec
            assert again.spec == drv.shell(again.argv[0]).spec
            checked += 1
        nxt = drv.step(spec, scenario)
        spec = nxt.spec if nxt else None
    schema = _spec_schema()
    for call in drv.calls:
        assert call.spec is not None, call.stderr
        jsonschema.validate(call.spec, schema)
    assert (True, "done") == (checked >= 2, drv.calls[-1].spec["status"])


def _drop_spec_cache(store: Any, ws: Path, spec: dict[str, Any]) -> None:
    """Forget the cached spec, so the next --resume takes the full path."""
    if store.name == "file":
        (Path(spec["workspace"]) / ".last_spec.json").unlink()
    else:
        import psycopg

        with psycopg.connect(store.url(ws), autocommit=True) as conn:
            conn.execute("UPDATE flows SET spec = NULL WHERE flow_id = %s", (spec["flow_id"],))


def _clean_run(scenario: Scenario, tmp: Path, store: Any) -> tuple[dict[str, Any], list[int]]:
    """One uninterrupted run, in this process: where it ends, and after each of its calls how
    many persistence points the run had made (what the crash hook counts: each atomic
    ``os.replace``, and on the PostgreSQL store each transaction's end too)."""
    made = 0
    real_replace = os.replace

    def counting(*args: Any, **kwargs: Any) -> None:
        nonlocal made
        made += 1
        real_replace(*args, **kwargs)

    drv = InProcess(tmp / "clean", store.env(tmp / "clean"))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "replace", counting)
        if store.name == "postgres":
            import psycopg

            real_exit = psycopg.Transaction.__exit__

            def counting_exit(self: Any, *exc: Any) -> Any:
                nonlocal made
                made += 1
                return real_exit(self, *exc)

            mp.setattr(psycopg.Transaction, "__exit__", counting_exit)
        scenario.fresh()
        call: Call | None = drv.call(scenario.start)
        after = []
        while call is not None:
            after.append(made)
            spec = call.spec
            assert spec is not None
            call = drv.step(spec, scenario)
    assert "done" == spec["status"], spec
    return _final_state(tmp / "clean", store), after


def _kill_points(scenario: Scenario, points: int, when: str) -> list[int]:
    """The writes a kill lands on: every one, or for a scenario with ``kill_points``, the
    share of ``when`` along one even spread of 2 x kill_points writes (``before`` and
    ``after`` take turns, so between them they kill at twice as many distinct writes)."""
    if scenario.kill_points is None or points <= scenario.kill_points:
        return list(range(1, points + 1))
    total = min(points, 2 * scenario.kill_points)
    step = (points - 1) / (total - 1)
    spread = sorted({1 + round(i * step) for i in range(total)})
    return spread[0::2] if when == "before" else spread[1::2]


@pytest.mark.slow
def test_kill_at_each_persistence_point_then_resume_ends_the_same(
        scenario: Scenario, tmp_path: Path, store: Any) -> None:
    """A SIGKILL at any atomic write, just before it and just after it, then --resume, ends
    exactly where a clean run ends.

    One clean run gives where the flow ends and the writes each of its calls made. For each
    kill, only the call that holds the chosen write runs as its own process, armed by the
    crash hook with the count the calls before it made; the calls before it and the resume
    after the kill run in this process (InProcess), so a replay pays for the flow's work, not
    for interpreter starts.
    """
    expected, after = _clean_run(scenario, tmp_path, store)
    points = after[-1]
    assert points > 5
    for when in ("before", "after"):
        for n in _kill_points(scenario, points, when):
            _kill_and_resume(scenario, tmp_path, store, when, n, after, expected)


def _kill_and_resume(scenario: Scenario, tmp_path: Path, store: Any, when: str, n: int,
                     after: list[int], expected: dict[str, Any]) -> None:
    scenario.fresh()
    ws = tmp_path / f"{when}-{n}"
    holder = next(i for i, made in enumerate(after) if made >= n)
    fast = InProcess(ws, store.env(ws))
    spec: dict[str, Any] | None = None
    for _ in range(holder):
        call = fast.call(scenario.start) if spec is None else fast.step(spec, scenario)
        assert call is not None and call.spec is not None
        spec = call.spec
    counter = tmp_path / f"counter-{when}-{n}"
    counter.write_text(str(after[holder - 1] if holder else 0))
    armed = Driver(ws, {**store.env(ws), "PYTHONPATH": str(CRASH_HOOK),
                        "ORCHESTRATOR_TEST_CRASH_AT": str(n),
                        "ORCHESTRATOR_TEST_CRASH_COUNTER": str(counter),
                        "ORCHESTRATOR_TEST_CRASH_WHEN": when})
    killed = armed.call(scenario.start) if spec is None else armed.step(spec, scenario)
    assert killed is not None and killed.code in (-9, 137), \
        f"point {n} ({when}): call {holder} was not killed ({killed and killed.code})"
    flows = store.live_flows(ws)
    call = fast.call(scenario.start) if not flows else fast.call(
        ["--flow", flows[0], "--resume"])
    for _ in range(200):
        assert call is not None and call.spec is not None, call
        nxt = fast.step(call.spec, scenario)
        if nxt is None:
            break
        call = nxt
    assert "done" == call.spec["status"]
    assert expected == _final_state(ws, store), \
        f"state differs after a kill at point {n} ({when})"
    assert _audited_revisions(ws, store) == list(range(1, _final_revision(ws, store) + 1)), \
        f"audit log lost or doubled a record after a kill at point {n} ({when})"


def test_concurrent_feeds_never_both_advance(scenario: Scenario, tmp_path: Path,
                                             store: Any) -> None:
    """Two callers feeding the same task at once: one applies it, the other changes nothing."""
    drv = Driver(tmp_path / "ws", store.env(tmp_path / "ws"))
    spec = drv.call(scenario.start).spec
    while spec["status"] not in {"need_agent", "waiting"}:
        spec = drv.step(spec, scenario).spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(scenario.answer(task)))
    procs = [subprocess.Popen(task["feed_command"], shell=True, stdout=subprocess.PIPE,
                              env=drv.env) for _ in range(2)]
    outs = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    fed = [r for r in store.audit(tmp_path / "ws", spec["flow_id"]) if r["event"] == "fed"]
    assert 1 == len([f for f in fed if f["task_id"] == task["task_id"]])
    # The caller that applied it may hand out the next wave (need_agent); the other only
    # re-prints it (waiting). Apart from that they print the same flow position and tasks.
    assert [] == [o for o in outs if o["status"] == "error"]
    assert sum(o["status"] == "need_agent" for o in outs) <= 1
    strip = {"status", "in_flight", "note"}
    assert [{k: v for k, v in o.items() if k not in strip} for o in outs][0] == \
        [{k: v for k, v in o.items() if k not in strip} for o in outs][1]


def test_lock_held_gives_busy_with_the_holder(scenario: Scenario, tmp_path: Path,
                                              store: Any) -> None:
    """While another caller holds the lock, a call waits a bounded time then reports busy."""
    ws = tmp_path / "ws"
    drv = Driver(ws, {**store.env(ws), "ORCHESTRATOR_LOCK_TIMEOUT": "0.3"})
    spec = drv.call(scenario.start).spec
    before = store.state_bytes(ws, spec["flow_id"])
    with store.lock(ws, spec["flow_id"]):
        call = drv.call(["--flow", spec["flow_id"], "--resume", "--harness", "codex"])
    assert 3 == call.code
    assert "busy" == call.spec["error"]["code"]
    assert os.getpid() == call.spec["error"]["holder"]["pid"]
    assert before == store.state_bytes(ws, spec["flow_id"])


def _pending(drv: Driver, sc: Scenario) -> dict[str, Any]:
    """The first spec with a task to feed. A ``waiting`` on a background job the flow owns
    has none: it is polled (its resume command) until the job ends; a call on a loaded
    machine can outlive its foreground budget inside a job, and the spec it prints then is
    that wait (the refusal tests once took ``tasks[0]`` of it)."""
    spec = drv.call(sc.start).spec
    while spec["status"] not in {"need_agent", "waiting"} or spec.get("waiting_on") == "job":
        spec = drv.step(spec, sc).spec
    return spec


def test_stale_and_duplicate_feeds_leave_the_state_untouched(scenario: Scenario,
                                                              tmp_path: Path,
                                                              store: Any) -> None:
    """Feeding an old task anew, a foreign file, or changed content is refused byte-for-byte."""
    ws = tmp_path / "ws"
    drv = Driver(ws, store.env(ws))
    spec = _pending(drv, scenario)
    first = spec["tasks"][0]
    Path(first["feed_file"]).write_text(json.dumps(scenario.answer(first)))
    spec = drv.shell(first["feed_command"]).spec
    before = store.state_bytes(ws, spec["flow_id"])
    again = drv.shell(first["feed_command"])
    assert 0 == again.code and before == store.state_bytes(ws, spec["flow_id"])
    foreign = tmp_path / "elsewhere.json"
    foreign.write_text(json.dumps(scenario.answer(first)))
    call = drv.call(["--flow", spec["flow_id"], "--feed", first["feed_as"], "--feed-file",
                     str(foreign)])
    assert (2, "stale_feed") == (call.code, call.spec["error"]["code"])
    changed = {**scenario.answer(first), "agent_id": "someone-else"}
    Path(first["feed_file"]).write_text(json.dumps(changed))
    call = drv.shell(first["feed_command"])
    assert (2, "already_applied") == (call.code, call.spec["error"]["code"])
    assert before == store.state_bytes(ws, spec["flow_id"])


def test_missing_empty_and_malformed_feeds_are_refused(scenario: Scenario,
                                                        tmp_path: Path, store: Any) -> None:
    """No result, an empty file, bad JSON or a JSON list never count as a result."""
    ws = tmp_path / "ws"
    drv = Driver(ws, store.env(ws))
    spec = _pending(drv, scenario)
    task = spec["tasks"][0]
    before = store.state_bytes(ws, spec["flow_id"])
    for content, code in ((None, "feed_missing"), ("", "feed_empty"), ("{nope", "feed_malformed"),
                          ("[]", "feed_malformed"), ("{}", "invalid_feed")):
        feed = Path(task["feed_file"])
        if content is None:
            feed.unlink(missing_ok=True)
        else:
            feed.write_text(content)
        call = drv.shell(task["feed_command"])
        if code == "invalid_feed" and call.code == 0:
            continue  # a workflow whose feed legitimately accepts {} (the analyst)
        assert (2, code) == (call.code, call.spec["error"]["code"])
        assert call.spec["error"]["hint"]
        assert before == store.state_bytes(ws, spec["flow_id"])


def test_refusals_hold_when_the_first_call_outlives_its_budget_in_a_job(
        tmp_path: Path, pg_cluster: Any) -> None:
    """The reproduce flow on the PostgreSQL store with a 1 s foreground budget: its first
    call answers ``waiting`` on its stage-1 job (as a loaded machine's does with the usual
    budget); polled to its first task, every malformed feed is still refused and the row
    stays byte for byte."""
    from tests.contract.scenarios import REPRODUCE
    from tests.contract.stores import PgStoreView

    store = PgStoreView(pg_cluster)
    ws = tmp_path / "ws"
    drv = Driver(ws, {**store.env(ws), "ORCHESTRATOR_FOREGROUND_S": "1"})
    # a passing stage-1 run that outlives the 1 s budget however fast the call is
    start = [*REPRODUCE.start[:-1], 'python -c "import time; time.sleep(2)"']
    first = drv.call(start).spec
    assert ("waiting", "job", []) == (first["status"], first.get("waiting_on"), first["tasks"])
    spec = first
    while spec["status"] != "need_agent":
        spec = drv.step(spec, REPRODUCE).spec
    task = spec["tasks"][0]
    before = store.state_bytes(ws, spec["flow_id"])
    for content, code in (("{nope", "feed_malformed"), ("[]", "feed_malformed"),
                          ("{}", "invalid_feed")):
        Path(task["feed_file"]).write_text(content)
        call = drv.shell(task["feed_command"])
        assert (2, code) == (call.code, call.spec["error"]["code"])
        assert before == store.state_bytes(ws, spec["flow_id"])
