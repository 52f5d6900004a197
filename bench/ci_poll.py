"""Bench: one CI tick on a PR with 300 check runs over the fake GitHub server.

Counts HTTP requests (as the server saw them) and wall time for a cold tick and for
a second tick on the unchanged PR (warm ETag cache), in three CI states. Target: at
most 5 requests for the unchanged PR. Prints one JSON object.

Run: .venv/bin/python bench/ci_poll.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from flow.ci.observe import observe  # noqa: E402
from flow.github.client import ClientSettings, connect  # noqa: E402
from tests.fakegithub import FakeGitHub  # noqa: E402

HEAD, BASE = "a" * 40, "b" * 40
CHECKS, WORKFLOWS = 300, 10
TARGET = 5


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


def tick(fake: FakeGitHub, cache: Path) -> dict[str, object]:
    client = connect(fake.base_url, fake.token, settings=ClientSettings(seconds_between_writes=None))
    fake.reset_log()
    t0 = time.perf_counter()
    obs = observe(client, "octo/proj", 1, cache)
    wall = time.perf_counter() - t0
    cats: dict[str, int] = {}
    for v in obs.classification.verdicts:
        cats[v.category] = cats.get(v.category, 0) + 1
    return {"requests": len(fake.requests), "not_modified": sum(r.status == 304 for r in fake.requests),
            "wall_ms": round(wall * 1000, 1), "categories": cats}


def main() -> None:
    out: dict[str, object] = {"check_runs": CHECKS, "target_unchanged_requests": TARGET}
    for state in ("green", "pending", "failing"):
        with FakeGitHub() as fake, tempfile.TemporaryDirectory() as tmp:
            build(fake, state)
            cache = Path(tmp) / "etags.json"
            cold = tick(fake, cache)
            budget = fake.rate_remaining
            warm = tick(fake, cache)
            warm["rate_limit_spent"] = budget - fake.rate_remaining
            out[state] = {"first_tick": cold, "unchanged_tick": warm,
                          "meets_target": warm["requests"] <= TARGET}  # type: ignore[operator]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
