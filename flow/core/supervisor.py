"""Running one child to its end with the runner's guarantees, and the background-job
supervisor built on it.

``flow.core.proc`` (the one door for child processes) runs its foreground children through
``start``, ``stream``/``pump`` and ``CappedLog`` here, its short queries through ``ask``
and job supervisors through ``detach``: this is the only module that imports
``subprocess``. For ``flow.core.jobs``, ``proc.detach_job`` starts ``main`` (``supervise
SPEC.json``) in an isolated interpreter of its own session (``python -I -S``) to own a job
beyond the call's life. The supervisor's start-up lies on the path of every job (the job
cannot begin before it), so this module imports only the cheap part of the standard library
(no ``dataclasses``, ``pathlib``, ``typing``, ``uuid`` or ``fnmatch``) and nothing of the
orchestrator: what costs more to work out (the git guard, the log header, the scrubbed
environment, which secret values to mask) the starter works out and writes into the spec
or the supervisor's environment.

The starter learns that a supervisor it started has ended from a pipe: the supervisor holds
its write end (``detach``'s ``keep_fd``), passed on to no child, until it exits, so the read
end reaches end-of-file once the result file is in place.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing (about 2 ms)
if TYPE_CHECKING:
    from typing import IO, Any

GRACE_S = 5.0
CHUNK = 65536
TIMED_OUT, NOT_FOUND = 124, 127
DEFAULT_CAP = 4 * 1024 * 1024

# What ``start`` and ``detach`` return: this module is the only one that imports subprocess.
Child = subprocess.Popen

# Every child carries this setting, a fresh value per run: a descendant that left the
# process group (fork, setsid, fork) still inherits it, and is found by it in /proc.
MARK_ENV = "ORCHESTRATOR_RUN_MARK"


def new_mark() -> str:
    return os.urandom(16).hex()


# A daemon that also starts its last program with an environment of its own (``env -i``)
# carries no mark. On Linux the process that runs children becomes their subreaper
# (``prctl(PR_SET_CHILD_SUBREAPER)``): such an orphan is reparented to it, not to init, and
# ``end_adopted`` ends every child it did not start itself. The pids it started are kept in
# ``_OURS`` (a job supervisor it detached is its child, never an orphan to end).
_PR_SET_CHILD_SUBREAPER = 36
_REAPER: list[bool] = []  # [whether this process is a subreaper], once tried
_OURS: set[int] = set()
_SPAWNING = threading.Lock()  # a child between fork and _OURS is never taken for an orphan


def become_subreaper() -> bool:
    """Make this process the subreaper of its descendants (Linux, once); False elsewhere or
    when the kernel refuses: then the mark and the process group alone bound a run."""
    if not _REAPER:
        ok = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                ok = ctypes.CDLL(None, use_errno=True).prctl(
                    _PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
            except (OSError, AttributeError):
                ok = False
        _REAPER.append(ok)
    return _REAPER[0]


def _popen(argv: Sequence[str], **kwargs: object) -> subprocess.Popen[bytes]:
    """``subprocess.Popen``, its pid kept in ``_OURS`` (a child, not an adopted orphan)."""
    with _SPAWNING:
        child = subprocess.Popen(list(argv), **kwargs)  # type: ignore[call-overload]
        _OURS.add(child.pid)
    return child


def adopted() -> dict[int, tuple[str, int]]:
    """The children of this process that it did not start, each with its state letter and
    process group: orphans reparented to it as their subreaper (none when it is not one)."""
    found: dict[int, tuple[str, int]] = {}
    if not (_REAPER and _REAPER[0]):
        return found
    me = str(os.getpid())
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for name in entries:
        if not name.isdigit() or int(name) in _OURS:
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            if fields[1].decode() == me:
                found[int(name)] = (fields[0].decode(), int(fields[2]))
        except (OSError, IndexError, ValueError):
            continue
    return found


def end_adopted(spare: set[int], group: int | None = None) -> list[int]:
    """SIGKILL and reap every orphan adopted since ``spare`` was taken (``adopted``), again
    while ending one hands its own children over in turn; the pids ended that were still
    running outside the run's process ``group`` (the group's own are ended with it)."""
    ended: set[int] = set()
    for _ in range(1000):  # each round ends one more generation
        with _SPAWNING:
            found = {pid: how for pid, how in adopted().items() if pid not in spare}
        if not found:
            break
        for pid, (state, pgrp) in sorted(found.items()):
            if state not in ("Z", "X") and pgrp != group:
                ended.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
    return sorted(ended)


class CappedLog:
    """Writes the first ``cap/2`` bytes to the file as they come and keeps only the last
    ``cap/2`` in memory; ``close`` marks the cut and appends the tail.

    ``mask`` holds the values of secrets the child was let see: each is written as
    ``shown_as`` (``flow.core.redact.MASK``, which the runner and the job spec pass), also
    when it arrives split across reads (the last ``len - 1`` bytes of the longest are held
    back until more output or ``close``), as a whole word (``flow.core.redact.value_pattern``:
    ``postgres`` is masked, ``postgresql`` is not). Bytes, never decoded. Then every secret shape
    (``flow.core.redact.RULES``: a private key a child prints from a file, a URL with a
    password) is masked line by line: an unfinished last line, and an open private-key block
    until its END line, wait for more output or ``close`` (at most ``HOLD`` bytes)."""

    HOLD = 65536

    def __init__(self, path: str | os.PathLike[str], cap: int, header: bytes,
                 mask: Sequence[bytes] = (), shown_as: bytes = b"***") -> None:
        os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
        self.fh = open(path, "wb", buffering=0)  # a running job's log is read as it grows
        self.fh.write(header)
        self.head_left = max(1, cap // 2)
        self.tail_cap = max(1, cap - self.head_left)
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.cut = 0
        self.mask = sorted({m for m in mask if m}, key=len, reverse=True)
        self.shown_as = shown_as
        self.held = b""
        self.before = b""
        self.values: Any = None
        self.lines = b""

    def _masked(self, data: bytes, final: bool) -> bytes:
        if self.values is None:  # once there is output: not on the start-up path
            from flow.core.redact import value_pattern

            self.values = value_pattern(self.mask)
        start = len(self.before)  # the byte before, written already: a value is a whole word
        data = self.before + self.held + data
        cut = len(data) if final else max(start, len(data) - len(self.mask[0]))
        out, pos = [], start
        for found in self.values.finditer(data, start):
            if not final and (found.end() >= len(data) or found.start() >= cut):
                cut = min(cut, found.start())  # the next byte decides: held back whole
                break
            out += [data[pos:found.start()], self.shown_as]
            pos = found.end()
        cut = max(cut, pos)
        out.append(data[pos:cut])
        self.held = data[cut:]
        self.before = data[cut - 1:cut] if cut > start else self.before
        return b"".join(out)

    def _shapes(self, data: bytes, final: bool) -> bytes:
        data = self.lines + data
        cut = len(data)
        if not final and len(data) <= self.HOLD:
            cut = data.rfind(b"\n") + 1
            begin = data.rfind(b"-----BEGIN ", 0, cut)
            if begin >= 0 and b"PRIVATE KEY" in data[begin:begin + 80] and \
                    data.find(b"-----END ", begin) < 0:
                cut = min(cut, data.rfind(b"\n", 0, begin) + 1)  # the key's END is to come
        self.lines = data[cut:]
        out = data[:cut]
        if not out:
            return out
        from flow.core.redact import redact_bytes  # once there is output: not on the start-up path

        return redact_bytes(out)

    def write(self, data: bytes) -> None:
        if self.mask:
            data = self._masked(data, final=False)
        self._write(self._shapes(data, final=False))

    def _write(self, data: bytes) -> None:
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
        self._write(self._shapes(self._masked(b"", final=True) if self.mask else b"", final=True))
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


def kill_group(pgid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def start(argv: Sequence[str], *, cwd: str | os.PathLike[str] | None, env: Mapping[str, str],
          stdin: str | None, merge: bool = True) -> subprocess.Popen[bytes]:
    """Start ``argv`` as it is (``flow.core.proc.spawn`` guards git first) in a process
    group of its own, stdin from ``/dev/null`` or the given text, stdout piped (stderr
    merged into it, or piped apart). Raises ``OSError`` when it cannot be started."""
    child = _popen(argv, cwd=cwd, env=dict(env), start_new_session=True,
                   stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                   stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT if merge else subprocess.PIPE)
    if stdin is not None:
        assert child.stdin is not None
        try:
            child.stdin.write(stdin.encode())
        except BrokenPipeError:
            pass
        child.stdin.close()
    return child


def ask(argv: Sequence[str], *, cwd: str | os.PathLike[str] | None, env: Mapping[str, str],
        timeout: float) -> tuple[int, bytes] | None:
    """A short query run as it is: (exit code, stdout), stdin from ``/dev/null``, in a session
    of its own; None when it cannot be started or runs past ``timeout`` (it is ended then)."""
    try:
        child = _popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except (OSError, subprocess.SubprocessError):
        return None
    try:
        out, _ = child.communicate(timeout=max(timeout, 0.0))
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return None
    return child.returncode, out


def detach(argv: Sequence[str], *, env: Mapping[str, str], stdin_pipe: bool,
           keep_fd: int) -> Child:
    """Start ``argv`` at ``/`` in a session of its own, its output discarded, ``keep_fd``
    inherited (no other descriptor is), stdin a pipe (``stdin_pipe``) or ``/dev/null``: a
    process meant to outlive its starter (the job supervisor)."""
    return _popen(argv, env=dict(env), cwd="/", start_new_session=True,
                  stdin=subprocess.PIPE if stdin_pipe else subprocess.DEVNULL,
                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(keep_fd,))


def end(child: subprocess.Popen[bytes], grace: float) -> None:
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

    def sink(data: bytes) -> bool:
        out.write(data)
        return True

    return pump(child, {child.stdout: sink}, deadline, grace) == "timed_out"


def pump(child: subprocess.Popen[bytes], sinks: Mapping[IO[bytes], Callable[[bytes], bool]],
         deadline: float, grace: float = GRACE_S) -> str | None:
    """Feed each pipe's bytes to its sink until the child exits, ``deadline`` passes
    ("timed_out") or a sink returns False ("stopped"); then end the child's process group
    (TERM, grace, KILL after a timeout or a stop; KILL of what is left after a normal exit)
    and drain what the pipes still hold."""
    sel = selectors.DefaultSelector()
    for pipe in sinks:
        os.set_blocking(pipe.fileno(), False)
        sel.register(pipe, selectors.EVENT_READ)
    open_pipes = set(sinks)
    why: str | None = None

    def read_ready(wait: float) -> None:
        nonlocal why
        for key, _ in sel.select(wait):
            pipe: IO[bytes] = key.fileobj  # type: ignore[assignment]
            while True:
                try:
                    data = os.read(pipe.fileno(), CHUNK)
                except BlockingIOError:
                    break
                if not data:
                    sel.unregister(pipe)
                    open_pipes.discard(pipe)
                    break
                if not sinks[pipe](data) and why is None:
                    why = "stopped"

    try:
        while open_pipes and why is None:
            left = deadline - time.monotonic()
            if left <= 0:
                why = "timed_out"
                break
            if child.poll() is not None:
                break
            read_ready(min(left, 0.5))
        if why is not None:
            end(child, grace)
        else:
            child.wait()
        # The main process is gone: nothing it left behind may keep a pipe (or run) on.
        kill_group(child.pid)
        stop = time.monotonic() + 2.0
        while open_pipes and time.monotonic() < stop:
            read_ready(0.2)
    finally:
        sel.close()
        for pipe in sinks:
            pipe.close()
    return why


def end_marked(mark: str) -> list[int]:
    """SIGKILL every process (of this user) whose environment holds ``MARK_ENV=mark``; the
    pids ended. Reads /proc (Linux); elsewhere none is found and the process group alone
    bounds a run."""
    needle = f"{MARK_ENV}={mark}".encode()
    ended: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return ended
    me = os.getpid()
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as fh:
                environ = fh.read()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            try:
                os.kill(int(name), signal.SIGKILL)
                ended.append(int(name))
            except OSError:
                continue
    return sorted(ended)


def ended_with(log: str | os.PathLike[str], reason: str, mark: str, owner: str,
               spare: set[int] | None = None, group: int | None = None) -> str:
    """End the descendants that escaped the process ``group`` (found by ``mark``, and the
    orphans this subreaper adopted since ``spare`` was taken, whatever their environment),
    add them to ``reason``, and append the whole reason to the log; the reason returned."""
    escaped = sorted(set(end_marked(mark)) | set(end_adopted(spare or set(), group)))
    if escaped:
        reason += (f"\n[{len(escaped)} process(es) that left the {owner}'s process group (a "
                   f"daemon: fork, setsid, fork) were ended with it: pids "
                   f"{' '.join(map(str, escaped))}]\n")
    if reason:
        with open(log, "ab") as fh:
            fh.write(reason.encode())
    return reason


def result_record(*, code: int, log: str, timed_out: bool = False, lost: bool = False,
                  duration_s: float = 0.0, cut_bytes: int = 0, reason: str = "",
                  header_bytes: int = 0) -> dict[str, object]:
    """How one run ended, as its result file and the job record hold it (read back by
    ``flow.core.proc.Result.from_json``)."""
    return {"code": code, "log": log, "timed_out": timed_out, "lost": lost,
            "duration_s": round(duration_s, 3), "cut_bytes": cut_bytes, "reason": reason,
            "header_bytes": header_bytes}


def write_atomic(path: str, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` whole (a reader sees the old or the new bytes). ``durable=False``
    skips the fsync, for the files that steer a job while it runs (its spec, its pgid, the
    claim of the supervisor that took it): they mean nothing once the machine has gone
    down, and a job found without its supervisor is started again with new ones. A result
    is always written durably."""
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        if durable:
            fh.flush()
            os.fsync(fh.fileno())
    os.replace(tmp, path)


def supervise(spec_path: str, env: Mapping[str, str] | None = None,
              secrets: Sequence[str] = ()) -> int:
    """Run the job ``spec_path`` describes to its end or its deadline, then write its result
    file atomically. The spec holds the command as it runs (git already guarded), the log's
    header, and the names of the secrets the starter let through (never their values: the
    spec is a file); the child's environment, already scrubbed, is ``env`` (handed over a
    pipe by a starter that started this supervisor before it knew the job) or this
    supervisor's own. ``secrets``: the starter's own secret values (handed over the pipe),
    masked in the log too, should the job print one it read from a file. A TERM to the supervisor ends the job's group and still writes a
    result."""
    env = dict(os.environ if env is None else env)
    with open(spec_path, "rb") as fh:
        spec = json.loads(fh.read())
    argv, log, result_path = spec["argv"], spec["log"], spec["result"]
    head = spec["header"].encode("utf-8", "replace")
    mask = [env[k].encode() for k in spec.get("mask_names") or () if k in env]
    mask += [value.encode("utf-8", "surrogatepass") for value in secrets]
    out = CappedLog(log, int(spec.get("cap") or DEFAULT_CAP), head, mask=mask,
                    shown_as=str(spec.get("mask_as") or "***").encode())
    started = time.monotonic()
    stopping: list[int] = []

    def on_term(signum: int, _frame: object) -> None:
        stopping.append(signum)
        raise KeyboardInterrupt

    # the job's mark, given by the starter or made here: every descendant carries it, those
    # that escape the job's process group too
    mark = str(spec.get("mark") or new_mark())
    become_subreaper()
    try:
        child = start(argv, cwd=spec.get("cwd"), env={**env, MARK_ENV: mark},
                      stdin=spec.get("stdin"))
    except OSError as exc:
        reason = f"{argv[0]}: cannot be started: {exc.strerror or exc}\n"
        out.write(reason.encode())
        out.close()
        _write_result(result_path, result_record(code=NOT_FOUND, log=log, reason=reason,
                                                 header_bytes=len(head)))
        return 0
    write_atomic(spec["pgid"], str(child.pid).encode(), durable=False)
    signal.signal(signal.SIGTERM, on_term)
    deadline = started + float(spec["timeout"])
    try:
        timed_out = stream(child, out, deadline)
    except KeyboardInterrupt:
        end(child, 1.0)
        timed_out = False
    cut = out.close()
    reason = ""
    if timed_out:
        reason = f"\n[timed out after {float(spec['timeout']):.0f} s: the process group was ended]\n"
    elif stopping:
        reason = f"\n[the job was stopped by signal {stopping[0]}]\n"
    reason = ended_with(log, reason, mark, "job", group=child.pid)
    code = TIMED_OUT if timed_out else (child.returncode if child.returncode is not None else -15)
    _write_result(result_path, result_record(
        code=code, log=log, timed_out=timed_out, duration_s=time.monotonic() - started,
        cut_bytes=cut, reason=reason, header_bytes=len(head)))
    return 0


def _write_result(path: str, record: dict[str, object]) -> None:
    write_atomic(path, json.dumps(record).encode())


def main(argv: Sequence[str]) -> int:
    """The supervisor's entry: ``supervise SPEC.json`` (stdin: one line, the JSON list of
    the starter's secret values to mask in the log), or ``supervise -``: started ready
    before the job was known, it reads one line from stdin, ``{"spec": PATH, "env": {...},
    "mask": [...]}``, and supervises that job; end-of-file first (the starter needed no
    job) ends it at once."""
    if len(argv) != 2 or argv[0] != "supervise":
        sys.exit("usage: supervise SPEC.json | supervise -")
    line = sys.stdin.buffer.readline()
    if argv[1] != "-":  # the starter's secret values, to mask in the log
        return supervise(argv[1], secrets=json.loads(line) if line.strip() else ())
    if not line.strip():
        return 0
    order = json.loads(line)
    return supervise(str(order["spec"]), order["env"], order.get("mask") or ())
