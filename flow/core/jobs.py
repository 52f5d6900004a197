"""Background jobs a flow owns: work that may outlive one call's foreground budget.

A step asks for one with ``ctx.job(key, argv, ...)``. The first call records the job in the
state (``FlowState.jobs``), saves, and starts a detached supervisor (``flow.core.supervisor``
in an isolated interpreter of its own session) that runs the command with the runner's
guarantees (own process group, capped log, deadline) and writes a result file atomically
when the command ends. The call then waits for it within what is left of its foreground
budget, woken the moment the supervisor exits (``proc.await_supervisor``); if the job is still
running then, ``Pending`` goes up to the engine, which answers ``waiting`` with the job's
progress and ``poll_after_s``. A later call (a ``--resume``, a cron firing, another harness)
under the flow's lock finds the job:

- finished: its result file is read, recorded in the state, and the step gets its
  ``proc.Result`` (jobs are memoized per phase, visit and key, so the step re-runs to the
  same point and carries on);
- running: waits again within its budget;
- gone without a result (the machine rebooted, someone killed the supervisor): whatever the
  job left running is ended, and it is started once more; a second loss gives
  ``Result(lost=True)``, which the step turns into an honest outcome.

Killing the harness or the orchestrator never loses a job or restarts its clock: the
supervisor is not the caller's child, and the deadline is recorded in the state. Two callers
never start the same job twice: they hold the flow's lock, and the record is saved before
the supervisor starts.

A job may also be started ahead of its step (``start_ahead``): by the command line, under
the flow's lock, before the engine and the workflow's models are imported, when the
workflow can tell its first long run from the command line alone (a ``headstart`` module).
Its record, the flow's ``ahead.json``, is written before it starts (what it runs, the
phase visit that will ask for it, how the flow is started), so a call killed after starting
it leaves it findable. The step that asks for that job id adopts it, start time and all,
from this call or from ``ahead.json``, when it asks for exactly the same run (argv, cwd,
environment, log, timeout, stdin), and ends it and starts its own otherwise. After each
call's steps (``settle_ahead``, under the lock) one the state records loses its
``ahead.json``, one the flow may still ask for is kept running, any other is ended. A
supervisor of a job's spec found running with no record of it anywhere is ended before the
job is started again.

Standard library only at import (the state's models are imported by ``run_job``), so the
command line can start a job ahead without them.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from flow.core import proc
from flow.core.naming import AHEAD_FILE

if TYPE_CHECKING:
    from flow.core.state import JobRecord

MAX_STARTS = 2


class Pending(Exception):
    """The job is still running when the call's budget is spent (the engine answers
    ``waiting``)."""

    def __init__(self, job: JobRecord) -> None:
        super().__init__(f"job {job.job_id} is still running")
        self.job = job


def job_id(phase: str, visit: int, key: str) -> str:
    """The id of a phase visit's job ``key``; its files in ``jobs/`` are named by it."""
    from flow.core.naming import safe_name

    return safe_name(f"{phase}-v{visit}-{key}")


def _files(flow_dir: Path, job_id: str) -> tuple[Path, Path, Path]:
    base = flow_dir / "jobs"
    return base / f"{job_id}.json", base / f"{job_id}.result.json", base / f"{job_id}.pgid"


def _alive(pid: int | None, spec: Path) -> bool:
    """True if ``pid`` is still our supervisor for ``spec`` (not a reused pid). One this
    process started is asked directly (``proc.running``); another's is read in /proc: its
    command line names the spec (or the claim file names it), and an empty command line is
    a zombie only when its state says so (a process just past exec has none yet)."""
    if not pid:
        return False
    own = proc.running(pid)
    if own is not None:
        return own
    cmdline = _cmdline(pid)
    if cmdline is None:
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True  # no /proc: trust the signal probe
    if not cmdline:
        return _state(pid) not in (None, "Z", "X")
    return str(spec).encode() in cmdline or (b"supervise" in cmdline and _claimed(spec) == pid)


def _cmdline(pid: int) -> bytes | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b"" if Path("/proc").is_dir() else None


def _state(pid: int) -> str | None:
    """The one-letter state in ``/proc/PID/stat`` (``Z`` a zombie), or None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[0] if ")" in stat else None


def _claimed(spec: Path) -> int | None:
    """The pid a supervisor started ready took ``spec`` with (``proc.claim_file``), or None."""
    try:
        return int(proc.claim_file(spec).read_text().strip())
    except (OSError, ValueError):
        return None


def _find_supervisor(spec: Path) -> int | None:
    """The pid of a running supervisor of ``spec``, found in /proc (None if there is none)."""
    needle = str(spec).encode()
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if needle in cmdline and b"supervise" in cmdline:
            return int(entry.name)
    claimed = _claimed(spec)
    return claimed if claimed is not None and _alive(claimed, spec) else None


def _launch(rec: JobRecord, flow_dir: Path, env: Mapping[str, str], stdin: str | None) -> int:
    spec, result, pgid = _files(flow_dir, rec.job_id)
    for stale in (result, pgid, proc.claim_file(spec)):
        stale.unlink(missing_ok=True)
    return proc.detach_job(spec, rec.argv, cwd=rec.cwd, env=env, log=rec.log_file,
                           result=result, pgid=pgid,
                           timeout=max(0.0, rec.deadline_at - time.time()), stdin=stdin)


def _read_result(path: Path) -> proc.Result | None:
    try:
        raw = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return proc.Result.from_json(raw) if isinstance(raw, dict) else None


def _end_leftovers(pgid_file: Path, pid: int | None) -> None:
    """End a lost job's command group (and its supervisor, if somehow still there)."""
    try:
        proc.kill_group(int(pgid_file.read_text().strip()))
    except (OSError, ValueError):
        pass
    if pid:
        proc.kill_group(pid)


class Ahead(NamedTuple):
    """A job started before the engine asked for it (``start_ahead``): what it runs (the
    scrubbed environment by its digest), and its supervisor (None when a later call read it
    from the flow's ``ahead.json`` and found no supervisor running any more)."""

    flow_dir: Path
    job_id: str
    argv: tuple[str, ...]
    cwd: str | None
    env_sha: str
    log_file: str
    timeout: float
    stdin: str | None
    outputs: tuple[str, ...]
    pid: int | None
    started_at: float
    mark: str

    def runs(self, argv: Sequence[str], cwd: str | None, env: Mapping[str, str],
             log_file: str, timeout: float, stdin: str | None) -> bool:
        """The job the step asks for is exactly this one."""
        return ((tuple(argv), cwd, env_digest(env), log_file, float(timeout), stdin)
                == (self.argv, self.cwd, self.env_sha, self.log_file, float(self.timeout),
                    self.stdin))

    def end(self, *, keep_outputs: bool = False) -> None:
        """End it now: its supervisor, its process group and every process carrying its mark
        (one that left the group, or started before the group was written down); then its
        job files, and the files it writes (``outputs``) unless the step's own run is about
        to write them anew."""
        spec, result, pgid = _files(self.flow_dir, self.job_id)
        if self.pid:
            proc.stop_supervisor(self.pid)
        _end_leftovers(pgid, None)
        proc.end_marked(self.mark)
        for path in (spec, result, pgid, proc.claim_file(spec),
                     *([] if keep_outputs else map(Path, self.outputs))):
            path.unlink(missing_ok=True)
        (self.flow_dir / AHEAD_FILE).unlink(missing_ok=True)


_ahead: dict[tuple[str, str], Ahead] = {}


def env_digest(env: Mapping[str, str]) -> str:
    """A digest of a job's (scrubbed) environment: what ``ahead.json`` keeps of it."""
    import hashlib

    return hashlib.sha256(json.dumps(sorted(env.items())).encode()).hexdigest()


def read_ahead(flow_dir: Path) -> dict[str, Any] | None:
    """The flow's ``ahead.json`` (the job a call started ahead and no step recorded yet, and
    how that call started the flow), or None."""
    try:
        raw = json.loads((flow_dir / AHEAD_FILE).read_bytes())
    except (OSError, ValueError):
        return None
    return raw if isinstance(raw, dict) and isinstance(raw.get("job_id"), str) else None


def _recorded_ahead(flow_dir: Path, job_id: str | None = None) -> Ahead | None:
    """The job ``ahead.json`` names (only if it is ``job_id``), its supervisor looked up."""
    raw = read_ahead(flow_dir)
    if raw is None or job_id is not None and raw["job_id"] != job_id:
        return None
    spec = _files(flow_dir, raw["job_id"])[0]
    try:
        return Ahead(flow_dir=flow_dir, job_id=raw["job_id"], argv=tuple(raw["argv"]),
                     cwd=raw["cwd"], env_sha=raw["env_sha"], log_file=raw["log_file"],
                     timeout=float(raw["timeout"]), stdin=raw["stdin"],
                     outputs=tuple(raw["outputs"]), pid=_find_supervisor(spec),
                     started_at=float(raw["started_at"]), mark=raw["mark"])
    except (KeyError, TypeError, ValueError):
        return None


def start_ahead(flow_dir: Path, job_id: str, argv: Sequence[str], *, cwd: str | None,
                env: Mapping[str, str], log_file: Path, timeout: float,
                stdin: str | None = None, outputs: Sequence[Path] = (),
                ready: proc.Ready | None = None, phase: str = "", visit: int = 1,
                start: Mapping[str, Any] | None = None) -> Ahead:
    """Start job ``job_id`` of the flow in ``flow_dir`` before its step asks for it (the
    caller holds the flow's lock; see the module docstring). ``outputs``: files the run
    writes besides its log, removed with it if it is ended unused. ``ready``: a supervisor
    the caller started before it knew the job (``proc.ready_supervisor``) takes it.
    ``phase``/``visit``: the phase visit whose step will ask for it; ``start``: how the flow
    is started (its workflow and options), so that a later call can start it from there.
    All of it is written to the flow's ``ahead.json`` before the job starts."""
    spec, result, pgid = _files(flow_dir, job_id)
    for stale in (result, pgid, proc.claim_file(spec)):
        stale.unlink(missing_ok=True)
    clean = proc.child_env(env)
    mark = proc.new_mark()
    started = time.time()
    early = Ahead(flow_dir=flow_dir, job_id=job_id, argv=tuple(argv), cwd=cwd,
                  env_sha=env_digest(clean), log_file=str(log_file), timeout=float(timeout),
                  stdin=stdin, outputs=tuple(str(p) for p in (log_file, *outputs)), pid=None,
                  started_at=started, mark=mark)
    record = {**early._asdict(), "flow_dir": str(flow_dir), "phase": phase, "visit": visit,
              "start": dict(start or {})}
    # not fsynced, as the job's spec: it steers a running job, which a crash of the machine
    # ends too
    flow_dir.mkdir(parents=True, exist_ok=True)
    proc.write_atomic(str(flow_dir / AHEAD_FILE), json.dumps(record).encode(), durable=False)
    try:
        pid = proc.detach_job(spec, argv, cwd=cwd, env=clean, log=str(log_file), result=result,
                              pgid=pgid, timeout=timeout, stdin=stdin, mark=mark, ready=ready)
    except BaseException:
        (flow_dir / AHEAD_FILE).unlink(missing_ok=True)
        raise
    early = early._replace(pid=pid)
    _ahead[(str(flow_dir), job_id)] = early
    return early


def is_ahead(flow_dir: Path, job_id: str) -> bool:
    """A job of this id was started ahead for the flow (by this call, or by one that ended
    before a step recorded it) and not yet adopted."""
    return (str(flow_dir), job_id) in _ahead or _recorded_ahead(flow_dir, job_id) is not None


def discard_ahead(flow_dir: Path) -> None:
    """End the jobs started ahead for the flow that no step adopted."""
    for key in [key for key in _ahead if key[0] == str(flow_dir)]:
        _ahead.pop(key).end()
    early = _recorded_ahead(flow_dir)
    if early is not None:
        early.end()


def forget_ahead(flow_dir: Path) -> None:
    """Let this call's jobs started ahead for the flow run on unowned by it: its
    ``ahead.json`` (or the state's record) is what a later call finds them by."""
    for key in [key for key in _ahead if key[0] == str(flow_dir)]:
        _ahead.pop(key)


def settle_ahead(flow_dir: Path, jobs: Mapping[str, Any], visits: Mapping[str, int],
                 phase: str, finished: bool) -> None:
    """After a call's steps, under the flow's lock: the job started ahead that the state
    records is the flow's own now (its ``ahead.json`` goes); one the flow may still ask for
    (its phase visit not yet passed, the flow unfinished) is kept running for the step that
    will adopt it, in a later call; any other is ended. This call's own (``start_ahead``) is
    forgotten here either way: what is kept is found again through ``ahead.json``."""
    raw = read_ahead(flow_dir)
    mine = [key for key in _ahead if key[0] == str(flow_dir)]
    if raw is None:
        for key in mine:
            _ahead.pop(key).end()
        return
    job, wanted_phase, visit = raw["job_id"], raw.get("phase"), int(raw.get("visit") or 1)
    seen = int(visits.get(wanted_phase, 0)) if wanted_phase else 0
    if job in jobs:
        forget_ahead(flow_dir)
        (flow_dir / AHEAD_FILE).unlink(missing_ok=True)
    elif not finished and (seen < visit or phase == wanted_phase and seen == visit):
        forget_ahead(flow_dir)
    else:
        discard_ahead(flow_dir)


def _end_unrecorded(spec: Path, pgid_file: Path) -> None:
    """A supervisor of ``spec`` that no record of the flow knows (its starter was killed
    before recording it): end it and its job, so the job is not run twice at once."""
    pid = _find_supervisor(spec)
    if pid is None:
        return
    _end_leftovers(pgid_file, pid)
    stop = time.monotonic() + min(5.0, proc.remaining())
    while _alive(pid, spec) and time.monotonic() < stop:
        time.sleep(0.01)


def run_job(state_jobs: dict[str, JobRecord], save: Callable[[str, dict[str, Any]], None],
            flow_dir: Path, *, job_id: str, key: str, phase: str, visit: int,
            argv: Sequence[str], log_file: Path, cwd: str | None, env: Mapping[str, str],
            timeout: float, stdin: str | None = None, wait: bool = True) -> proc.Result | None:
    """The body of ``ctx.job`` (see the module docstring). ``save(event, fields)`` persists
    the state; ``state_jobs`` is the state's job table, changed in place. ``wait=False`` only
    makes sure the job is started (or adopted) and returns its result if it already has one,
    else None: a step starts every job it needs this way, then waits on each."""
    from flow.core.state import JobRecord

    rec = state_jobs.get(job_id)
    if rec is not None and rec.result is not None:
        return proc.Result.from_json(rec.result)
    spec, result_file, pgid_file = _files(flow_dir, job_id)
    clean = proc.child_env(env)
    early = None
    if rec is None:  # started ahead by this call, else by one that ended before recording it
        early = _ahead.pop((str(flow_dir), job_id), None) or _recorded_ahead(flow_dir, job_id)
    if early is not None:
        if early.runs(argv, cwd, clean, str(log_file), timeout, stdin):
            rec = JobRecord(job_id=job_id, key=key, phase=phase, visit=visit, argv=list(argv),
                            cwd=cwd, log_file=str(log_file), timeout_s=timeout,
                            started_at=early.started_at,
                            deadline_at=early.started_at + timeout, pid=early.pid)
            state_jobs[job_id] = rec
            save("job_recorded", {"job_id": job_id, "started_ahead": True})
            (flow_dir / AHEAD_FILE).unlink(missing_ok=True)
        else:
            early.end(keep_outputs=True)
    elif rec is None and spec.exists():
        _end_unrecorded(spec, pgid_file)
    if rec is None:
        now = time.time()
        rec = JobRecord(job_id=job_id, key=key, phase=phase, visit=visit, argv=list(argv),
                        cwd=cwd, log_file=str(log_file), timeout_s=timeout, started_at=now,
                        deadline_at=now + timeout)
        state_jobs[job_id] = rec
        save("job_recorded", {"job_id": job_id})  # before the start: no kill can start it twice
        rec.pid = _launch(rec, flow_dir, clean, stdin)
        save("job_started", {"job_id": job_id, "pid": rec.pid})
    if rec.pid is None and rec.result is None:
        # Recorded, but the call that recorded it died before it saved the supervisor's pid:
        # adopt a supervisor that did start, else start it now (a first start, not a loss).
        rec.pid = _find_supervisor(spec)
        if rec.pid is None and _read_result(result_file) is None:
            now = time.time()
            rec.started_at, rec.deadline_at = now, now + rec.timeout_s
            rec.pid = _launch(rec, flow_dir, clean, stdin)
        save("job_started", {"job_id": job_id, "pid": rec.pid})
    if not wait:
        done = _read_result(result_file)
        return None if done is None else _finish(rec, done, save)
    while True:
        done = _read_result(result_file)
        if done is not None:
            return _finish(rec, done, save)
        if not _alive(rec.pid, spec):
            done = _read_result(result_file)  # it may have finished as we looked
            if done is not None:
                return _finish(rec, done, save)
            # the recorded pid is a process of this machine only if the job was started from
            # this folder (its spec is here): a flow taken over from another machine or
            # workspace must not signal whatever process has that number here
            _end_leftovers(pgid_file, rec.pid if spec.exists() else None)
            rec.history.append({"start": rec.starts, "pid": rec.pid, "lost_at": time.time()})
            if rec.starts >= MAX_STARTS:
                lost = proc.Result(code=-1, log=log_file, lost=True,
                                   reason=f"\n[the job vanished {rec.starts} times without a "
                                          f"result]\n")
                return _finish(rec, lost, save)
            now = time.time()
            rec.starts += 1
            rec.started_at, rec.deadline_at = now, now + rec.timeout_s
            rec.pid = None
            save("job_lost", {"job_id": job_id, "restart": rec.starts})
            rec.pid = _launch(rec, flow_dir, clean, stdin)
            save("job_started", {"job_id": job_id, "pid": rec.pid})
            continue
        if time.time() > rec.deadline_at + 3 * proc.GRACE_S:
            proc.kill_group(rec.pid or 0, proc.signal.SIGTERM)  # a hung supervisor
        left = proc.remaining()
        if left <= 0:
            raise Pending(rec)
        proc.await_supervisor(rec.pid, min(left, 1.0))
        proc.reap()


def _finish(rec: JobRecord, result: proc.Result, save: Callable[[str, dict[str, Any]], None]
            ) -> proc.Result:
    rec.result = result.to_json()
    rec.pid = None
    save("job_finished", {"job_id": rec.job_id, "code": result.code,
                          "timed_out": result.timed_out, "lost": result.lost})
    return result


def progress(rec: JobRecord, lines: int = 5) -> dict[str, Any]:
    """What a ``waiting`` answer and ``status`` show of a running job."""
    now = time.time()
    elapsed = now - rec.started_at
    return {"id": rec.job_id, "key": rec.key, "started_at": _iso(rec.started_at),
            "elapsed_s": round(elapsed, 1), "deadline_at": _iso(rec.deadline_at),
            "timeout_s": rec.timeout_s, "log_file": rec.log_file,
            "log_tail": proc.log_tail(Path(rec.log_file), lines), "start": rec.starts}


def poll_after(rec: JobRecord) -> int:
    """How long a harness should wait before the next ``--resume``: short at first, then a
    quarter of the elapsed time, never past the deadline, between 5 s and 60 s."""
    now = time.time()
    wait = max(5.0, min(60.0, (now - rec.started_at) / 4, rec.deadline_at - now + 1))
    return int(round(wait))


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def end_local(flow_dir: Path) -> list[str]:
    """End every job of the flow still running from ``flow_dir`` on this machine (its
    supervisor, its command's process group, and, when the spec names its mark, every
    process carrying it) and remove its job files but the log and any result; the ids of
    the jobs ended. A flow whose campaign lease this worker lost leaves no run of its own
    behind here: the new holder runs it again where it works."""
    ended: list[str] = []
    folder = flow_dir / "jobs"
    specs = sorted(folder.glob("*.json")) if folder.is_dir() else []
    for spec in specs:
        job = spec.name[: -len(".json")]
        _, result, pgid = _files(flow_dir, job)
        if spec.name.endswith(".result.json") or result.exists():
            continue
        pid = _find_supervisor(spec)
        try:
            group: int | None = int(pgid.read_text().strip())
        except (OSError, ValueError):
            group = None
        try:
            mark = json.loads(spec.read_bytes()).get("mark")
        except (OSError, ValueError, AttributeError):
            mark = None
        if pid is not None:
            proc.kill_group(pid)
        if group is not None:
            proc.kill_group(group)
        if isinstance(mark, str) and mark:
            proc.end_marked(mark)
        for path in (spec, pgid, proc.claim_file(spec)):
            path.unlink(missing_ok=True)
        if pid is not None or group is not None:
            ended.append(job)
    return ended
