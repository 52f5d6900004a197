"""The state store: atomic writes, the lock, migrations, and failing closed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flow.core.errors import Busy, StateLoadError
from workspace.atomic import write_atomic
from workspace.lock import FlowLock
from workspace.migrations import migrate
from workspace.paths import check_flow_id, workspace_root
from workspace.store import FlowStore


def test_atomic_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    """A write replaces the file whole and cleans up its temporary file."""
    target = tmp_path / "a" / "state.json"
    write_atomic(target, b"one")
    write_atomic(target, b"two")
    assert b"two" == target.read_bytes()
    assert ["state.json"] == sorted(p.name for p in target.parent.iterdir())


def test_second_lock_holder_gets_busy_naming_the_first(tmp_path: Path) -> None:
    """A bounded wait, then Busy with the holder's pid and command."""
    with FlowLock(tmp_path, timeout=5):
        with pytest.raises(Busy) as info:
            with FlowLock(tmp_path, timeout=0.1):
                pass
    assert "pid" in info.value.details["holder"]
    assert 3 == info.value.exit_code


_HOLD = ("import fcntl, os, sys, time\n"
         "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)\n"
         "fcntl.flock(fd, fcntl.LOCK_EX)\n"
         "print('held', flush=True)\n"
         "time.sleep(float(sys.argv[2]))\n")


def _held_elsewhere(path: Path, seconds: float) -> subprocess.Popen[str]:
    """Another process holding ``path``'s flock for ``seconds``, started once it holds it."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLD, str(path), str(seconds)],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and "held\n" == holder.stdout.readline()
    return holder


def test_the_lock_is_won_as_soon_as_another_process_lets_it_go(tmp_path: Path) -> None:
    """A waiter polls within its timeout and wins the lock once the holder process ends."""
    tmp_path.mkdir(exist_ok=True)
    holder = _held_elsewhere(tmp_path / ".lock", 0.4)
    started = time.monotonic()
    with FlowLock(tmp_path, timeout=10):
        took = time.monotonic() - started
    holder.wait()
    assert 0.2 < took < 5


def test_a_lock_held_by_a_killed_process_is_free_at_once(tmp_path: Path) -> None:
    """kill -9 of the holder frees the lock: no stale lock file to clean up."""
    holder = _held_elsewhere(tmp_path / ".lock", 60)
    with pytest.raises(Busy):
        with FlowLock(tmp_path, timeout=0):
            pass
    holder.kill()
    holder.wait()
    with FlowLock(tmp_path, timeout=0):
        pass


def test_a_child_started_under_the_lock_does_not_keep_it(tmp_path: Path) -> None:
    """The lock's descriptor is not inherited: a job started while holding it (and still
    running) does not hold the flow after the call lets it go."""
    with FlowLock(tmp_path, timeout=5):
        child = subprocess.Popen(["sleep", "30"], close_fds=False)
    try:
        with FlowLock(tmp_path, timeout=0):
            pass
    finally:
        child.kill()
        child.wait()


def test_a_planted_link_for_the_lock_file_is_refused(tmp_path: Path) -> None:
    """.lock as a symbolic link (to a file the caller must not create or truncate) is refused,
    and its target is left alone."""
    target = tmp_path / "elsewhere"
    target.write_text("keep")
    (tmp_path / "flow").mkdir()
    (tmp_path / "flow" / ".lock").symlink_to(target)
    with pytest.raises(OSError):
        with FlowLock(tmp_path / "flow", timeout=0):
            pass
    assert "keep" == target.read_text()


def test_migrations_run_as_a_chain() -> None:
    """Each step takes version n to n+1, and the result carries the current version."""
    chain = {1: lambda raw: {**raw, "b": raw["a"] * 2}, 2: lambda raw: {**raw, "c": raw["b"] + 1}}
    assert {"schema_version": 3, "a": 1, "b": 2, "c": 3} == migrate(
        {"schema_version": 1, "a": 1}, 3, "x", chain)


@pytest.mark.parametrize("version", [99, 0, "1", None])
def test_unknown_schema_versions_are_refused(version: object) -> None:
    """A newer or nonsense schema_version fails closed with a hint."""
    with pytest.raises(StateLoadError) as info:
        migrate({"schema_version": version}, 1, "f")
    assert info.value.hint


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b'{"schema_version": 1}'])
def test_unloadable_state_fails_closed_and_is_kept(tmp_path: Path, content: bytes) -> None:
    """Corrupt or incomplete state raises StateLoadError and the file stays untouched."""
    store = FlowStore(tmp_path, "x/y")
    write_atomic(store.state_path, content)
    with pytest.raises(StateLoadError) as info:
        store.load()
    assert 4 == info.value.exit_code
    assert content == store.state_path.read_bytes()


@pytest.mark.parametrize("bad", ["", "../up", "a/../b", "/abs", "a//b", "sp ace"])
def test_flow_ids_that_could_leave_the_workspace_are_refused(bad: str) -> None:
    """Flow ids are relative names; nothing built from one escapes the root."""
    from flow.core.errors import UsageError

    with pytest.raises(UsageError):
        check_flow_id(bad)


def test_workspace_root_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--workspace wins over ORCHESTRATOR_WORKSPACE, which wins over ./agent_space."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ORCHESTRATOR_WORKSPACE", raising=False)
    assert tmp_path / "agent_space" == workspace_root(None)
    monkeypatch.setenv("ORCHESTRATOR_WORKSPACE", str(tmp_path / "env"))
    assert tmp_path / "env" == workspace_root(None)
    assert tmp_path / "flag" == workspace_root(str(tmp_path / "flag"))


def test_spec_cache_is_ignored_once_the_state_changes(tmp_path: Path) -> None:
    """The cached spec is served only for the exact state bytes it was rendered from."""
    store = FlowStore(tmp_path, "f")
    write_atomic(store.state_path, b'{"a": 1}')
    store.cache_spec(b'{"a": 1}', {"status": "done"})
    assert {"status": "done"} == store.cached_spec()
    write_atomic(store.state_path, json.dumps({"a": 2}).encode())
    assert None is store.cached_spec()


def test_atomic_write_keeps_an_existing_files_mode_and_gives_new_ones_the_usual(
        tmp_path: Path) -> None:
    """Replacing a file keeps its permission bits; a new file is not left private (0600)."""

    script = tmp_path / "run.sh"
    script.write_bytes(b"old")
    script.chmod(0o755)
    write_atomic(script, b"new")
    fresh = tmp_path / "fresh.md"
    write_atomic(fresh, b"x")
    umask = os.umask(0o022)
    os.umask(umask)
    assert (0o755, 0o666 & ~umask) == (script.stat().st_mode & 0o777,
                                       fresh.stat().st_mode & 0o777)


def test_a_lock_won_on_a_folder_moved_aside_is_traded_for_the_new_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the folder was moved aside (--restart) between opening its lock file and winning
    the lock, and a new flow now lives at the path, the call ends up holding the new
    folder's lock and lets the old one go."""
    import workspace.lock as lock_mod

    folder = tmp_path / "flow"
    moved = tmp_path / "flow.old"
    plain = lock_mod.Flock

    class RestartWhileWaiting(plain):
        def acquire(self, timeout: float) -> None:
            super().acquire(timeout)
            if not moved.exists():  # the restart happened just before this lock was won
                folder.rename(moved)
                folder.mkdir()

    monkeypatch.setattr(lock_mod, "Flock", RestartWhileWaiting)
    with FlowLock(folder, timeout=5):
        monkeypatch.setattr(lock_mod, "Flock", plain)
        with pytest.raises(Busy):  # the new folder's lock is held by the call above
            with FlowLock(folder, timeout=0.2):
                pass
        with FlowLock(moved, timeout=0.2):  # the old folder's lock was let go
            pass


@pytest.mark.parametrize("flow_id", ["toy/x\n", "toy/x\r", "toy/ x", "toy/..", "toy//x", "/abs"])
def test_flow_ids_are_checked_with_full_matches(flow_id: str) -> None:
    """A trailing newline or an empty part never passes as a flow id."""
    from flow.core.errors import UsageError

    with pytest.raises(UsageError):
        check_flow_id(flow_id)


@pytest.mark.parametrize(("repo", "ok"), [
    ("pytorch/pytorch", True), ("o.r/n-1_x", True), ("o/r\n", False), ("../..", False),
    ("o/.", False), ("o", False), ("o/r/x", False), ("o/r ", False)])
def test_repo_names_are_owner_slash_name(repo: str, ok: bool) -> None:
    """--repo is owner/name by a full match; dots-only parts are refused."""
    from flow.core.errors import UsageError
    from workspace.paths import check_repo

    if ok:
        assert repo == check_repo(repo)
    else:
        with pytest.raises(UsageError):
            check_repo(repo)


def test_store_log_never_writes_through_a_link(tmp_path: Path) -> None:
    """A link planted at logs/ or logs/orchestrator.log is refused; the target is untouched."""
    import errno

    outside = tmp_path / "outside.log"
    outside.write_text("keep")
    store = FlowStore(tmp_path / "ws", "toy/x")
    store.logs_dir.mkdir(parents=True)
    (store.logs_dir / "orchestrator.log").symlink_to(outside)
    with pytest.raises(OSError) as err:
        store.log("hello")
    assert errno.ELOOP == err.value.errno
    (store.logs_dir / "orchestrator.log").unlink()
    store.logs_dir.rmdir()
    store.logs_dir.symlink_to(tmp_path)
    with pytest.raises(OSError):
        store.log("hello")
    assert "keep" == outside.read_text() and not (tmp_path / "orchestrator.log").exists()


@pytest.mark.parametrize(("value", "expected"), [("", 10.0), ("0", 0.0), ("2.5", 2.5),
                                                 ("x", None), ("-1", None), ("nan", None)])
def test_lock_timeout_setting(value: str, expected: float | None) -> None:
    """ORCHESTRATOR_LOCK_TIMEOUT is seconds from 0 to a day; anything else is a bad setting."""
    from flow.core.errors import SettingError
    from workspace.lock import lock_timeout

    if expected is None:
        with pytest.raises(SettingError):
            lock_timeout({"ORCHESTRATOR_LOCK_TIMEOUT": value})
    else:
        assert expected == lock_timeout({"ORCHESTRATOR_LOCK_TIMEOUT": value})


@pytest.mark.parametrize("refusals", [0, 3, 2000])
def test_audit_replay_finds_the_last_revision_past_many_refusals(tmp_path: Path,
                                                                 refusals: int) -> None:
    """The last audited revision is found in the log's tail, or past a long run of refusals."""
    store = FlowStore(tmp_path, "toy/x")
    store._append({"event": "created", "revision": 1})
    store._append({"event": "fed", "revision": 2})
    for _ in range(refusals):
        store.audit("feed_refused", code="invalid_feed", message="x" * 60)
    with open(store.audit_path, "ab") as fh:
        fh.write(b'{"event": "torn", "revis')  # a torn last line is skipped
    assert 2 == store._last_audited_revision()


def test_a_line_appended_after_a_torn_line_stays_whole(tmp_path: Path) -> None:
    """Appending after a torn last line starts a new line: both stay separately readable."""
    from workspace.atomic import append_line

    log = tmp_path / "audit.jsonl"
    log.write_bytes(b'{"a": 1}\n{"torn"')
    append_line(log, b'{"b": 2}')
    assert [b'{"a": 1}', b'{"torn"', b'{"b": 2}'] == log.read_bytes().splitlines()


def test_temporary_files_of_a_killed_write_are_swept_on_load(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `.flow_state.json.*.tmp` older than a minute in the flow folder is removed when the
    state is loaded; a fresh one (a write in progress) is kept."""
    import time

    from tests.contract.inproc import start_toy

    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", "tests.contract.toyflow")
    spec = start_toy(tmp_path, "sweep")
    folder = tmp_path / spec["flow_id"]
    old, fresh = folder / ".flow_state.json.abc123.tmp", folder / ".flow_state.json.def456.tmp"
    old.write_text("{")
    fresh.write_text("{")
    os.utime(old, (time.time() - 3600, time.time() - 3600))
    FlowStore(tmp_path, spec["flow_id"]).load()
    assert (False, True) == (old.exists(), fresh.exists())


@pytest.mark.parametrize(("setting", "synced"), [(None, True), ("on", True), ("OFF", False)])
def test_writes_are_fsynced_unless_the_workspace_is_declared_throwaway(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str | None, synced: bool) -> None:
    """By default every atomic write, new file and audit line is flushed to disk (file and
    folder); ORCHESTRATOR_FSYNC=off (how this suite runs) skips only the flush."""

    from flow.core import atomic

    if setting is None:
        monkeypatch.delenv(atomic.FSYNC_ENV, raising=False)
    else:
        monkeypatch.setenv(atomic.FSYNC_ENV, setting)
    flushed: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (flushed.append(fd), real(fd))[1])
    atomic.write_atomic(tmp_path / "state.json", b"{}")
    assert atomic.write_new(tmp_path / "result.json", b"{}")
    atomic.append_line(tmp_path / "audit.jsonl", b"{}")
    assert (5 if synced else 0, b"{}", b"{}\n") == (
        len(flushed), (tmp_path / "result.json").read_bytes(), (tmp_path / "audit.jsonl").read_bytes())


def test_a_bad_fsync_setting_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """ORCHESTRATOR_FSYNC takes on or off; anything else is bad_setting, exit 2, no workspace."""
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "orchestrator.py"), "--workspace",
                           str(tmp_path / "ws"), "status"], capture_output=True, text=True,
                          env={**os.environ, "ORCHESTRATOR_FSYNC": "sometimes"})
    error = json.loads(done.stdout)["error"]
    assert (2, "bad_setting", "ORCHESTRATOR_FSYNC", False) == (
        done.returncode, error["code"], error["setting"], (tmp_path / "ws").exists())
