"""The edges of the contract, through the CLI: strict feeds, bounded feed files, audited
refusals, faults of the machine reported as such, deep state validation, no symlink followed."""

from __future__ import annotations

import errno
import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import ROOT, SCRIPT
from tests.contract.inproc import TOY_PLUGIN, call, feed, start_toy


@pytest.fixture
def toy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, Any]]:
    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", TOY_PLUGIN)
    for name in ("ORCHESTRATOR_LOCK_TIMEOUT", "ORCHESTRATOR_MAX_FEED_BYTES"):
        monkeypatch.delenv(name, raising=False)
    ws = tmp_path / "ws"
    return ws, start_toy(ws)


def _state(spec: dict[str, Any]) -> Path:
    return Path(spec["workspace"]) / "flow_state.json"


def _audit(spec: dict[str, Any]) -> list[dict[str, Any]]:
    text = (Path(spec["workspace"]) / "audit.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


MISTYPED = [
    ('{"ok": 1, "value": 1}', "ok"),
    ('{"ok": "true", "value": 1}', "ok"),
    ('{"ok": true, "value": "3"}', "value"),
    ('{"ok": true, "value": 1.0}', "value"),
    ('{"ok": true, "value": true}', "value"),
    ('{"ok": true, "value": 1, "agent_id": 7}', "agent_id"),
]


@pytest.mark.parametrize(("content", "field"), MISTYPED)
def test_mistyped_feed_is_refused_without_coercion(toy: tuple[Path, dict[str, Any]],
                                                   content: str, field: str) -> None:
    """A value of the wrong JSON type is refused (1 is no boolean, "3" no integer)."""
    ws, spec = toy
    before = _state(spec).read_bytes()
    code, out = feed(ws, spec, spec["tasks"][0], content)
    assert (2, "invalid_feed") == (code, out["error"]["code"])
    assert field in [e["field"] for e in out["error"]["field_errors"]]
    assert before == _state(spec).read_bytes()


@pytest.mark.parametrize(("task_id", "code"), [
    (5, "bad_task_id"), ("", "bad_task_id"), (None, "bad_task_id"), ("nope", "foreign_feed"),
    ("<other>", "foreign_feed")])
def test_content_task_id_must_name_the_task_fed(toy: tuple[Path, dict[str, Any]],
                                                task_id: Any, code: str) -> None:
    """A task_id in the content that is not the fed task's own id is refused."""
    ws, spec = toy
    first, other = spec["tasks"]
    named = other["task_id"] if task_id == "<other>" else task_id
    before = _state(spec).read_bytes()
    got, out = feed(ws, spec, first, json.dumps({"ok": True, "value": 1, "task_id": named}))
    assert (2, code) == (got, out["error"]["code"])
    assert before == _state(spec).read_bytes()


def test_content_task_id_naming_the_task_is_accepted(toy: tuple[Path, dict[str, Any]]) -> None:
    """The fed task's own task_id in the content is fine."""
    ws, spec = toy
    task = spec["tasks"][0]
    code, out = feed(ws, spec, task, json.dumps({"ok": True, "value": 1,
                                                 "task_id": task["task_id"]}))
    assert (0, "waiting") == (code, out["status"])


def test_fifo_feed_file_is_refused_without_blocking(toy: tuple[Path, dict[str, Any]],
                                                   tmp_path: Path) -> None:
    """A FIFO nobody writes to is refused at once (the call does not hang holding the lock)."""
    ws, spec = toy
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result: list[tuple[int, dict[str, Any]]] = []
    worker = threading.Thread(target=lambda: result.append(
        feed(ws, spec, spec["tasks"][0], None, str(fifo))), daemon=True)
    worker.start()
    worker.join(20)
    assert result, "the call blocked on the FIFO"
    assert (2, "feed_not_regular") == (result[0][0], result[0][1]["error"]["code"])


@pytest.mark.parametrize("path", ["/dev/zero", "<dir>"])
def test_device_or_folder_feed_file_is_refused(toy: tuple[Path, dict[str, Any]],
                                               tmp_path: Path, path: str) -> None:
    """/dev/zero or a folder as --feed-file: refused as not a regular file."""
    ws, spec = toy
    target = str(tmp_path) if path == "<dir>" else path
    code, out = feed(ws, spec, spec["tasks"][0], None, target)
    assert (2, "feed_not_regular") == (code, out["error"]["code"])
    assert out["error"]["hint"]


def test_feed_file_over_the_size_limit_is_refused(toy: tuple[Path, dict[str, Any]],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A feed larger than ORCHESTRATOR_MAX_FEED_BYTES is refused before it is parsed."""
    ws, spec = toy
    monkeypatch.setenv("ORCHESTRATOR_MAX_FEED_BYTES", "64")
    body = json.dumps({"ok": True, "value": 1, "agent_name": "x" * 100})
    code, out = feed(ws, spec, spec["tasks"][0], body)
    assert (2, "feed_too_large", 64) == (code, out["error"]["code"], out["error"]["limit"])


@pytest.mark.parametrize("value", ["lots", "-5", "1.5", "1"])
def test_bad_max_feed_bytes_setting_is_an_input_error(toy: tuple[Path, dict[str, Any]],
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      value: str) -> None:
    """An unusable ORCHESTRATOR_MAX_FEED_BYTES is a bad setting (exit 2), not a bug."""
    ws, spec = toy
    monkeypatch.setenv("ORCHESTRATOR_MAX_FEED_BYTES", value)
    code, out = feed(ws, spec, spec["tasks"][0], '{"ok": true, "value": 1}')
    assert (2, "bad_setting") == (code, out["error"]["code"])
    assert "ORCHESTRATOR_MAX_FEED_BYTES" == out["error"]["setting"]


def test_accepted_result_is_stored_once(toy: tuple[Path, dict[str, Any]]) -> None:
    """A fed result appears once in the state (its task's result), not copied again."""
    ws, spec = toy
    marker = "m" * 5000
    code, _ = feed(ws, spec, spec["tasks"][0],
                   json.dumps({"ok": True, "value": 1, "agent_name": marker}))
    assert 0 == code
    assert 1 == _state(spec).read_text().count(marker)


@pytest.mark.parametrize(("content", "code"), [
    (None, "feed_missing"), ("", "feed_empty"), ("{nope", "feed_malformed"),
    ("[]", "feed_malformed"), ('{"ok": 1, "value": 1}', "invalid_feed")])
def test_every_refused_feed_is_audited(toy: tuple[Path, dict[str, Any]], content: str | None,
                                       code: str) -> None:
    """Missing, empty, malformed and invalid feeds each leave a feed_refused audit record."""
    ws, spec = toy
    task = spec["tasks"][0]
    Path(task["feed_file"]).unlink(missing_ok=True)
    got, out = feed(ws, spec, task, content)
    assert (2, code) == (got, out["error"]["code"])
    last = _audit(spec)[-1]
    assert ("feed_refused", code, task["task_id"]) == (last["event"], last["code"],
                                                      last["task_id"])


def test_audit_record_lost_by_a_kill_is_replayed_on_load(toy: tuple[Path, dict[str, Any]]
                                                         ) -> None:
    """The state carries its own audit record; a log missing it gets it back on the next call."""
    ws, spec = toy
    code, _ = feed(ws, spec, spec["tasks"][0], '{"ok": true, "value": 1}')
    assert 0 == code
    log = Path(spec["workspace"]) / "audit.jsonl"
    lines = log.read_text().splitlines()
    assert "fed" == json.loads(lines[-1])["event"]
    log.write_text("\n".join(lines[:-1]) + "\n")  # as if killed between state and log
    code, _ = call(["--workspace", str(ws), "--flow", spec["flow_id"], "--resume",
                    "--harness", "codex"])  # a harness change: not served from the cache
    assert 0 == code
    revisions = [r["revision"] for r in _audit(spec) if "revision" in r]
    assert revisions == sorted(set(revisions)) == list(range(1, revisions[-1] + 1))
    assert "replayed_at" in [r for r in _audit(spec) if r.get("event") == "fed"][0]


@pytest.mark.parametrize(("name", "code"), [
    ("ENOSPC", "disk_full"), ("EROFS", "read_only"), ("EACCES", "permission_denied"),
    ("EDQUOT", "disk_full")])
def test_write_faults_are_reported_as_faults_not_bugs(toy: tuple[Path, dict[str, Any]],
                                                      monkeypatch: pytest.MonkeyPatch,
                                                      name: str, code: str) -> None:
    """A state write failing with a fault of the machine: exit 4, its own code, a hint."""
    ws, spec = toy
    before = _state(spec).read_bytes()

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise OSError(getattr(errno, name), os.strerror(getattr(errno, name)), str(args[1]))

    monkeypatch.setattr(os, "replace", refuse)
    got, out = feed(ws, spec, spec["tasks"][0], '{"ok": true, "value": 1}')
    assert (4, code, spec["flow_id"]) == (got, out["error"]["code"], out["flow_id"])
    assert out["error"]["hint"] and out["error"]["errno"] == name
    assert before == _state(spec).read_bytes()


def _limited_fsize(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_file_size_limit_is_reported_as_a_fault(tmp_path: Path) -> None:
    """Under `ulimit -f` too small for the state file: exit 4, code file_too_large."""
    env = {**os.environ, "ORCHESTRATOR_PLUGINS": TOY_PLUGIN,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--workspace", str(tmp_path / "ws"),
                           "start", "toy", "big"], capture_output=True, text=True, env=env,
                          preexec_fn=lambda: _limited_fsize(600), timeout=60)
    out = json.loads(proc.stdout)
    assert (4, "file_too_large") == (proc.returncode, out["error"]["code"]), proc.stderr
    assert "toy/big" == out["flow_id"]


def test_workspace_that_is_a_file_is_reported(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """--workspace naming a regular file: exit 4, workspace_not_a_folder, nothing created."""
    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", TOY_PLUGIN)
    plain = tmp_path / "plain"
    plain.write_text("not a folder")
    code, out = call(["--workspace", str(plain), "start", "toy", "x"])
    assert (4, "workspace_not_a_folder") == (code, out["error"]["code"])
    assert "not a folder" == plain.read_text()


@pytest.mark.parametrize("value", ["soon", "-1", "nan", "inf"])
def test_bad_lock_timeout_setting_is_an_input_error(toy: tuple[Path, dict[str, Any]],
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    value: str) -> None:
    """An unusable ORCHESTRATOR_LOCK_TIMEOUT: exit 2, bad_setting, naming the flow."""
    ws, spec = toy
    monkeypatch.setenv("ORCHESTRATOR_LOCK_TIMEOUT", value)
    code, out = call(["--workspace", str(ws), "--flow", spec["flow_id"], "--answer", "yes"])
    assert (2, "bad_setting", "ORCHESTRATOR_LOCK_TIMEOUT") == (
        code, out["error"]["code"], out["error"]["setting"])
    assert spec["flow_id"] == out["flow_id"]


@pytest.mark.parametrize(("edit", "needle"), [
    (lambda raw: raw.update(phase="nowhere"), "phase 'nowhere'"),
    (lambda raw: raw["data"].update(prepared="many"), "data does not match"),
    (lambda raw: raw["data"].pop("name"), "data does not match"),
    (lambda raw: raw["tasks"][0].update(feed="unknown"), "feed 'unknown'"),
])
def test_state_that_does_not_fit_its_workflow_fails_before_any_write(
        toy: tuple[Path, dict[str, Any]], edit: Any, needle: str) -> None:
    """Unknown phase or mistyped data: exit 4 naming the file, state and audit untouched."""
    ws, spec = toy
    raw = json.loads(_state(spec).read_text())
    edit(raw)
    _state(spec).write_text(json.dumps(raw))
    before = (_state(spec).read_bytes(), (Path(spec["workspace"]) / "audit.jsonl").read_bytes())
    code, out = feed(ws, spec, spec["tasks"][0], '{"ok": true, "value": 1}')
    assert (4, "state_unloadable", spec["flow_id"]) == (code, out["error"]["code"],
                                                        out["flow_id"])
    assert needle in out["error"]["message"]
    assert before == (_state(spec).read_bytes(),
                      (Path(spec["workspace"]) / "audit.jsonl").read_bytes())


@pytest.mark.parametrize("name", [".lock.holder", ".lock", "audit.jsonl"])
def test_planted_symlink_in_the_flow_folder_is_never_followed(
        toy: tuple[Path, dict[str, Any]], tmp_path: Path, name: str) -> None:
    """A link planted at a workspace file: the call refuses (exit 4), the target is unchanged."""
    ws, spec = toy
    outside = tmp_path / "outside.txt"
    outside.write_text("precious")
    link = Path(spec["workspace"]) / name
    link.unlink(missing_ok=True)
    link.symlink_to(outside)
    code, out = feed(ws, spec, spec["tasks"][0], '{"ok": true, "value": 1}')
    assert (4, "unsafe_path") == (code, out["error"]["code"])
    assert "precious" == outside.read_text()


def test_busy_error_names_the_flow(toy: tuple[Path, dict[str, Any]],
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """busy carries the flow_id and workflow it is about, not null."""
    from workspace.lock import FlowLock

    ws, spec = toy
    monkeypatch.setenv("ORCHESTRATOR_LOCK_TIMEOUT", "0.2")
    with FlowLock(Path(spec["workspace"])):
        code, out = call(["--workspace", str(ws), "--flow", spec["flow_id"], "--answer", "y"])
    assert (3, "busy", spec["flow_id"], "toy") == (code, out["error"]["code"], out["flow_id"],
                                                  out["workflow"])


def test_unparsable_state_error_names_the_flow(toy: tuple[Path, dict[str, Any]]) -> None:
    """A state file that is not JSON: exit 4 with the flow's id in flow_id."""
    ws, spec = toy
    _state(spec).write_text("{not json")
    code, out = call(["--workspace", str(ws), "--flow", spec["flow_id"], "--answer", "yes"])
    assert (4, "state_unloadable", spec["flow_id"]) == (code, out["error"]["code"],
                                                        out["flow_id"])
    assert "{not json" == _state(spec).read_text()


def test_status_of_a_workspace_that_is_a_file(tmp_path: Path) -> None:
    """status on a workspace that is a file says so (exit 4), not 'no flows'."""
    plain = tmp_path / "plain"
    plain.write_text("x")
    code, out = call(["--workspace", str(plain), "status", "--json"])
    assert (4, "workspace_not_a_folder") == (code, out["error"]["code"])


def test_a_feed_naming_a_key_twice_is_refused_and_changes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """{"ok": true, "ok": false, ...} (even nested) is feed_duplicate_key, state untouched."""
    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", TOY_PLUGIN)
    spec = start_toy(tmp_path, "dup")
    state = tmp_path / spec["flow_id"] / "flow_state.json"
    before = state.read_bytes()
    for text in ('{"ok": true, "value": 1, "ok": false}', '{"ok": true, "value": 1, '
                 '"extra": {"a": 1, "a": 2}}'):
        code, got = feed(tmp_path, spec, spec["tasks"][0], text)
        assert (2, "feed_duplicate_key", before) == (code, got["error"]["code"], state.read_bytes())


def test_a_symlink_loop_as_feed_file_is_refused_and_audited(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--feed-file naming a symlink loop: feed_missing (exit 2), an audit record, no traceback."""
    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", TOY_PLUGIN)
    spec = start_toy(tmp_path, "loop")
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    code, got = feed(tmp_path, spec, spec["tasks"][0], None, str(tmp_path / "a"))
    last = json.loads((tmp_path / spec["flow_id"] / "audit.jsonl").read_text().splitlines()[-1])
    assert (2, "feed_missing", "feed_refused", "feed_missing") == (
        code, got["error"]["code"], last.get("event"), last.get("code"))


def test_a_workspace_under_proc_is_a_clear_refusal(tmp_path: Path) -> None:
    """--workspace /proc/1/wsx (a folder that cannot be made) is an error with exit 4, not a bug."""
    code, got = call(["--workspace", "/proc/1/wsx", "reproduce", "--command", "pytest t.py",
                      "--source-dir", str(ROOT / "examples" / "calc")])
    assert (4, "workspace_unusable") == (code, got["error"]["code"])


def test_an_audit_log_that_is_a_folder_is_named_by_its_path(toy: tuple[Path, dict[str, Any]]
                                                            ) -> None:
    """audit.jsonl replaced by a folder, then a feed (which must audit): exit 4
    (workspace_not_a_file) naming the audit log's path, never a file descriptor; the state
    is byte-identical."""
    ws, spec = toy
    audit = Path(spec["workspace"]) / "audit.jsonl"
    audit.unlink()
    audit.mkdir()
    before = _state(spec).read_bytes()
    code, got = feed(ws, spec, spec["tasks"][0], json.dumps({"ok": True, "value": 1}))
    message = got.get("error", {}).get("message", "")
    assert (4, "workspace_not_a_file", True) == (
        code, got.get("error", {}).get("code"), repr(str(audit)) in message), got
    assert " at 4" not in message and before == _state(spec).read_bytes()
