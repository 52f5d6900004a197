"""The command line: one JSON object per call, exit codes, status, schema, graph, imports."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import SCRIPT, Driver, modules_after as _modules_after, toy_at_review
from tests.terminal import on_a_terminal

TOY = {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow"}


def _run(ws: Path, *argv: str, env: dict[str, str] | None = None) -> tuple[int, Any]:
    drv = Driver(ws, {**TOY, **(env or {})})
    call = drv.call(list(argv))
    return call.code, call.spec


@pytest.mark.parametrize("argv,code", [
    (["--bogus"], "usage"),
    (["--feed", "coder"], "usage"),
    ([], "usage"),
    (["--flow", "no/such", "--resume"], "flow_not_found"),
    (["start", "nope"], "usage"),
    (["schema", "nope"], "usage"),
])
def test_bad_input_is_one_json_error_with_a_hint_and_exit_2(tmp_path: Path, argv: list[str],
                                                            code: str) -> None:
    """Usage mistakes print a JSON error object (code, message, hint) and exit 2."""
    exit_code, spec = _run(tmp_path, *argv)
    assert (2, "error", code) == (exit_code, spec["status"], spec["error"]["code"])
    assert spec["error"]["hint"] and spec["message"] == spec["error"]["message"]


def test_a_workflow_not_built_answers_with_an_error_not_a_spec(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """A registered workflow whose module is missing is reported as not_built."""
    from flow.workflows import registry
    from flow.core.errors import NotBuilt

    monkeypatch.setitem(registry.BUILTIN, "ghost", "flow.ghost_workflow")
    with pytest.raises(NotBuilt):
        registry.load("ghost")


def test_unloadable_state_exits_4_and_keeps_the_file(tmp_path: Path) -> None:
    """A corrupt flow_state.json is reported (exit 4) and never replaced."""
    _run(tmp_path, "start", "toy", "x")
    state = tmp_path / "toy" / "x" / "flow_state.json"
    state.write_text('{"workflow": "toy", "schema_version": 1, "broken": true}')
    (tmp_path / "toy" / "x" / ".last_spec.json").unlink()
    code, spec = _run(tmp_path, "--flow", "toy/x", "--resume")
    assert (4, "state_unloadable") == (code, spec["error"]["code"])
    assert '"broken": true' in state.read_text()


def test_status_lists_flows_as_table_and_json(tmp_path: Path) -> None:
    """status shows workflow, phase, pending tasks and age; --json for machines."""
    _run(tmp_path, "start", "toy", "one")
    drv = Driver(tmp_path, TOY)
    _, text = on_a_terminal(tmp_path, "status", env=drv.env, stderr=False)
    assert "toy/one" in text and "work" in text and "PENDING" in text
    for argv in (["status"], ["status", "--json"]):  # piped: JSON with or without --json
        proc = subprocess.run([sys.executable, str(SCRIPT), "--workspace", str(tmp_path), *argv],
                              capture_output=True, text=True, env=drv.env, timeout=60)
        [row] = json.loads(proc.stdout)["flows"]
        assert ("toy/one", "toy", "work", 2) == (row["flow_id"], row["workflow"], row["phase"],
                                                len(row["pending"]))


def test_schema_lists_and_prints_feed_models(tmp_path: Path) -> None:
    """schema lists every name; schema NAME prints a JSON Schema of that feed model."""
    _, listing = _run(tmp_path, "schema")
    assert {"spec", "task", "state", "toy.part", "toy.review"} <= set(listing["schemas"])
    _, one = _run(tmp_path, "schema", "toy.part")
    assert {"ok", "value"} <= set(one["schema"]["required"])


def test_graph_draws_the_declared_machine_as_mermaid(tmp_path: Path) -> None:
    """graph WORKFLOW prints a Mermaid state diagram with every declared transition."""
    _, spec = _run(tmp_path, "graph", "toy")
    assert "stateDiagram-v2" in spec["mermaid"]
    assert "review --> work: rejected" in spec["mermaid"]


def test_emitted_commands_work_from_any_directory_with_awkward_paths(tmp_path: Path) -> None:
    """Commands are absolute and shell-quoted: a workspace with spaces and quotes still works."""
    ws = tmp_path / "my work's space"
    drv = Driver(ws, TOY)
    spec = drv.call(["start", "toy", "q"]).spec
    again = drv.shell(spec["resume_command"])
    assert ("waiting", spec["tasks"]) == (again.spec["status"], again.spec["tasks"])
    Path(spec["tasks"][0]["feed_file"]).write_text(json.dumps({"ok": True, "value": 1}))
    fed = drv.shell(spec["tasks"][0]["feed_command"])
    assert (0, "waiting") == (fed.code, fed.spec["status"])


def test_resume_and_feed_do_not_import_libcst_or_pygithub(tmp_path: Path) -> None:
    """The hot path of a flow that needs neither never imports them."""
    drv = Driver(tmp_path, TOY)
    spec = drv.call(["start", "toy", "fast"]).spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps({"ok": True, "value": 1}))
    (Path(spec["workspace"]) / ".last_spec.json").unlink()
    base = ["--workspace", str(tmp_path), "--flow", "toy/fast"]
    for argv in ([*base, "--resume"], [*base, "--feed", "coder", "--feed-file", task["feed_file"]]):
        mods = _modules_after(argv, drv.env)
        assert "flow.core.engine" in mods
        assert not {m for m in mods if m.split(".")[0] in {"libcst", "github"}}


def test_cached_resume_skips_pydantic_and_transitions(tmp_path: Path) -> None:
    """--resume of a waiting flow whose spec is cached imports neither pydantic nor transitions."""
    drv = Driver(tmp_path, TOY)
    drv.call(["start", "toy", "cached"])
    mods = _modules_after(["--workspace", str(tmp_path), "--flow", "toy/cached", "--resume"],
                          drv.env)
    assert not {m for m in mods if m.split(".")[0] in {"pydantic", "transitions", "libcst"}}


def test_a_start_refused_by_the_workflow_leaves_nothing_behind(tmp_path: Path) -> None:
    """Bad input to a new flow: an error with a hint, and no folder, lock or error file."""
    ws = tmp_path / "ws"
    code, spec = _run(ws, "start", "toy", "bad")
    assert (2, "bad_input") == (code, spec["error"]["code"])
    leftovers = sorted(str(p) for p in ws.rglob("*")) if ws.exists() else []
    assert [] == leftovers


def test_each_restart_keeps_the_old_flow(tmp_path: Path) -> None:
    """Three starts with --restart leave two old flows beside the new one (names within one
    second are covered by the next test, which forces the collision)."""
    for _ in range(3):
        code, spec = _run(tmp_path, "start", "toy", "again", "--restart")
        assert (0, "need_agent") == (code, spec["status"])
    assert 2 == len(list((tmp_path / "toy").glob("again.old-*")))


def test_move_aside_never_lands_on_an_earlier_old_flow(tmp_path: Path) -> None:
    """Even when <name>.old-<this second> exists, the folder gets a name of its own."""
    import time

    from flow.cli.main import _move_aside
    from workspace.store import FlowStore

    store = FlowStore(tmp_path, "toy/x")
    store.dir.mkdir(parents=True)
    (store.dir / "marker").write_text("mine")
    now = time.time()
    for t in (now, now + 1):
        stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(t))
        (tmp_path / "toy" / f"x.old-{stamp}").mkdir()
    _move_aside(store)
    moved = [p for p in (tmp_path / "toy").glob("x.old-*") if (p / "marker").exists()]
    assert (False, 1) == (store.dir.exists(), len(moved))


def test_restart_waits_for_the_lock_and_moves_nothing_while_a_call_holds_it(tmp_path: Path) -> None:
    """--restart takes the flow's lock before moving it: while another call holds the lock
    the restart answers Busy (exit 3) and the flow stays where it was, untouched."""
    from workspace.lock import FlowLock

    _run(tmp_path, "start", "toy", "held")
    folder = tmp_path / "toy" / "held"
    before = (folder / "flow_state.json").read_bytes()
    with FlowLock(folder):
        code, spec = _run(tmp_path, "start", "toy", "held", "--restart",
                          env={"ORCHESTRATOR_LOCK_TIMEOUT": "0.2"})
    assert (3, "busy") == (code, spec["error"]["code"])
    assert (before, []) == ((folder / "flow_state.json").read_bytes(),
                            list((tmp_path / "toy").glob("held.old-*")))
    code, spec = _run(tmp_path, "start", "toy", "held", "--restart")
    moved = list((tmp_path / "toy").glob("held.old-*"))
    assert (0, 1, False) == (code, len(moved), (moved[0] / ".lock.holder").exists())


@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_help_is_one_json_object_with_the_usage(tmp_path: Path, flag: str) -> None:
    """Like every call, --help prints one JSON object (exit 0); the usage text is a field."""
    code, spec = _run(tmp_path, flag)
    assert (0, "done", True, True) == (code, spec["status"], "--resume" in spec["usage"],
                                       "--ci-check" in spec["usage"])


def test_a_call_that_waited_while_the_flow_was_restarted_says_so(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """A --resume that wins the lock after its flow was moved aside and before a new one was
    written answers flow_not_found with a hint, not a state-loading error."""
    import orchestrator
    import workspace.lock as lock_mod

    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", TOY["ORCHESTRATOR_PLUGINS"])
    _run(tmp_path, "start", "toy", "moved")
    folder = tmp_path / "toy" / "moved"

    class RestartWhileWaiting(lock_mod.Flock):
        def acquire(self, timeout: float) -> None:
            super().acquire(timeout)
            if folder.exists() and (folder / "flow_state.json").exists():
                folder.rename(folder.with_name("moved.old"))  # the restart got there first

    monkeypatch.setattr(lock_mod, "Flock", RestartWhileWaiting)
    code = orchestrator.main(["--workspace", str(tmp_path), "--flow", "toy/moved", "--feed",
                              "worker", "--feed-file", str(tmp_path / "none.json")])
    spec = json.loads(capsys.readouterr().out)
    assert (2, "flow_not_found", True) == (code, spec["error"]["code"],
                                           "run the command again" in spec["error"]["hint"])


SEED_INVOCATIONS = [
    (["test/test_ops.py"], None, ["test/test_ops.py"], {}),
    (["test/test_ops.py", "--pytorch-dir", "/src"], None, ["test/test_ops.py"],
     {"source_dir": "/src"}),
    (["--workspace", "w", "--harness", "codex", "test/nn/test_conv.py"], None,
     ["test/nn/test_conv.py"], {"workspace": "w", "harness": "codex"}),
    (["--ci-check"], "ci-check", [], {"ci_check": True}),
    (["--ci-check", "--pr-number", "5", "--repo", "o/r", "--mark-ready"], "ci-check", [],
     {"ci_check": True, "pr_number": 5, "repo": "o/r", "mark_ready": True}),
    (["--ingest-feedback"], "ingest", [], {"ingest_feedback": True}),
    (["--apply-ingest", "PR-7.md"], "ingest", [], {"apply_ingest": "PR-7.md",
                                                   "ingest_feedback": False}),
    (["--review-queue", "--limit", "3"], "review-queue", [], {"review_queue": True, "limit": 3}),
    (["--flow", "toy/x", "--resume"], None, [], {"flow": "toy/x", "resume": True}),
    (["--flow", "toy/x", "--feed", "coder", "--feed-file", "f.json"], None, [],
     {"feed": "coder", "feed_file": "f.json"}),
    (["--flow", "toy/x", "--answer", "yes"], None, [], {"answer": "yes"}),
    (["status", "--json"], "status", ["status"], {"json": True}),
    (["schema", "ci.debugger"], "schema", ["schema", "ci.debugger"], {}),
    (["graph", "ci"], "graph", ["graph", "ci"], {}),
    (["demo", "refactor"], "demo", ["demo", "refactor"], {}),
    (["reproduce", "--command", "pytest t.py::x", "--stage", "nightly"], "reproduce",
     ["reproduce"], {"repro_command": "pytest t.py::x", "stage": "nightly"}),
    (["ci-targeted", "--base", "origin/main", "--approved"], "ci-targeted", ["ci-targeted"],
     {"base": "origin/main", "approved": True}),
    (["affected-tests", "--base", "HEAD~1", "--json"], "affected-tests", ["affected-tests"],
     {"base": "HEAD~1", "json": True}),
    (["start", "toy", "a"], "start", ["start", "toy", "a"], {}),
    (["refactor", "test/test_ops.py"], "refactor", ["test/test_ops.py"], {}),
    (["ci-check", "--pr-number", "5"], "ci-check", [], {"ci_check": True, "pr_number": 5}),
    (["review-queue"], "review-queue", [], {"review_queue": True}),
    (["ingest", "--repo", "o/r"], "ingest", [], {"ingest_feedback": True, "repo": "o/r"}),
]


@pytest.mark.parametrize(("argv", "command", "words", "fields"), SEED_INVOCATIONS)
def test_seed_and_subcommand_invocations_parse_as_before(argv: list[str], command: str | None,
                                                         words: list[str],
                                                         fields: dict[str, Any]) -> None:
    """Every seed spelling (bare FILE, --ci-check, ...) and its subcommand mean the same."""
    from flow.cli.argv import parse

    args, _ = parse(argv)
    expected_command = "refactor" if command is None and words else command
    assert (expected_command, words) == (args.command, args.args)
    assert fields == {k: getattr(args, k) for k in fields}


@pytest.mark.parametrize("argv", [
    ["status", "--limit", "3"], ["reproduce", "--pr-number", "3"], ["ci-check", "--command", "x"],
    ["affected-tests", "--flow", "x"], ["--ci-check", "--batch", "b.json"],
    ["schema", "--resume"], ["refactor", "t.py", "--base", "x"], ["--flow", "x", "--limit", "2"]])
def test_a_flag_of_another_command_is_refused(argv: list[str]) -> None:
    """Each command accepts its own flags only; the error names the command's --help."""
    from flow.cli.argv import parse
    from flow.core.errors import UsageError

    with pytest.raises(UsageError) as err:
        parse(argv)
    assert "--help" in err.value.hint


@pytest.mark.parametrize("command", [None, "reproduce", "refactor", "ci-check", "affected-tests",
                                     "ci-targeted", "review-queue", "ingest", "status", "schema",
                                     "graph", "serve", "demo", "start", "mcp"])
def test_every_flag_of_every_command_is_described(command: str | None) -> None:
    """Each command's --help describes every flag and positional it takes."""
    from flow.cli.argv import parser_for

    parser = parser_for(command)
    assert [] == [a.dest for a in parser._actions if not (a.help or "").strip()]


@pytest.mark.parametrize("argv", [["reproduce", "--help"], ["refactor", "-h"], ["--help"],
                                  ["ci-check", "--pr-number", "x", "--help"], ["mcp", "--help"]])
def test_command_help_is_one_json_object(tmp_path: Path, argv: list[str]) -> None:
    """`COMMAND --help` prints one JSON object whose usage is that command's own."""
    code, spec = _run(tmp_path, *argv)
    assert (0, "done") == (code, spec["status"])
    name = argv[0] if not argv[0].startswith("-") else "COMMAND"
    assert name in spec["usage"]


@pytest.mark.parametrize("repo", ["o/r\n", "../..", "a/b/c", "o/", "./x", "o r/x"])
def test_repo_must_be_owner_slash_name(tmp_path: Path, repo: str) -> None:
    """--repo is checked as owner/name before any folder is made (bad_input, exit 2)."""
    code, spec = _run(tmp_path, "--ci-check", "--repo", repo, "--pr-number", "1")
    assert (2, "bad_input") == (code, spec["error"]["code"])
    assert not (tmp_path / "ci").exists()


@pytest.mark.parametrize("name", ["te st.py", "it's.py", "-x.py"])
def test_odd_file_name_gets_an_error_about_the_file_name(tmp_path: Path, name: str) -> None:
    """A test file whose name cannot name a flow folder is refused as such (bad_name)."""
    (tmp_path / name).write_text("import unittest\n")
    code, spec = _run(tmp_path / "ws", "refactor", str(tmp_path / name))
    assert (2, "bad_name") == (code, spec["error"]["code"])
    assert "file's name" in spec["error"]["message"]


@pytest.mark.parametrize(("workflow", "data", "expected"), [
    ("refactor", {"rel": "test/test_ops.py", "file": "/s/test/test_ops.py"}, "file test/test_ops.py"),
    ("ci", {"repo": "o/r", "number": 7}, "PR o/r#7"),
    ("ci-targeted", {"repo": "o/r", "number": 8, "base": "x"}, "PR o/r#8"),
    ("reproduce", {"command": "pytest t.py::test_a"}, "test pytest t.py::test_a"),
    ("reproduce", {"command": None, "batch_file": "/b.json"}, "batch /b.json"),
    ("ingest", {"mode": "apply", "repo": "o/r", "pr": 3}, "apply o/r#3"),
    ("review-queue", {"day": "2026-01-02"}, "review batch of 2026-01-02"),
    ("toy", {"name": "x"}, None),
])
def test_status_names_what_each_flow_works_on(workflow: str, data: dict[str, Any],
                                              expected: str | None) -> None:
    """status shows the test, file or PR a flow works on next to its id."""
    from flow.cli.status import subject

    assert expected == subject(workflow, data)


def test_status_table_has_a_works_on_column(tmp_path: Path) -> None:
    """The human table carries the WORKS ON column."""
    _run(tmp_path, "start", "toy", "x")
    drv = Driver(tmp_path, TOY)
    _, text = on_a_terminal(tmp_path, "status", env=drv.env, stderr=False)
    assert "WORKS ON" in text.splitlines()[0]


def _on_a_terminal(ws: Path, *argv: str) -> tuple[int, str]:
    """Run orchestrator.py with stdout on a pseudo-terminal, as a person's shell does."""
    return on_a_terminal(ws, *argv, env=TOY, stderr=False)


@pytest.mark.parametrize("command", [None, "reproduce", "graph", "serve", "status", "mcp"])
def test_help_on_a_terminal_is_plain_text_with_flags_and_an_example(tmp_path: Path,
                                                                    command: str | None) -> None:
    """On a terminal --help prints the usage as text (not JSON): every flag, an example."""
    from flow.cli.argv import EXAMPLES, parser_for

    code, text = _on_a_terminal(tmp_path, *([command] if command else []), "--help")
    flags = [o for a in parser_for(command)._actions for o in a.option_strings
             if o.startswith("--")]
    assert (0, False, [], True) == (code, text.lstrip().startswith("{"),
                                    [f for f in flags if f not in text],
                                    f"example:\n  {EXAMPLES[command]}" in text)


def test_json_forces_the_json_object_on_a_terminal(tmp_path: Path) -> None:
    """--json keeps the contract's one JSON object even on a terminal."""
    code, text = _on_a_terminal(tmp_path, "reproduce", "--help", "--json")
    spec = json.loads(text)
    assert (0, "done", True) == (code, spec["status"], "--command" in spec["usage"])


@pytest.mark.parametrize("command", [None, "reproduce", "refactor", "ci-check", "affected-tests",
                                     "ci-targeted", "review-queue", "ingest", "status", "schema",
                                     "graph", "serve", "demo", "start", "mcp"])
def test_every_help_example_parses_as_its_command(command: str | None) -> None:
    """The example each --help shows is a command line the parser accepts, for that command."""
    import shlex

    from flow.cli.argv import EXAMPLES, parse

    args, _ = parse(shlex.split(EXAMPLES[command])[1:])
    assert (command or "reproduce") == args.command


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("argv", [
    ["--bogus"],                              # the command line
    ["--flow", "toy/absent", "--resume"],     # a flow that is not there
    ["start", "toy", "bad"],                  # inputs the workflow refuses
])
def test_an_error_on_a_terminal_says_its_message_once(tmp_path: Path, argv: list[str]) -> None:
    """On a terminal an error is text: its message once (not again as the top-level copy the
    JSON carries), its hint once, the same exit code as piped."""
    code, spec = _run(tmp_path, *argv)
    shown_code, text = on_a_terminal(tmp_path, *argv, env=TOY)
    message, hint = spec["error"]["message"], spec["error"]["hint"]
    assert (code, False, 1, 1) == (shown_code, text.lstrip().startswith("{"),
                                   _words(text).count(_words(message)),
                                   _words(text).count(_words(hint)))
    assert text.startswith(f"error ({spec['error']['code']}): ")


def test_an_error_on_a_terminal_stays_json_with_the_json_flag(tmp_path: Path) -> None:
    """--json, accepted by every command, keeps the error's JSON object on a terminal."""
    code, text = on_a_terminal(tmp_path, "start", "toy", "bad", "--json", env=TOY)
    assert (2, "bad_input") == (code, json.loads(text)["error"]["code"])


def _toy_with_a_long_error(ws: Path, name: str) -> str:
    """A toy flow whose last call failed with a long message; that message."""
    drv = Driver(ws, TOY)
    spec = drv.call(["start", "toy", name]).spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps(
        {"ok": "only after the reviewers agree", "value": "somewhere near a dozen"}))
    failed = drv.call(["--flow", f"toy/{name}", "--feed", "coder", "--feed-file",
                       task["feed_file"]]).spec
    assert "error" == failed["status"]
    return str(failed["error"]["message"])


@pytest.mark.parametrize("columns,limit", [(100, 100), (72, 72), (200, 100)])
def test_status_on_a_terminal_fits_its_width_and_keeps_every_word(tmp_path: Path, columns: int,
                                                                  limit: int) -> None:
    """status fits the terminal, at most 100 columns: a long error is wrapped between words,
    never cut, and every word of it is shown whole."""
    message = _toy_with_a_long_error(tmp_path, "a-flow-with-a-fairly-long-name-for-its-column")
    _toy_with_a_long_error(tmp_path, "short")
    assert len(f"error invalid_feed: {message}") > 100
    code, text = on_a_terminal(tmp_path, "status", env=TOY, columns=columns)
    lines = text.splitlines()
    assert (0, []) == (code, [line for line in lines if len(line) > limit])
    shown = text.split()
    assert ([], 2) == ([w for w in message.split() if w not in shown],
                       _words(text).count(_words(message)))


def test_a_campaigns_table_fits_100_columns_and_keeps_every_word() -> None:
    """status --campaign's text wraps a lease and a long last error between words."""
    from flow.cli.fleet import table

    error = ("invalid_feed: the coder's result for item nightly-42 named a test that the "
             "assessment never listed, so the flow refused it and kept its state as it was")
    info = {"campaign": "nightly", "kind": "items", "items": 3, "left": 2,
            "by_state": {"done": 1, "leased": 1, "free": 1}, "expired_leases": 0,
            "throughput_per_hour": 4.5, "errors": [{"item": "nightly-42", "error": error}],
            "leases": [{"item": "nightly-42", "holder": "harness-on-the-second-build-machine",
                        "host": "build-machine-two.example", "pid": 41234,
                        "since": "2026-03-01T10:00:00Z", "lease_until": "2026-03-01T10:15:00Z",
                        "expired": False, "alive": True, "last_seen_s_ago": 12.5,
                        "claims": 2,
                        "flow_id": "refactor/core/test_a_rather_long_test_file_name"}]}
    text = table(info)  # 100 columns unless told
    assert [] == [line for line in text.splitlines() if len(line) > 100]
    assert [] == [w for w in error.split() if w not in text.split()]


def test_graph_on_a_terminal_prints_mermaid_text(tmp_path: Path) -> None:
    """graph WORKFLOW on a terminal prints the Mermaid source itself, piped it is JSON."""
    code, text = _on_a_terminal(tmp_path, "graph", "toy")
    _, spec = _run(tmp_path, "graph", "toy")
    assert (0, spec["mermaid"] + "\n") == (code, text)


def test_graph_without_a_flow_marks_no_state_current(tmp_path: Path) -> None:
    """Without --flow the picture and the Mermaid text show no state as active."""
    import re

    out = tmp_path / "plain.svg"
    code, spec = _run(tmp_path, "graph", "toy", "--format", "svg", "--output", str(out))
    fills = set(re.findall(r"<title>\w+</title>\s*<path fill=\"(\w+)\"", out.read_text()))
    assert (0, False, False) == (code, "darksalmon" in fills, "s_active\n" in spec["mermaid"]
                                 .replace("classDef s_active", ""))


def _toy_at_review(ws: Path) -> None:
    toy_at_review(Driver(ws, TOY))


@pytest.mark.parametrize("fmt,magic", [("svg", b"<?xml"), ("png", b"\x89PNG")])
def test_graph_draws_a_picture_with_graphviz(tmp_path: Path, fmt: str, magic: bytes) -> None:
    """--format svg|png writes a picture drawn by Graphviz's dot and names it in the object."""
    code, spec = _run(tmp_path, "graph", "toy", "--format", fmt)
    picture = Path(spec["picture"])
    assert (0, tmp_path / "graphs" / f"toy.{fmt}", magic) == (
        code, picture, picture.read_bytes()[:len(magic)])


def test_graph_of_a_flow_highlights_its_state_and_path(tmp_path: Path) -> None:
    """--flow draws the flow's phase active (red) and the states it went through as taken."""
    import re

    _toy_at_review(tmp_path)
    out = tmp_path / "pic.svg"
    code, spec = _run(tmp_path, "graph", "toy", "--flow", "toy/pic", "--format", "svg",
                      "--output", str(out))
    svg = out.read_text()
    fill = dict(re.findall(r"<title>(\w+)</title>\s*<(?:path|polygon) fill=\"(\w+)\"", svg))
    assert (0, "review", ["prepare", "work", "review"], "darksalmon",
            ["azure", "azure"], "white", "Class review s_active" in spec["mermaid"]) == (
        code, spec["current"], spec["path"], fill["review"], [fill["prepare"], fill["work"]],
        fill["approve"], True)


@pytest.mark.parametrize("argv,code", [
    (["graph", "toy", "--output", "x.svg"], "usage"),
    (["graph", "toy", "--flow", "toy/none"], "flow_not_found"),
    (["graph", "toy", "--format", "gif"], "usage"),
    (["serve", "--port", "70000"], "bad_input"),
])
def test_bad_graph_and_serve_input_is_one_json_error(tmp_path: Path, argv: list[str],
                                                     code: str) -> None:
    """Bad graph/serve flags answer with a JSON error, a hint and exit 2."""
    exit_code, spec = _run(tmp_path, *argv)
    assert (2, "error", code, True) == (exit_code, spec["status"], spec["error"]["code"],
                                        bool(spec["error"]["hint"]))


def test_graph_of_a_flow_of_another_workflow_is_refused(tmp_path: Path) -> None:
    """graph reproduce --flow toy/... names the flow's own workflow in the hint."""
    _toy_at_review(tmp_path)
    code, spec = _run(tmp_path, "graph", "reproduce", "--flow", "toy/pic")
    assert (2, "usage", True) == (code, spec["error"]["code"],
                                  "graph toy --flow toy/pic" in spec["error"]["hint"])


def test_resume_and_feed_import_nothing_of_the_dashboard_or_graphviz(tmp_path: Path) -> None:
    """--resume and --feed never import the web page's stack nor the graphviz binding."""
    drv = Driver(tmp_path, TOY)
    spec = drv.call(["start", "toy", "quick"]).spec
    task = spec["tasks"][0]
    Path(task["feed_file"]).write_text(json.dumps({"ok": True, "value": 1}))
    base = ["--workspace", str(tmp_path), "--flow", "toy/quick"]
    heavy = {"flow.web", "starlette", "uvicorn", "jinja2", "graphviz", "playwright"}
    found = {}
    for argv in ([*base, "--resume"], [*base, "--feed", "coder", "--feed-file", task["feed_file"]]):
        mods = _modules_after(argv, drv.env)
        found[argv[-1]] = sorted(m for m in mods if m.split(".")[0] in heavy
                                 or m.startswith("flow.web"))
    assert {"--resume": [], task["feed_file"]: []} == found


_ATEXIT_MARK = ("import atexit, os\n"
                "atexit.register(lambda: open(os.environ['EXIT_MARK'], 'a').write('teardown\\n'))\n")


def test_a_call_ends_without_the_interpreter_teardown_but_a_wrapping_tool_keeps_it(
        tmp_path: Path) -> None:
    """Run by python itself, a finished call flushes its one JSON object and its exit code
    and leaves without tearing down its modules (an atexit hook planted by sitecustomize
    never runs); run through runpy (as a profiler or coverage runs it), the teardown and
    the tool's report at exit stay."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_ATEXIT_MARK)
    mark = tmp_path / "mark"
    env = {**Driver(tmp_path / "ws", TOY).env, "EXIT_MARK": str(mark),
           "PYTHONPATH": f"{site}:{Driver(tmp_path / 'ws', TOY).env.get('PYTHONPATH', '')}"}
    direct = subprocess.run([sys.executable, str(SCRIPT), "--workspace", str(tmp_path / "ws"),
                             "--flow", "no/such", "--resume"], env=env, capture_output=True,
                            text=True)
    assert (2, "flow_not_found") == (direct.returncode,
                                     json.loads(direct.stdout)["error"]["code"])
    assert not mark.exists()
    runpy = (f"import runpy, sys; sys.argv = [{str(SCRIPT)!r}, '--workspace', "
             f"{str(tmp_path / 'ws')!r}, '--flow', 'no/such', '--resume']; "
             f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')")
    wrapped = subprocess.run([sys.executable, "-c", runpy], env=env, capture_output=True,
                             text=True)
    assert (2, "flow_not_found") == (wrapped.returncode,
                                     json.loads(wrapped.stdout)["error"]["code"])
    assert "teardown\n" == mark.read_text()
