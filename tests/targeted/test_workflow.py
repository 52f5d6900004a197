"""The ``ci-targeted`` workflow through the real CLI, a real git repo and the fake GitHub.

The Driver reads only the printed JSON; between calls ``RerunBot`` plays the repository's
"Rerun Test" workflow, dispatching one run per ``/rerun-test`` comment.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import Call, Driver, InProcess
from tests.fakegithub import FakeGitHub
from tests.targeted.conftest import Repo, cuda_test
from tests.targeted.rerunbot import NUMBER, REPO, RerunBot, with_step_times

A, B, C = "tests/test_a.py", "tests/test_b.py", "tests/test_c.py"
FAIL_LOG = "collected 1 item\nE   AssertionError: expected 2, got 3\nFAILED tests/test_a.py::test_x\n"


def rerun(path: str) -> str:
    return f"/rerun-test {path}"


class Flow:
    """One PR: repo main has pkg.core (tests a, b) and pkg.other (test c); the PR changes core."""

    def __init__(self, repo: Repo, fake: FakeGitHub, tmp: Path,
                 script: dict[str, list[tuple[str, str]]] | None = None,
                 extra: dict[str, str | None] | None = None,
                 base: dict[str, str | None] | None = None) -> None:
        self.repo = repo
        repo.commit({"pkg/__init__.py": "", "pkg/core.py": "X = 1\n", "pkg/other.py": "Y = 1\n",
                     A: cuda_test("from pkg import core", est=1500),
                     B: cuda_test("from pkg import core"),
                     C: cuda_test("from pkg import other"), **(base or {})}, "base")
        repo.git("checkout", "-q", "-b", "pr")
        self.head = repo.commit({"pkg/core.py": "X = 2\n", **(extra or {})}, "change core")
        self.bot = RerunBot(fake, self.head, script or {})
        self.drv = InProcess(tmp / "ws")

    def start(self, *flags: str) -> Call:
        return self.drv.call(["ci-targeted", "--base", "main", "--pr-number", str(NUMBER),
                              "--repo", REPO, "--repo-dir", str(self.repo.path), *flags])

    def answer(self, spec: dict[str, Any], value: str) -> Call:
        return self.drv.shell(next(o["command"] for o in spec["options"] if o["value"] == value))

    def runs_finish(self, spec: dict[str, Any]) -> Call:
        """CI dispatches a run per new comment; the cron fires once."""
        assert "schedule_cron" == spec["status"]
        self.bot.react()
        return self.drv.shell(spec["resume_command"])

    def feed(self, spec: dict[str, Any], result: dict[str, Any]) -> Call:
        assert "need_agent" == spec["status"], spec
        task = spec["tasks"][0]
        Path(task["feed_file"]).write_text(json.dumps(result))
        return self.drv.shell(task["feed_command"])

    def fix(self, files: dict[str, str | None]) -> str:
        """The debugger's fix: a commit on the PR branch, pushed."""
        sha = self.repo.commit(files, "fix")
        self.bot.gh.push(NUMBER, sha)
        return sha


def verdict(path: str, cause: str, pushed: str | None = None) -> dict[str, Any]:
    return {"verdicts": [{"path": path, "cause": cause, "why": "the log says so"}],
            "fixes": ["changed the assertion"] if pushed else [], "pushed_commit": pushed,
            "agent_id": "dbg-1", "agent_name": "debugger"}


@pytest.fixture
def flow_of(repo: Repo, fake_github: FakeGitHub, tmp_path: Path) -> Any:
    return lambda **kw: Flow(repo, fake_github, tmp_path, **kw)


def test_approval_gate_shows_exact_comments_and_declining_posts_nothing(flow_of: Any) -> None:
    """Without --approved: need_human with the exact comments; decline spends nothing."""
    f = flow_of()
    spec = f.start().spec
    assert ("need_human", "ci-targeted/acme/widgets/pr-7") == (spec["status"], spec["flow_id"])
    assert [rerun(A), rerun(B)] == spec["comments"]
    assert ("comment: /rerun-test tests/test_a.py  (est 1500s)\n"
            "comment: /rerun-test tests/test_b.py  (est 60s)\n"
            "files total: est 1560s of GPU time, one runner per file") in spec["question"]
    assert [] == f.bot.comments()
    done = f.answer(spec, "decline").spec
    assert ("done", "declined", []) == (done["status"], done["outcome"], f.bot.comments())


def test_files_mode_posts_one_exact_comment_per_file_and_ends_green(flow_of: Any) -> None:
    """Approved: one exact comment per reached file, a poll cron from est_time, then green."""
    f = flow_of()
    spec = f.answer(f.start().spec, "approve").spec
    assert [rerun(A), rerun(B)] == f.bot.comments()
    # test_a's est_time 1500 s: half of it is 13 minutes, inside the seed's 10-30.
    assert ("schedule_cron", "*/13 * * * *") == (spec["status"],
                                                 spec["on_complete"]["cron_interval"])
    again = f.drv.shell(spec["resume_command"]).spec  # no run yet: sleep again, post nothing
    assert ("schedule_cron", 2) == (again["status"], len(f.bot.comments()))
    done = f.runs_finish(again).spec
    assert ("green", 0) == (done["outcome"], done["fix_rounds"])
    assert [(A, "passed", 1), (B, "passed", 1)] == [(x["path"], x["result"], x["runs"])
                                                    for x in done["files"]]
    assert [rerun(A), rerun(B)] == f.bot.comments()


def test_labels_mode_adds_the_smallest_label_set_and_no_comments(flow_of: Any) -> None:
    """A changed path outside the trace (a Dockerfile) makes the change broad: labels."""
    f = flow_of(extra={"Dockerfile": "FROM python\n"})
    spec = f.start().spec
    assert ([], ["run-ci-rollout"]) == (spec["comments"], spec["labels"])
    done = f.answer(spec, "approve").spec
    assert ("done", "labels_added") == (done["status"], done["outcome"])
    assert (["run-ci-rollout"], []) == (f.bot.labels(), f.bot.comments())
    assert "--ci-check" in done["next_steps"][0]


def test_failure_goes_to_debugger_then_retrace_reruns_only_what_the_fix_reaches(
        flow_of: Any) -> None:
    """A failed file's log goes to the debugger (fenced); after the fix push the re-trace
    from the passing runs' SHA re-runs the failed file and what the fix reaches, not b."""
    f = flow_of(script={A: [("failure", FAIL_LOG), ("success", "")]})
    spec = f.runs_finish(f.start("--approved").spec).spec
    assert ("need_agent", "debugger", [A]) == (spec["status"], spec["tasks"][0]["feed_as"],
                                               spec["failures"])
    prompt = json.dumps(spec["tasks"][0])
    assert "<untrusted CI failure logs" in prompt and "expected 2, got 3" in prompt
    sha = f.fix({"pkg/other.py": "Y = 2\n"})  # the fix reaches test_c, not test_b
    spec = f.feed(spec, verdict(A, "caused_by_pr", sha)).spec
    assert [rerun(A), rerun(B), rerun(A), rerun(C)] == f.bot.comments()
    done = f.runs_finish(spec).spec
    assert ("green", 1) == (done["outcome"], done["fix_rounds"])
    assert [{"path": A, "cause": "caused_by_pr", "why": "the log says so",
             "fixed_by": [sha]}] == done["failures"]
    assert {A: 2, B: 1, C: 1} == {x["path"]: x["runs"] for x in done["files"]}


def test_flake_is_rerun_once_then_reported(flow_of: Any) -> None:
    """infra/flake: one re-run of that file only; failing the same way again is reported."""
    bad = ("failure", "ConnectionResetError: peer reset\n")
    f = flow_of(script={B: [bad, bad]})
    spec = f.runs_finish(f.start("--approved").spec).spec
    spec = f.feed(spec, verdict(B, "flake")).spec
    assert [rerun(A), rerun(B), rerun(B)] == f.bot.comments()
    spec = f.runs_finish(spec).spec
    done = f.feed(spec, verdict(B, "flake")).spec
    assert ("done", "failures_reported") == (done["status"], done["outcome"])
    assert [f"{B}: flake again after one re-run: the log says so"] == done["reported"]
    assert 3 == len(f.bot.comments())


def test_three_rounds_without_a_fix_give_up_honestly(flow_of: Any) -> None:
    """A PR-caused failure the debugger cannot fix: 3 rounds, then outcome gave_up."""
    f = flow_of(script={A: [("failure", FAIL_LOG)]})
    spec = f.runs_finish(f.start("--approved").spec).spec
    for _ in range(3):
        spec = f.feed(spec, verdict(A, "caused_by_pr")).spec
    assert ("done", "gave_up", 3) == (spec["status"], spec["outcome"], spec["fix_rounds"])
    assert [rerun(A), rerun(B)] == f.bot.comments()


def test_new_test_gets_est_time_and_the_ci_timing_line(flow_of: Any) -> None:
    """A test the PR adds: est_time = ceil(1.25 x 41 s) rounded up to 60, and its line."""
    f = flow_of(extra={"tests/test_new.py": cuda_test("from pkg import core")})
    with with_step_times(41):
        done = f.runs_finish(f.start("--approved").spec).spec
    run_url = next(x["run_url"] for x in done["files"] if x["path"] == "tests/test_new.py")
    assert [f"CI timing: tests/test_new.py on stage-b-2-gpu-h200, Run tests 41 s, "
            f"est_time=60, {run_url}"] == done["timing_lines"]


def test_bad_base_is_refused_before_any_state(flow_of: Any, tmp_path: Path) -> None:
    """An unknown --base is bad input and writes no flow."""
    f = flow_of()
    call = f.drv.call(["ci-targeted", "--base", "nope", "--pr-number", str(NUMBER), "--repo",
                       REPO, "--repo-dir", str(f.repo.path)])
    assert (2, "bad_input") == (call.code, call.spec["error"]["code"])
    assert [] == list((tmp_path / "ws").rglob("flow_state.json"))


def test_rate_limit_while_polling_sleeps_until_the_reset(flow_of: Any,
                                                         fake_github: FakeGitHub) -> None:
    """A spent API budget during a poll sleeps until GitHub's reset (not a fixed half hour);
    once the reset has passed the poll goes on and nothing is lost."""
    import time

    f = flow_of()
    spec = f.start("--approved").spec
    fake_github.rate_remaining = 0
    fake_github.rate_reset = int(time.time()) + 900
    spec = f.drv.shell(spec["resume_command"]).spec
    assert ("schedule_cron", "rate_limited") == (spec["status"], spec["targeted_phase"])
    assert spec["on_complete"]["cron_interval"] in {"*/15 * * * *", "*/16 * * * *"}
    assert "primary rate limit" in spec["reason"]
    fake_github.rate_remaining = 5000
    state = Path(spec["workspace"]) / "flow_state.json"
    raw = json.loads(state.read_text())
    raw["data"]["github"]["until"] = "2000-01-01T00:00:00+00:00"  # the reset has passed
    state.write_text(json.dumps(raw))
    assert "green" == f.runs_finish(spec).spec["outcome"]


def test_without_pr_number_the_branch_pr_is_found_on_github(flow_of: Any) -> None:
    """No --pr-number: the PR whose head is the checked-out branch of origin's repository."""
    f = flow_of()
    f.repo.git("remote", "add", "origin", f"https://github.com/{REPO}.git")
    spec = f.drv.call(["ci-targeted", "--base", "main", "--repo-dir", str(f.repo.path)]).spec
    assert ("need_human", f"ci-targeted/acme/widgets/pr-{NUMBER}") == (spec["status"],
                                                                       spec["flow_id"])
    assert [rerun(A), rerun(B)] == spec["comments"]


def test_fix_round_whose_retrace_is_broad_asks_again_for_labels(flow_of: Any) -> None:
    """A fix that also touches a path outside the trace: the re-trace picks labels, which the
    first approval did not cover; once approved the failed file re-runs and the labels land."""
    f = flow_of(script={A: [("failure", FAIL_LOG), ("success", "")]})
    spec = f.runs_finish(f.answer(f.start().spec, "approve").spec).spec
    sha = f.fix({"pkg/core.py": "X = 3\n", "Dockerfile": "FROM python\n"})
    spec = f.feed(spec, verdict(A, "caused_by_pr", sha)).spec
    assert ("need_human", [rerun(A)], ["run-ci-rollout"]) == (
        spec["status"], spec["comments"], spec["labels"])
    assert ([rerun(A), rerun(B)], []) == (f.bot.comments(), f.bot.labels())
    spec = f.answer(spec, "approve").spec
    assert ([rerun(A), rerun(B), rerun(A)], ["run-ci-rollout"]) == (f.bot.comments(),
                                                                   f.bot.labels())
    done = f.runs_finish(spec).spec
    assert ("green", 1, ["run-ci-rollout"]) == (done["outcome"], done["fix_rounds"],
                                                done["labels_added"])
    assert "--ci-check" in done["next_steps"][0]


def test_fix_commit_missing_from_the_checkout_is_an_error_until_pulled(flow_of: Any) -> None:
    """A pushed fix the local checkout does not have: an error naming the SHA with a hint;
    after pulling it, --resume re-traces and carries on."""
    f = flow_of(script={A: [("failure", FAIL_LOG), ("success", "")]})
    spec = f.runs_finish(f.start("--approved").spec).spec
    f.repo.git("checkout", "-q", "-b", "elsewhere")
    sha = f.fix({"pkg/other.py": "Y = 2\n"})
    f.repo.git("checkout", "-q", "pr")
    call = f.feed(spec, verdict(A, "caused_by_pr", sha))
    assert (2, "targeted") == (call.code, call.spec["error"]["code"])
    assert sha in call.spec["error"]["message"] and "--resume" in call.spec["error"]["hint"]
    f.repo.git("merge", "-q", "--ff-only", "elsewhere")
    spec = f.drv.shell(spec["resume_command"]).spec
    assert [rerun(A), rerun(B), rerun(A), rerun(C)] == f.bot.comments()
    done = f.runs_finish(spec).spec
    assert ("green", 1) == (done["outcome"], done["fix_rounds"])


def test_another_prs_run_of_the_same_file_is_never_ours(flow_of: Any) -> None:
    """A passing run of test_a for PR #8, dispatched after our comment, is not claimed: our
    own failing run is, and the flow goes to the debugger instead of ending green."""
    f = flow_of(script={A: [("failure", FAIL_LOG)]})
    spec = f.answer(f.start().spec, "approve").spec
    f.bot.foreign_run(8, A, "success")
    f.bot.foreign_run(8, B, "success")
    spec = f.runs_finish(spec).spec
    assert ("need_agent", ["tests/test_a.py"]) == (spec["status"], spec["failures"])


def test_attempts_record_the_pr_head_not_the_runs_main_tip(flow_of: Any) -> None:
    """The gateway runs on main; each attempt records the PR head it asked for (the base of
    any re-trace) and keeps the run's own head_sha apart."""
    from tests.targeted.rerunbot import MAIN_TIP

    f = flow_of()
    done = f.runs_finish(f.answer(f.start().spec, "approve").spec).spec
    state = json.loads(next(f.drv.workspace.rglob("flow_state.json")).read_text())
    data = state.get("data", state)
    attempts = [a for fr in data["files"].values() for a in fr["attempts"]]
    assert ("green", {f.head}, {MAIN_TIP}) == (
        done["outcome"], {x["pr_head"] for x in done["files"]}, {a["run_sha"] for a in attempts})


def test_poll_deadline_ends_timed_out_honestly(flow_of: Any) -> None:
    """A run still going past ORCHESTRATOR_TARGETED_POLL_HOURS ends the flow timed_out,
    naming the file and its run, never green."""
    f = flow_of(script={A: [(None, "")]})  # type: ignore[list-item]
    spec = f.answer(f.start().spec, "approve").spec
    f.bot.react()
    done = f.drv.shell(spec["resume_command"],
                       extra_env={"ORCHESTRATOR_TARGETED_POLL_HOURS": "0"}).spec
    assert ("timed_out", "timed_out", True) == (
        done["outcome"], next(x["result"] for x in done["files"] if x["path"] == A),
        any(r.startswith("tests/test_a.py: no finished run found within 0 h") for r in
            done["reported"]))


def test_bad_poll_deadline_is_refused(flow_of: Any) -> None:
    """A poll deadline that is not a number of hours is a JSON error naming the setting."""
    f = flow_of()
    spec = f.answer(f.start().spec, "approve").spec
    call = f.drv.shell(spec["resume_command"],
                       extra_env={"ORCHESTRATOR_TARGETED_POLL_HOURS": "soon"})
    assert (True, True) == (call.code != 0,
                            "ORCHESTRATOR_TARGETED_POLL_HOURS" in json.dumps(call.spec))


def test_labels_question_shows_what_each_label_starts(flow_of: Any) -> None:
    """The approval question of a labels plan names each label's registrations and summed
    est_time, and the reasons; the spec carries the costs too."""
    f = flow_of(extra={"Dockerfile": "FROM python\n"})
    spec = f.start().spec
    assert "label: run-ci-rollout  (starts 3 registration(s), est 1620s)" in spec["question"]
    assert {"run-ci-rollout": "3 registration(s), est 1620s"} == spec["costs"]


def test_refused_rerun_test_ends_with_the_gateways_error(flow_of: Any) -> None:
    """The commenter lacks write permission: the gateway's own run fails and no run starts;
    the first poll reads the refusal and ends stopped with its error, not after 24 h."""
    f = flow_of()
    f.bot.gateway.refused.add("bot")  # the login the fake gives the flow's comments
    done = f.answer(f.start().spec, "approve").spec  # the poll right after posting
    assert ("done", "stopped") == (done["status"], done["outcome"]), done
    assert "comment author is not authorized for the requested operation" in done["reason"]
    assert [("refused", "refused"), ("refused", "refused")] == [
        (x["result"], x["conclusion"]) for x in done["files"]]


@pytest.mark.parametrize("answer", ["no_gpu", "add run-ci-rollout"])
def test_untraced_change_no_rule_covers_asks_a_person_even_when_approved(
        repo: Repo, fake_github: FakeGitHub, tmp_path: Path, answer: str) -> None:
    """A changed module nothing imports or names, with no path rule and no fallback label:
    the trace cannot say "no GPU CI needed", so even --approved asks which label to run or
    whether none is needed, and the report records that a person decided."""
    repo.commit({"pkg/__init__.py": "", "pkg/core.py": "X = 1\n",
                 A: cuda_test("from pkg import core")}, "base")
    repo.git("checkout", "-q", "-b", "pr")
    head = repo.commit({"pkg/loaded_somehow.py": "X = 2\n"}, "a module loaded by name")
    bot = RerunBot(fake_github, head, {})
    drv = InProcess(tmp_path / "ws")
    spec = drv.call(["ci-targeted", "--base", "main", "--pr-number", str(NUMBER), "--repo",
                     REPO, "--repo-dir", str(repo.path), "--approved"]).spec
    assert ("need_human", ["pkg/loaded_somehow.py"]) == (spec["status"], spec["undecided"])
    values = [o["value"] for o in spec["options"]]
    assert ["no_gpu", "add run-ci-rollout", "decline"] == values
    assert "- pkg/loaded_somehow.py: nothing imports or names it" in spec["question"]
    assert "'add run-ci-rollout': add run-ci-rollout (starts 1 registration" in spec["question"]
    done = drv.shell(next(o["command"] for o in spec["options"] if o["value"] == answer)).spec
    if answer == "no_gpu":
        assert ("nothing_to_run", [], []) == (done["outcome"], bot.labels(), bot.comments())
        assert ["pkg/loaded_somehow.py: nothing imports or names it"] == done["untraced"]
        assert ("a person answered that no GPU CI is needed for pkg/loaded_somehow.py"
                == done["decided"])
    else:
        assert ("labels_added", ["run-ci-rollout"], []) == (done["outcome"], bot.labels(),
                                                            bot.comments())
        assert "a person chose run-ci-rollout for pkg/loaded_somehow.py" == done["decided"]


def test_a_file_past_the_depth_bound_is_priced_and_not_posted(flow_of: Any) -> None:
    """A test past the depth bound is not posted (the trace does not show it runs the
    change); the question's judgement names it with its est_time, never as free."""
    far = "tests/test_far.py"
    f = flow_of(base={"pkg/mid.py": "from pkg import core\n", "pkg/outer.py": "import pkg.mid\n",
                      "pkg/edge.py": "import pkg.outer\n",
                      far: cuda_test("import pkg.edge", est=1900)})
    spec = f.start("--depth", "2").spec
    assert rerun(far) not in spec["comments"]
    assert ("- 1 more test(s) lie past the depth bound 2 (est 1900s), not run: the trace "
            "does not show they run the changed code; re-run with a larger --depth if they "
            f"matter: {far}") in spec["question"].splitlines()


def test_a_file_with_no_registered_time_is_unknown_not_zero(flow_of: Any) -> None:
    """A planned file whose registration carries no est_time says unknown and is counted
    apart from the sum, not added as 0."""
    bare = "tests/test_bare.py"
    f = flow_of(base={bare: 'from pkg import core\nregister_cuda_ci(suite="stage-b-2-gpu-h200")\n'})
    spec = f.start().spec
    assert f"comment: /rerun-test {bare}  (est unknown)" in spec["question"]
    assert ("files total: est 1560s of GPU time + 1 file(s) of unknown time, one runner per "
            "file") in spec["question"]


def test_the_final_report_says_a_file_past_the_bound_was_not_run(flow_of: Any) -> None:
    """A test past the depth bound is not run, and the final report says so (left at the
    depth bound), while the files that ran pass."""
    far = "tests/test_far.py"
    f = flow_of(base={"pkg/mid.py": "from pkg import core\n", "pkg/outer.py": "import pkg.mid\n",
                      "pkg/edge.py": "import pkg.outer\n",
                      far: cuda_test("import pkg.edge", est=600)})
    spec = f.answer(f.start("--depth", "2").spec, "approve").spec
    done = f.runs_finish(spec).spec
    assert far not in [x["path"] for x in done["files"]]
    assert "green" == done["outcome"]
    assert [f"pkg/edge.py: left at depth 2 (not run: {far})"] == [
        line for line in done["not_run"] if line.startswith("pkg/edge.py")]


def test_a_fix_round_posts_only_approved_files_and_never_what_the_labels_run(
        flow_of: Any) -> None:
    """The first plan runs a and b by file and adds run-ci-amd for a ROCm test. The fix
    reaches c (never approved) and f (its CUDA registration carries amd, so the label on
    the PR re-runs it on the fix push): f is never posted, and c waits for a new answer
    before anything goes out; approved, the round posts a (failed) and c."""
    rocm = 'from pkg import core\nregister_rocm_ci(est_time=60, suite="stage-c-rocm", labels=["amd"])\n'
    f = flow_of(script={A: [("failure", FAIL_LOG), ("success", "")]},
                base={"tests/test_r.py": rocm,
                      "tests/test_f.py": cuda_test("from pkg import other", labels=["amd"])})
    first = f.start().spec
    assert ([rerun(A), rerun(B)], ["run-ci-amd"]) == (first["comments"], first["labels"])
    spec = f.runs_finish(f.answer(first, "approve").spec).spec
    sha = f.fix({"pkg/other.py": "Y = 2\n"})
    spec = f.feed(spec, verdict(A, "caused_by_pr", sha)).spec
    assert ("need_human", [rerun(A), rerun(C)], []) == (spec["status"], spec["comments"],
                                                        spec["labels"])
    assert [rerun(A), rerun(B)] == f.bot.comments()  # nothing posted before the answer
    spec = f.answer(spec, "approve").spec
    assert [rerun(A), rerun(B), rerun(A), rerun(C)] == f.bot.comments()
    assert rerun("tests/test_f.py") not in f.bot.comments()


def test_the_labels_question_gives_the_overall_total(flow_of: Any) -> None:
    """With labels, the approval question ends its prices with one total: each
    registration the labels start counted once, the files' runs added."""
    f = flow_of(extra={"Dockerfile": "FROM python\n"})
    spec = f.start().spec
    assert "total: est 1620s: 3 registration(s) the labels start" in spec["question"]
