"""Bench: one CI tick (flow.workflows.ci.observe) on a PR with 300 check runs over the fake GitHub server.

Counts HTTP requests (as the server saw them), 304s, rate-limit units and wall time for a
cold first tick and a second tick on the unchanged PR (warm ETag cache), in three CI
states, plus the tick that waits for the debugger's push (head still the debugged commit).
Prints one JSON object.

Target: at most 5 requests for a tick the flow repeats on an unchanged PR. Which ticks
the flow repeats (`repeated_in_flow`):
- pending: the polling tick, every cron interval until CI finishes. Held to the target.
- awaiting_push: the tick after the debugger pushed, every interval until the PR head
  moves. Held to the target.
- green: the first tick ends the watch (all_green), so its unchanged second tick does not
  occur in the flow; measured and reported anyway, not held to the target.
- failing: the first tick hands the regression to the debugger. Its unchanged second tick
  occurs only after a debugger round that pushed nothing (once per fix round, at most
  ORCHESTRATOR_CI_MAX_ROUNDS times), never as polling; reported, not held to the target.

Run: .venv/bin/python bench/ci_poll.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flow.github.client import ClientSettings, connect  # noqa: E402
from flow.workflows.ci.observe import observe  # noqa: E402
from tests.fakegithub import FakeGitHub  # noqa: E402

HEAD, BASE = "a" * 40, "b" * 40
CHECKS, WORKFLOWS = 300, 10
TARGET = 5
ENDPOINTS = (("/pulls/", "pull"), ("/check-runs", "check_runs"), ("/status", "statuses"),
             ("/actions/runs", "workflow_runs"), ("/compare/", "merge_base"), ("/logs", "log_redirect"),
             ("/_blob/", "log_download"))
# state -> (is its second tick one the flow repeats, why)
STATES = {
    "green": (False, "all_green ends the watch on the first tick: the second tick does not occur "
                     "in the flow"),
    "pending": (True, "the polling tick: repeated every cron interval while CI runs"),
    "failing": (False, "the first tick hands off to the debugger: the second occurs only after a "
                       "fix round that pushed nothing (at most max_rounds times), not as polling"),
    "awaiting_push": (True, "repeated every cron interval until the PR head leaves the debugged "
                            "commit"),
}


def build(fake: FakeGitHub, state: str) -> None:
    repo = fake.repo("octo/proj")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)
    per = CHECKS // WORKFLOWS
    for w in range(WORKFLOWS):
        wf = repo.add_workflow(f"wf{w}", f".github/workflows/wf{w}.yml")
        run = repo.add_run(wf, HEAD)
        for j in range(per):
            job = repo.add_job(run, f"job {j:02d}", "success")
            if state == "pending" and w == 0 and j < 5:
                job.status, job.conclusion = "in_progress", None
            if state == "failing" and w == 0 and j < 2:
                job.complete("failure", "FAILED t.py::test_x - AssertionError\n")
        base_run = repo.add_run(wf, BASE)
        if state == "failing":
            for j in range(per):
                repo.add_job(base_run, f"job {j:02d}", "success")
    repo.add_status(HEAD, "ci/legacy", "success")


def tick(fake: FakeGitHub, cache: Path, awaiting_head: str | None = None,
         kept: list[object] | None = None) -> dict[str, object]:
    """One observation; `kept` carries the required-checks reading from tick to tick, as the
    flow keeps it in its data (read once per head commit)."""
    client = connect(fake.base_url, fake.token, settings=ClientSettings(seconds_between_writes=None))
    fake.reset_log()
    budget = fake.rate_remaining
    t0 = time.perf_counter()
    kept = kept if kept is not None else []
    obs = observe(client, "octo/proj", 1, cache, awaiting_head=awaiting_head,
                  known_required=kept[0] if kept else None)  # type: ignore[arg-type]
    if obs.required is not None:
        kept[:] = [obs.required]
    wall = time.perf_counter() - t0
    cats: dict[str, int] = {}
    for v in obs.classification.verdicts:
        cats[v.category] = cats.get(v.category, 0) + 1
    kinds: dict[str, int] = {}
    for r in fake.requests:
        kind = next((name for part, name in ENDPOINTS if part in r.path), r.path)
        kinds[kind] = kinds.get(kind, 0) + 1
    return {"requests": len(fake.requests), "not_modified": sum(r.status == 304 for r in fake.requests),
            "rate_limit_spent": budget - fake.rate_remaining, "by_endpoint": kinds,
            "checks_read": obs.checks_read, "wall_ms": round(wall * 1000, 1), "categories": cats}


def measure(state: str) -> dict[str, object]:
    with FakeGitHub() as fake, tempfile.TemporaryDirectory() as tmp:
        build(fake, "failing" if state == "awaiting_push" else state)
        cache = Path(tmp) / "etags.json"
        kept: list[object] = []
        first = tick(fake, cache, kept=kept)
        if state == "awaiting_push":  # the debugger pushed a fix for the red head; it has not landed yet
            again = tick(fake, cache, awaiting_head=HEAD, kept=kept)
            key = "awaiting_tick"
        else:
            again = tick(fake, cache, kept=kept)
            key = "unchanged_tick"
    meets = again["requests"] <= TARGET  # type: ignore[operator]
    return {"first_tick": first, key: again, "repeated_in_flow": STATES[state][0], "why": STATES[state][1],
            "meets_target": meets}


def main() -> None:
    out: dict[str, object] = {"check_runs": CHECKS, "target_unchanged_requests": TARGET}
    for state in STATES:
        out[state] = measure(state)
    repeated = [s for s, (again, _) in STATES.items() if again]
    out["repeated_ticks_meet_target"] = all(out[s]["meets_target"] for s in repeated)  # type: ignore[index]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
