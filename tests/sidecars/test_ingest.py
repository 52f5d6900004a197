"""The ingest sidecar through the CLI: harvest from a fake GitHub, findings files, apply."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flow.workflows.refactor.rules import DEFAULT_PATH
from tests.contract.driver import Call, Driver, InProcess
from tests.fakegithub.server import FakeGitHub

REPO = "pytorch/pytorch"
AUTHOR = "KarhouTam"


def inline(fake: FakeGitHub, number: int, body: str, who: str, *, reply_to: int | None = None,
           at: str = "2026-02-01T00:00:00Z") -> int:
    """An inline review comment on PR `number` (a reply when `reply_to` is set); its id."""
    return fake.repo(REPO).pulls[number].add_review_comment(
        body, who, reply_to=reply_to, path="test/test_ops.py", line=10, at=at).id


def convo(fake: FakeGitHub, number: int, body: str, who: str,
          at: str = "2026-02-01T00:00:00Z") -> int:
    """A conversation comment on PR `number`; its id."""
    return fake.repo(REPO).add_comment(number, body, who, at=at)["id"]


def pull(fake: FakeGitHub, number: int, title: str, *, author: str = AUTHOR,
         state: str = "closed", labels: tuple[str, ...] = ("Merged",)) -> None:
    """A PR from `author`'s fork; closed (not merged: the bot labels it instead) by default."""
    p = fake.repo(REPO).add_pull(number, f"branch-{number}", f"{number:040d}",
                                 head_repo=f"{author}/pytorch", title=title, labels=list(labels))
    if state == "closed":
        p.close()


@pytest.fixture
def ruleset(tmp_path: Path) -> Path:
    path = tmp_path / "rules.json"
    shutil.copy(DEFAULT_PATH, path)
    return path


@pytest.fixture
def drive(fake_github: FakeGitHub, tmp_path: Path, ruleset: Path) -> Driver:
    return InProcess(tmp_path / "ws", {"ORCHESTRATOR_INGEST_RULESET": str(ruleset)})


def js(call: Call) -> dict[str, Any]:
    """The JSON a call printed; a call that printed none fails the test with its stderr."""
    assert call.spec is not None, call.stderr
    return call.spec


def feed(d: Driver, task: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    Path(task["feed_file"]).write_text(json.dumps(result))
    return js(d.shell(task["feed_command"]))


def answer(d: Driver, spec: dict[str, Any], value: str) -> dict[str, Any]:
    return js(d.shell(next(o["command"] for o in spec["options"] if o["value"] == value)))


PROPOSAL = {"rule_id": "TR003", "summary": "Utility tests stay CPU-only\neven if they make tensors",
            "proposed_edit": "Add to TR003's instructions:\n- [x] tests of rnn_utils stay cpu_only",
            "comment_ids": []}


def harvest_to_done(d: Driver, harness: str = "claude") -> tuple[list[dict[str, Any]],
                                                                 dict[str, Any]]:
    """Run a harvest, answering triage 'lesson' and the analyst with PROPOSAL for every PR."""
    spec = js(d.call(["--harness", harness, "--ingest-feedback", "--restart"]))
    tasks: list[dict[str, Any]] = []
    while spec["status"] in {"need_agent", "waiting"}:
        task = spec["tasks"][0]
        tasks.append(task)
        result = ({"lesson": True, "reason": "a rule was too broad"} if task["agent_name"] == "triage"
                  else {"findings": [PROPOSAL]})
        spec = feed(d, task, result)
    return tasks, spec


def setup_prs(fake: FakeGitHub) -> dict[str, int]:
    pull(fake, 1, "[Test] decouple test_ops")
    pull(fake, 2, "[Test] no label yet", labels=())
    pull(fake, 3, "Fix a typo")
    pull(fake, 4, "[Test] someone else's", author="octocat")
    pull(fake, 5, "[Test] still open", state="open")
    ids = {"root": inline(fake, 1, "ROOT: why device-agnostic?", "reviewer"),
           "lonely": inline(fake, 1, "LONELY: unanswered nit", "reviewer"),
           "summary": convo(fake, 1, "SUMMARY: the bot's review", "claude[bot]"),
           "chatter": convo(fake, 1, "CHATTER: thanks!", "reviewer")}
    ids["reply"] = inline(fake, 1, "REPLY: it only uses rnn_utils", AUTHOR, reply_to=ids["root"])
    for n in (2, 3, 4, 5):
        root = inline(fake, n, f"OTHER{n}", "reviewer")
        inline(fake, n, f"OTHER{n} reply", AUTHOR, reply_to=root)
        convo(fake, n, f"OTHERSUMMARY{n}", "claude[bot]")
    return ids


def test_harvest_takes_only_merged_test_prs_replied_threads_and_bot_summaries(
        drive: Driver, fake_github: FakeGitHub) -> None:
    """Only PR 1 qualifies; its prompt holds the replied thread and the claude[bot] summary."""
    setup_prs(fake_github)
    tasks, done = harvest_to_done(drive)
    assert [("triage", "triage-PR-1"), ("analyst", "analyst-PR-1")] == [
        (t["agent_name"], t["task_id"].split("-v1-")[1].rsplit("-a", 1)[0]) for t in tasks]
    prompt = tasks[0]["prompt"]
    present = {w: w in prompt for w in ("ROOT:", "REPLY:", "SUMMARY:", "LONELY:", "CHATTER:", "OTHER")}
    assert {"ROOT:": True, "REPLY:": True, "SUMMARY:": True, "LONELY:": False,
            "CHATTER:": False, "OTHER": False} == present
    assert "<untrusted review comments" in prompt
    assert ("done", "drafted", [1]) == (done["status"], done["outcome"], done["prs"])


def test_codex_gets_inline_tasks(drive: Driver, fake_github: FakeGitHub) -> None:
    """Under Codex the triage task is inline work for the harness itself."""
    setup_prs(fake_github)
    spec = js(drive.call(["--harness", "codex", "--ingest-feedback"]))
    assert ("need_agent", "inline", ["inline"]) == (
        spec["status"], spec.get("method"), [t["method"] for t in spec["tasks"]])


def test_cursor_skips_processed_comments_on_a_second_harvest(
        drive: Driver, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """A second harvest finds nothing; a new reply to the lonely thread is all a third one sees."""
    ids = setup_prs(fake_github)
    harvest_to_done(drive)
    cursor = json.loads((tmp_path / "ws" / "ingest" / "state.json").read_text())
    assert sorted([ids["root"], ids["reply"], ids["summary"]]) == \
        cursor["prs"][f"{REPO}#1"]["processed"]
    assert "2026-02-01T00:00:00Z" == cursor["prs"][f"{REPO}#1"]["last_checked_at"]
    _, second = harvest_to_done(drive)
    assert ("done", "nothing_new") == (second["status"], second["outcome"])
    inline(fake_github, 1, "LATE: yes, keep it on CPU", AUTHOR, reply_to=ids["lonely"],
           at="2026-03-01T00:00:00Z")
    tasks, third = harvest_to_done(drive)
    assert ("drafted", [1]) == (third["outcome"], third["prs"])
    prompt = tasks[0]["prompt"]
    assert {"LONELY:": True, "LATE:": True, "ROOT:": False, "SUMMARY:": False} == {
        w: w in prompt for w in ("LONELY:", "LATE:", "ROOT:", "SUMMARY:")}
    cursor = json.loads((tmp_path / "ws" / "ingest" / "state.json").read_text())
    assert "2026-03-01T00:00:00Z" == cursor["prs"][f"{REPO}#1"]["last_checked_at"]


def test_findings_file_rendering(drive: Driver, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """One unticked box per finding; agent text is collapsed or indented so it cannot tick a box."""
    setup_prs(fake_github)
    _, done = harvest_to_done(drive)
    path = tmp_path / "ws" / "ingest" / "findings" / "PR-1.md"
    assert [str(path)] == done["findings_files"]
    text = path.read_text()
    flow_id = done["flow_id"]
    section = text[text.index("## Harvest"):]
    assert (f"## Harvest {flow_id}\n\n<!-- ingest: {flow_id} -->\n\n"
            "- [ ] **F1** rule `TR003`: Utility tests stay CPU-only even if they make tensors\n"
            "    Proposed edit:\n"
            "    Add to TR003's instructions:\n"
            "    - [x] tests of rnn_utils stay cpu_only\n") == section
    assert text.startswith(f"# Ruleset findings from {REPO}#1\n\nPR: [Test] decouple test_ops <")
    assert "--apply-ingest" in text


def _findings(tmp_path: Path, ticked: bool) -> Path:
    path = tmp_path / "ws" / "ingest" / "findings" / "PR-7.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    box = "x" if ticked else " "
    path.write_text("# Ruleset findings\n\n"
                    f"- [{box}] **F1** rule `TR003`: CPU-only utility tests\n"
                    "    Proposed edit:\n    say rnn_utils tests stay cpu_only\n\n"
                    "- [ ] **F2** rule `TR001`: not approved\n    Proposed edit:\n    nothing\n")
    return path


def test_apply_with_nothing_ticked_does_nothing(drive: Driver, tmp_path: Path, ruleset: Path) -> None:
    """An unticked findings file is refused as input: no flow, no question, ruleset unchanged."""
    before = ruleset.read_bytes()
    call = drive.call(["--apply-ingest", str(_findings(tmp_path, ticked=False))])
    assert (2, "error", "bad_input") == (call.code, js(call)["status"], js(call)["error"]["code"])
    state = tmp_path / "ws" / "ingest" / "apply-PR-7" / "flow_state.json"
    assert (before, False) == (ruleset.read_bytes(), state.exists())


def test_apply_takes_a_tick_in_a_numbered_indented_list(drive: Driver, tmp_path: Path,
                                                        ruleset: Path) -> None:
    """A box ticked as GitHub also draws it (an indented numbered item) is a finding to apply."""
    path = _findings(tmp_path, ticked=False)
    path.write_text(path.read_text().replace("- [ ] **F1**", "  1. [X] **F1**"))
    spec = js(drive.call(["--apply-ingest", str(path)]))
    assert ("need_human", ["F1"]) == (spec["status"],
                                      [f["key"] for f in spec["findings"]])


def test_apply_with_nothing_ticked_names_the_lines_it_read(drive: Driver, tmp_path: Path,
                                                          ruleset: Path) -> None:
    """The refusal says which checkbox lines it read and that none was ticked."""
    call = drive.call(["--apply-ingest", str(_findings(tmp_path, ticked=False))])
    err = js(call)["error"]
    assert [(3, "finding F1, not ticked"), (7, "finding F2, not ticked")] == [
        (r["line"], r["read_as"]) for r in err["lines_read"]]
    assert "none ticked: line 3 (finding F1, not ticked); line 7 (finding F2, not ticked)" \
        in err["message"]


def _edit_title(path: Path, title: str) -> None:
    data = json.loads(path.read_text())
    data["rules"][2]["title"] = title
    path.write_text(json.dumps(data, indent=2))


def test_apply_asks_a_person_before_editing(drive: Driver, tmp_path: Path, ruleset: Path) -> None:
    """need_human lists exactly the ticked finding; the editor is asked only after 'apply'."""
    before = ruleset.read_bytes()
    spec = js(drive.call(["--apply-ingest", str(_findings(tmp_path, ticked=True))]))
    assert ("need_human", ["F1"], before) == (
        spec["status"], [f["key"] for f in spec["findings"]], ruleset.read_bytes())
    assert "F1 (rule TR003): CPU-only utility tests" in spec["question"]
    assert "F2" not in spec["question"]
    spec = answer(drive, spec, "apply")
    assert ("need_agent", "ruleset_editor") == (spec["status"], spec["tasks"][0]["agent_name"])
    _edit_title(ruleset, "CPU-only tests, utility tests included")
    done = feed(drive, spec["tasks"][0], {"summary": "edited TR003", "changed_rules": ["TR003"]})
    assert ("done", "applied", True, ["F1"]) == (
        done["status"], done["outcome"], done["changed"], done["findings"])


def test_declined_apply_changes_nothing(drive: Driver, tmp_path: Path, ruleset: Path) -> None:
    """Answering 'decline' ends the flow without an editor task."""
    before = ruleset.read_bytes()
    spec = js(drive.call(["--apply-ingest", str(_findings(tmp_path, ticked=True))]))
    done = answer(drive, spec, "decline")
    assert ("done", "declined", before) == (done["status"], done["outcome"], ruleset.read_bytes())


@pytest.mark.parametrize("fixed_in_round", [2, None])
def test_broken_ruleset_edit_is_sent_back_then_refused(
        drive: Driver, tmp_path: Path, ruleset: Path, fixed_in_round: int | None) -> None:
    """An edit that breaks the catalogue goes back to the editor; three breaks restore the file."""
    before = ruleset.read_bytes()
    spec = js(drive.call(["--apply-ingest", str(_findings(tmp_path, ticked=True))]))
    spec = answer(drive, spec, "apply")
    rounds = []
    while spec["status"] == "need_agent":
        task = spec["tasks"][0]
        rounds.append((spec["edit_round"], task["method"], "invalid" in task["prompt"]))
        if spec["edit_round"] == fixed_in_round:
            ruleset.write_bytes(before)
            _edit_title(ruleset, "fixed")
        else:
            ruleset.write_text('{"version": 1, "rules": "oops"}')
        spec = feed(drive, task, {"agent_id": "/root/editor", "agent_name": "ruleset_editor",
                                 "summary": "edited", "changed_rules": ["TR003"]})
    if fixed_in_round == 2:
        assert [(1, "spawn", False), (2, "send_message", True)] == rounds
        assert ("done", "applied") == (spec["status"], spec["outcome"])
    else:
        assert [(1, "spawn", False), (2, "send_message", True), (3, "send_message", True)] == rounds
        assert ("done", "refused", True, before) == (
            spec["status"], spec["outcome"], spec["restored"], ruleset.read_bytes())
        assert "bad_catalogue" not in spec["error"] and "rules" in spec["error"]


@pytest.mark.parametrize("edit", [True, False])
def test_apply_says_what_changed_and_where(drive: Driver, tmp_path: Path, ruleset: Path,
                                           edit: bool) -> None:
    """The done step names the ruleset edited and the lines changed, or says nothing changed."""
    spec = answer(drive, js(drive.call(["--apply-ingest", str(_findings(tmp_path, ticked=True))])),
                  "apply")
    if edit:
        _edit_title(ruleset, "CPU-only tests, utility tests included")
    done = feed(drive, spec["tasks"][0], {"summary": "edited TR003", "changed_rules": ["TR003"]})
    steps = " ".join(done["next_steps"])
    assert str(ruleset) in steps and "reference/refactor/rules.json" not in steps
    if edit:
        assert ("applied", True) == (done["outcome"], done["changed"])
        assert done["lines_added"] >= 1 and "line(s) added" in steps
    else:
        assert ("unchanged", False, 0) == (done["outcome"], done["changed"], done["lines_added"])
        assert "Nothing changed" in steps


def test_a_pr_merged_with_the_merge_button_is_harvested(drive: Driver, fake_github: FakeGitHub) -> None:
    """One rule for merged (shared with the review queue): merged_at set and no `Merged` label
    counts, as the bot's label does; a PR closed unmerged without the label does not."""
    pull(fake_github, 7, "[Test] merged by the button", labels=())
    fake_github.repo(REPO).pulls[7].merge()
    pull(fake_github, 8, "[Test] closed unmerged", labels=())
    for n in (7, 8):
        root = inline(fake_github, n, f"ROOT{n}: keep it on CPU", "reviewer")
        inline(fake_github, n, f"REPLY{n}: done", AUTHOR, reply_to=root)
    tasks, done = harvest_to_done(drive)
    assert ("drafted", [7]) == (done["outcome"], done["prs"])


def test_a_reply_whose_thread_root_was_deleted_is_kept(drive: Driver, fake_github: FakeGitHub) -> None:
    """The root review comment deleted, its reply left: the reply is harvested, and the prompt
    says the thread's first comment is gone."""
    pull(fake_github, 9, "[Test] root deleted")
    root = inline(fake_github, 9, "GONE: the reviewer's comment", "reviewer")
    inline(fake_github, 9, "ORPHAN: yes, moved it to the CPU class", AUTHOR, reply_to=root)
    fake_github.repo(REPO).pulls[9].delete_review_comment(root)
    tasks, done = harvest_to_done(drive)
    prompt = tasks[0]["prompt"]
    assert ("drafted", [9], True, False) == (done["outcome"], done["prs"], "ORPHAN:" in prompt, "GONE:" in prompt)
    assert f"id {root}, was deleted" in prompt
