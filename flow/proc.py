"""The one door for child processes: every git, pip, pytest, build and reproducer run of
every workflow goes through ``run`` (in the foreground) or a background job (``flow.jobs``,
which runs this module as its supervisor script).

What every run gets, whatever the caller:

- an argument list, never a shell string; a shell only as ``shell(block)``, an explicit
  ``bash -c`` with the block as one argument;
- its own process group: a timeout ends the whole group (TERM, a grace period, KILL), and
  so does the main process's exit, so a child that left ``sleep 45 &`` holding stdout
  neither blocks the call nor outlives it;
- stdin from ``/dev/null`` (or the given text);
- stdout and stderr, interleaved, streamed to the step's log file and capped: the first and
  the last ``cap/2`` bytes are kept and the cut is marked, so memory and disk stay bounded
  whatever the child prints;
- no decoding on the way: bytes go to the log, and ``Result.output`` reads them back with
  replacement characters, so no output can raise ``UnicodeDecodeError``;
- an explicit environment: the given one (or the parent's) minus secrets (``child_env``);
- a timeout that defaults to what is left of the call's foreground budget
  (``ORCHESTRATOR_FOREGROUND_S``, default 90 s, under the harness shell tools' limits).

This module imports only the standard library: ``flow.jobs`` starts it as a script
(``python -I proc.py supervise SPEC``) to own a background job beyond the call's life.
"""

from __future__ import annotations

import fnmatch
import json
import os
import selectors
import shlex
import signal
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

FOREGROUND_ENV = "ORCHESTRATOR_FOREGROUND_S"
DEFAULT_FOREGROUND_S = 90.0
CAP_ENV = "ORCHESTRATOR_LOG_CAP_BYTES"
DEFAULT_CAP = 8 * 1024 * 1024
SECRETS_ENV = "ORCHESTRATOR_SECRET_ENV"
PASS_ENV = "ORCHESTRATOR_PASS_ENV"
SECRET_PATTERNS = ("GITHUB_TOKEN", "GH_TOKEN", "*TOKEN*", "*SECRET*", "*PASSWORD*")
GRACE_S = 5.0
CHUNK = 65536
TIMED_OUT, NOT_FOUND = 124, 127

_call_started = time.monotonic()


# -- the foreground budget -------------------------------------------------------------------

def begin_call() -> None:
    """Start the foreground budget anew (a long-lived server calls this per request; the CLI's
    budget starts when this module is first imported)."""
    global _call_started
    _call_started = time.monotonic()


def foreground_s(settings: Mapping[str, str] | None = None) -> float:
    """The budget in seconds (``ORCHESTRATOR_FOREGROUND_S``); ValueError for a bad value."""
    raw = (settings if settings is not None else os.environ).get(FOREGROUND_ENV, "").strip()
    if not raw:
        return DEFAULT_FOREGROUND_S
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{FOREGROUND_ENV}={raw!r} is not a number of seconds") from None
    if not value > 0:
        raise ValueError(f"{FOREGROUND_ENV}={raw!r} must be more than 0")
    return value


def remaining(settings: Mapping[str, str] | None = None) -> float:
    """Seconds left of this call's foreground budget (never below 0)."""
    return max(0.0, foreground_s(settings) - (time.monotonic() - _call_started))


# -- the environment -------------------------------------------------------------------------

def _patterns(value: str | None) -> list[str]:
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def is_secret(name: str, deny: Iterable[str] = ()) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p.upper()) for p in (*SECRET_PATTERNS, *deny))


def child_env(base: Mapping[str, str] | None = None, *, allow: Iterable[str] = (),
              deny: Iterable[str] = ()) -> dict[str, str]:
    """``base`` (default: this process's environment) without secrets.

    Secrets are ``GITHUB_TOKEN``, ``GH_TOKEN`` and every name matching ``*TOKEN*``,
    ``*SECRET*`` or ``*PASSWORD*`` (case-insensitive), plus the patterns in ``deny`` and in
    ``ORCHESTRATOR_SECRET_ENV`` (comma-separated). Names in ``allow`` or in
    ``ORCHESTRATOR_PASS_ENV`` are let through (a profile that needs one says so).
    """
    env = dict(os.environ if base is None else base)
    deny = [*deny, *_patterns(os.environ.get(SECRETS_ENV))]
    allowed = {*allow, *_patterns(os.environ.get(PASS_ENV))}
    return {k: v for k, v in env.items() if k in allowed or not is_secret(k, deny)}


def shell(block: str) -> list[str]:
    """The one shell form: ``bash -c BLOCK``, the block passed as one argument."""
    return ["bash", "-c", block]


def tool(python: str, module: str, *args: str) -> list[str]:
    """``python -m module args``: tools run through their interpreter, never through a
    console-script shebang (which breaks when the venv's path holds a space)."""
    return [python, "-m", module, *args]


# -- results ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Result:
    """How one run ended. ``code`` is the exit code (124 timed out, 127 not started, the
    negative signal number if killed by one); ``lost`` is a background job that vanished
    twice without a result; ``log`` holds ``$ argv``, ``(cwd ...)`` and then the output."""

    code: int
    log: Path
    timed_out: bool = False
    lost: bool = False
    duration_s: float = 0.0
    cut_bytes: int = 0
    reason: str = ""
    header_bytes: int = field(default=0, repr=False)

    @property
    def ok(self) -> bool:
        return self.code == 0 and not self.timed_out and not self.lost

    @property
    def output(self) -> str:
        """The child's output (capped), decoded with replacement; never raises."""
        try:
            with open(self.log, "rb") as fh:
                fh.seek(self.header_bytes)
                data = fh.read()
        except OSError:
            data = b""
        text = data.decode("utf-8", errors="replace")
        return f"{text}{self.reason}" if self.reason and self.reason not in text else text

    def tail(self, lines: int = 20) -> str:
        return "\n".join(self.output.rstrip("\n").splitlines()[-lines:])

    def to_json(self) -> dict[str, object]:
        return {"code": self.code, "log": str(self.log), "timed_out": self.timed_out,
                "lost": self.lost, "duration_s": round(self.duration_s, 3),
                "cut_bytes": self.cut_bytes, "reason": self.reason,
                "header_bytes": self.header_bytes}

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> Result:
        return cls(code=int(raw["code"]), log=Path(str(raw["log"])),  # type: ignore[call-overload]
                   timed_out=bool(raw.get("timed_out")), lost=bool(raw.get("lost")),
                   duration_s=float(raw.get("duration_s") or 0.0),  # type: ignore[arg-type]
                   cut_bytes=int(raw.get("cut_bytes") or 0),  # type: ignore[call-overload]
                   reason=str(raw.get("reason") or ""),
                   header_bytes=int(raw.get("header_bytes") or 0))  # type: ignore[call-overload]


class CappedLog:
    """Writes the first ``cap/2`` bytes to the file as they come and keeps only the last
    ``cap/2`` in memory; ``close`` marks the cut and appends the tail."""

    def __init__(self, path: Path, cap: int, header: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(path, "wb", buffering=0)  # a running job's log is read as it grows
        self.fh.write(header)
        self.head_left = max(1, cap // 2)
        self.tail_cap = max(1, cap - self.head_left)
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.cut = 0

    def write(self, data: bytes) -> None:
        if self.head_left:
            part = data[:self.head_left]
            self.fh.write(part)
            self.head_left -= len(part)
            data = data[len(part):]
        if not data:
            return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail_size - len(self.tail[0]) >= self.tail_cap:
            dropped = self.tail.popleft()
            self.tail_size -= len(dropped)
            self.cut += len(dropped)

    def close(self) -> int:
        """Flush and close; return how many bytes were cut."""
        if self.tail_size > self.tail_cap:  # trim the oldest tail chunk to the cap
            extra = self.tail_size - self.tail_cap
            self.tail[0] = self.tail[0][extra:]
            self.tail_size -= extra
            self.cut += extra
        if self.cut:
            self.fh.write(f"\n[... {self.cut} bytes of output cut by the orchestrator: the log "
                          f"keeps the first and the last bytes ...]\n".encode())
        for chunk in self.tail:
            self.fh.write(chunk)
        self.fh.close()
        return self.cut


def cap_bytes() -> int:
    raw = os.environ.get(CAP_ENV, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else DEFAULT_CAP


def header(argv: Sequence[str], cwd: str | Path | None) -> bytes:
    return f"$ {shlex.join(argv)}\n(cwd {cwd or os.getcwd()})\n".encode("utf-8", "replace")


def log_tail(path: Path, lines: int = 5, window: int = 16384) -> list[str]:
    """The last ``lines`` lines of a log, read from its last ``window`` bytes."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - window))
            data = fh.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    return [line[-300:] for line in text.rstrip("\n").splitlines()[-lines:]]



# -- running ---------------------------------------------------------------------------------

def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _end(child: subprocess.Popen[bytes], grace: float) -> None:
    """TERM the child's group, wait ``grace`` seconds, then KILL whatever is left."""
    kill_group(child.pid, signal.SIGTERM)
    try:
        child.wait(grace)
    except subprocess.TimeoutExpired:
        pass
    kill_group(child.pid, signal.SIGKILL)
    child.wait()


def stream(child: subprocess.Popen[bytes], out: CappedLog, deadline: float,
           grace: float = GRACE_S) -> bool:
    """Copy the child's output into ``out`` until it exits or ``deadline`` (monotonic)
    passes; end its process group either way. Returns True when it timed out."""
    assert child.stdout is not None
    fd = child.stdout.fileno()
    os.set_blocking(fd, False)
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    timed_out = False
    eof = False
    try:
        while not eof:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if child.poll() is not None:
                break
            for _ in sel.select(min(left, 0.5)):
                eof = not _drain(fd, out)
        if timed_out:
            _end(child, grace)
        else:
            child.wait()
        # The main process is gone: nothing it left behind may keep the pipe (or run) on.
        kill_group(child.pid)
        stop = time.monotonic() + 2.0
        while not eof and time.monotonic() < stop:
            if sel.select(0.2):
                eof = not _drain(fd, out)
    finally:
        sel.close()
        child.stdout.close()
    return timed_out


def _drain(fd: int, out: CappedLog) -> bool:
    """Read what is there; False at end of file."""
    while True:
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return True
        if not data:
            return False
        out.write(data)


def spawn(argv: Sequence[str], *, cwd: str | Path | None, env: Mapping[str, str],
          stdin: str | None) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(list(argv), cwd=cwd, env=dict(env), start_new_session=True,
                             stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if stdin is not None:
        assert child.stdin is not None
        try:
            child.stdin.write(stdin.encode())
        except BrokenPipeError:
            pass
        child.stdin.close()
    return child


def run(argv: Sequence[str], *, log: Path, cwd: str | Path | None = None,
        env: Mapping[str, str] | None = None, timeout: float | None = None,
        stdin: str | None = None, allow: Iterable[str] = ()) -> Result:
    """Run ``argv`` in the foreground and return how it ended (never raises for the child's
    sake: a missing program is 127, a timeout 124 with ``timed_out``).

    ``env`` is scrubbed of secrets (``child_env``; ``allow`` lets named ones through);
    ``timeout`` defaults to what is left of the foreground budget, and is capped by it.
    """
    if not argv:
        raise ValueError("run() needs a non-empty argument list")
    budget = remaining()
    limit = budget if timeout is None else min(timeout, max(budget, 0.0))
    head = header(argv, cwd)
    out = CappedLog(log, cap_bytes(), head)
    started = time.monotonic()
    try:
        child = spawn(argv, cwd=cwd, env=child_env(env, allow=allow), stdin=stdin)
    except OSError as exc:
        reason = f"{argv[0]}: cannot be started: {exc.strerror or exc}\n"
        out.write(reason.encode())
        out.close()
        return Result(code=NOT_FOUND, log=log, reason=reason, header_bytes=len(head))
    timed_out = stream(child, out, started + limit)
    cut = out.close()
    took = time.monotonic() - started
    reason = ""
    if timed_out:
        reason = f"\n[timed out after {limit:.0f} s: the process group was ended]\n"
        with open(log, "ab") as fh:
            fh.write(reason.encode())
    return Result(code=TIMED_OUT if timed_out else child.returncode, log=log,
                  timed_out=timed_out, duration_s=took, cut_bytes=cut, reason=reason,
                  header_bytes=len(head))


def output(argv: Sequence[str], *, log: Path, cwd: str | Path | None = None,
           env: Mapping[str, str] | None = None, timeout: float | None = 60.0) -> Result:
    """``run`` for short queries (git, versions); the same guarantees, a 60 s default."""
    return run(argv, log=log, cwd=cwd, env=env, timeout=timeout)


# -- the background-job supervisor (run as a script by flow.jobs) ---------------------------

def detach_supervisor(spec: Path, env: Mapping[str, str]) -> int:
    """Start ``supervise(spec)`` as a process of its own session that outlives this one (not
    waited for here; ``flow.jobs`` follows it through its result file). Returns its pid."""
    child = subprocess.Popen([sys.executable, "-I", __file__, "supervise", str(spec)],
                             env=dict(env), cwd="/", start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _detached.append(child)
    return child.pid


def reap() -> None:
    """Collect supervisors of this process that have exited (no zombies in a long-lived
    server)."""
    _detached[:] = [c for c in _detached if c.poll() is None]


_detached: list[subprocess.Popen[bytes]] = []


def supervise(spec_path: Path) -> int:
    """Run the job ``spec_path`` describes to its end or its deadline, then write its result
    file atomically. The supervisor's own environment is the child's (already scrubbed by
    the starter). A TERM to the supervisor ends the job's group and still writes a result."""
    spec = json.loads(spec_path.read_text())
    argv, log = spec["argv"], Path(spec["log"])
    result_path, pgid_path = Path(spec["result"]), Path(spec["pgid"])
    head = header(argv, spec.get("cwd"))
    out = CappedLog(log, int(spec.get("cap") or DEFAULT_CAP), head)
    started = time.monotonic()
    stopping: list[int] = []

    def on_term(signum: int, _frame: object) -> None:
        stopping.append(signum)
        raise KeyboardInterrupt

    try:
        child = spawn(argv, cwd=spec.get("cwd"), env=os.environ, stdin=spec.get("stdin"))
    except OSError as exc:
        reason = f"{argv[0]}: cannot be started: {exc.strerror or exc}\n"
        out.write(reason.encode())
        out.close()
        _write_result(result_path, Result(code=NOT_FOUND, log=log, reason=reason,
                                          header_bytes=len(head)))
        return 0
    write_atomic(pgid_path, str(child.pid).encode())
    signal.signal(signal.SIGTERM, on_term)
    deadline = started + float(spec["timeout"])
    try:
        timed_out = stream(child, out, deadline)
    except KeyboardInterrupt:
        _end(child, 1.0)
        timed_out = False
    cut = out.close()
    reason = ""
    if timed_out:
        reason = f"\n[timed out after {float(spec['timeout']):.0f} s: the process group was ended]\n"
    elif stopping:
        reason = f"\n[the job was stopped by signal {stopping[0]}]\n"
    if reason:
        with open(log, "ab") as fh:
            fh.write(reason.encode())
    code = TIMED_OUT if timed_out else (child.returncode if child.returncode is not None else -15)
    _write_result(result_path, Result(code=code, log=log, timed_out=timed_out,
                                      duration_s=time.monotonic() - started, cut_bytes=cut,
                                      reason=reason, header_bytes=len(head)))
    return 0


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _write_result(path: Path, result: Result) -> None:
    write_atomic(path, json.dumps(result.to_json()).encode())


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] != "supervise":
        sys.exit("usage: proc.py supervise SPEC.json")
    sys.exit(supervise(Path(sys.argv[2])))
