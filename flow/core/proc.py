"""The one door for child processes: every git, pip, pytest, build and reproducer run of
every workflow goes through ``run`` (in the foreground) or a background job (``flow.core.jobs``,
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

This module and ``flow.core.redact`` (which secrets, and how they are masked) import only the
standard library: ``flow.core.jobs`` starts ``supervise`` in an isolated interpreter
(``python -I -c ...``, this checkout's root put first on ``sys.path``) to own a background
job beyond the call's life.
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
import uuid
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from flow.core.redact import (
    MASK, PASS_ENV, SECRETS_ENV, is_secret, redact, secret_names, secret_patterns,
)

FOREGROUND_ENV = "ORCHESTRATOR_FOREGROUND_S"
DEFAULT_FOREGROUND_S = 90.0
CAP_ENV = "ORCHESTRATOR_LOG_CAP_BYTES"
DEFAULT_CAP = 4 * 1024 * 1024
GRACE_S = 5.0
CHUNK = 65536
TIMED_OUT, NOT_FOUND = 124, 127

_call_started: float | None = None


# -- the foreground budget -------------------------------------------------------------------

def begin_call() -> None:
    """Start a call's foreground budget: the CLI does at the start of every call, a
    long-lived server at every request. Before any call began (library use, tests) each
    run gets the whole budget to itself."""
    global _call_started
    _call_started = time.monotonic()
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        try:
            if signal.getsignal(sig) is not _on_signal:
                _previous[sig] = signal.getsignal(sig)
                signal.signal(sig, _on_signal)
        except ValueError:  # not the main thread: a server's worker keeps its host's handlers
            return


def end_call() -> None:
    """The call is over: runs after it (a library user, the next test in a process) are no
    longer held to its budget. Signal handlers stay (they only act on running children)."""
    global _call_started
    _call_started = None


_active: set[int] = set()  # process groups of foreground runs now going
_previous: dict[int, object] = {}


def _on_signal(signum: int, frame: object) -> None:
    """A harness that gives up on a call (TERM, HUP, INT) ends the foreground children with
    it, then the call goes down as it would have (background jobs are not touched)."""
    for pgid in list(_active):
        kill_group(pgid)
    previous = _previous.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
        return
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


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
    spent = 0.0 if _call_started is None else time.monotonic() - _call_started
    return max(0.0, foreground_s(settings) - spent)


# -- the environment -------------------------------------------------------------------------

def child_env(base: Mapping[str, str] | None = None, *, allow: Iterable[str] = (),
              deny: Iterable[str] = ()) -> dict[str, str]:
    """``base`` (default: this process's environment) without secrets.

    Secrets are the names ``flow.core.redact.SECRET_PATTERNS`` matches (``*TOKEN*``,
    ``*SECRET*``, ``*PASSWORD*``, ``*KEY*``, ``*CREDENTIAL*``, ...; case-insensitive), plus
    the patterns in ``deny`` and in ``ORCHESTRATOR_SECRET_ENV`` (comma-separated). Names in
    ``allow`` or matching ``ORCHESTRATOR_PASS_ENV`` (comma-separated names or patterns) are let
    through (a profile that needs one says so).
    """
    env = dict(os.environ if base is None else base)
    deny = [*deny, *secret_patterns(os.environ.get(SECRETS_ENV))]
    allowed = {*allow, *secret_patterns(os.environ.get(PASS_ENV))}
    return {k: v for k, v in env.items() if _allowed(k, allowed) or not is_secret(k, deny)}


def _allowed(name: str, allowed: set[str]) -> bool:
    """Whether ``name`` is one of ``allowed`` or matches one of its patterns (``AWS_*``)."""
    return name in allowed or any(fnmatch.fnmatchcase(name.upper(), a.upper()) for a in allowed
                                  if any(c in a for c in "*?["))


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
        """The child's output (capped), decoded with replacement, secrets masked
        (``flow.core.redact``: a child let a token through ``ORCHESTRATOR_PASS_ENV`` may print
        it); never raises."""
        return redact(self._raw_output())

    def _raw_output(self) -> str:
        try:
            with open(self.log, "rb") as fh:
                fh.seek(self.header_bytes)
                data = fh.read()
        except OSError:
            data = b""
        text = data.decode("utf-8", errors="replace")
        return f"{text}{self.reason}" if self.reason and self.reason not in text else text

    def tail(self, lines: int = 20) -> str:
        """The output's last ``lines`` lines (read from the log's end only)."""
        if self.log.exists():
            return "\n".join(log_tail(self.log, lines, skip=self.header_bytes))
        return "\n".join(self.reason.strip().splitlines()[-lines:])

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
    ``cap/2`` in memory; ``close`` marks the cut and appends the tail.

    ``mask`` holds the values of secrets the child was let see (``secret_names``): each is
    written as ``***``, also when it arrives split across reads (the last ``len - 1`` bytes
    of the longest are held back until more output or ``close``). Bytes, never decoded."""

    def __init__(self, path: Path, cap: int, header: bytes, mask: Sequence[bytes] = ()) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fh = open(path, "wb", buffering=0)  # a running job's log is read as it grows
        self.fh.write(header)
        self.head_left = max(1, cap // 2)
        self.tail_cap = max(1, cap - self.head_left)
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.cut = 0
        self.mask = sorted({m for m in mask if m}, key=len, reverse=True)
        self.held = b""

    def _masked(self, data: bytes, final: bool) -> bytes:
        data = self.held + data
        for value in self.mask:
            data = data.replace(value, MASK.encode())
        cut = len(data) if final else max(0, len(data) - (len(self.mask[0]) - 1))
        self.held = data[cut:]
        return data[:cut]

    def write(self, data: bytes) -> None:
        if self.mask:
            data = self._masked(data, final=False)
        self._write(data)

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
        if self.mask:
            self._write(self._masked(b"", final=True))
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


def log_tail(path: Path, lines: int = 5, window: int = 16384, skip: int = 0) -> list[str]:
    """The last ``lines`` lines of a log, read from its last ``window`` bytes (never from
    before byte ``skip``, the end of the header), secrets masked as in ``Result.output``;
    each line at most 300 characters."""
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(skip, size - window))
            data = fh.read()
    except OSError:
        return []
    text = redact(data.decode("utf-8", errors="replace"))
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
            _end(child, grace)
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


# git run on a checkout we did not make reads that checkout's .git/config: a core.fsmonitor
# command, a hooks path, an external diff or a pager named there would run with our rights.
GIT_GUARD = ("-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null", "-c", "diff.external=",
             "-c", "core.pager=cat", "-c", "core.sshCommand=ssh", "-c", "protocol.ext.allow=never")
GIT_ENV_DROP = ("GIT_EXTERNAL_DIFF", "GIT_PAGER", "GIT_SSH_COMMAND", "GIT_CONFIG_PARAMETERS",
                "GIT_CONFIG_COUNT", "GIT_ASKPASS", "SSH_ASKPASS")


# A filter or diff driver the repository's own config names (``filter.<name>.clean``, a
# ``textconv``) runs when a tracked file's attributes pick it: status and diff would run it.
_DRIVER_KEYS = r"^filter\..+\.(clean|smudge|process)$"
_DIFF_FAMILY = frozenset({"diff", "log", "show", "whatchanged"})
_GIT_VALUE_OPTS = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace",
                             "--config-env", "--super-prefix"})


def _subcommand_at(args: Sequence[str]) -> int:
    """Index of the git subcommand in ``args`` (after git's own options), or len(args)."""
    i = 1
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_VALUE_OPTS else 1
    return i


def repo_filters(args: Sequence[str], cwd: str | Path | None,
                 env: Mapping[str, str]) -> list[str]:
    """The filter drivers the repository's own config (``--local``, includes followed) names,
    as ``git config`` lists them for the repository ``args`` address (its ``-C`` and
    ``--git-dir`` options, from ``cwd``). Empty when there is none, no repository, or no git."""
    at = _subcommand_at(args)
    query = [*args[:at], "config", "--local", "--includes", "--name-only", "--get-regexp",
             _DRIVER_KEYS]
    try:
        done = subprocess.run(query, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=10, start_new_session=True)
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode != 0:
        return []
    names = []
    for key in done.stdout.decode("utf-8", "replace").splitlines():
        name = key[len("filter."):].rpartition(".")[0]
        if key.startswith("filter.") and name and name not in names:
            names.append(name)
    return names


def guarded(argv: Sequence[str], env: Mapping[str, str],
            cwd: str | Path | None = None) -> tuple[list[str], dict[str, str]]:
    """``argv`` and ``env`` as run. A ``git`` child gets ``GIT_GUARD`` first (no fsmonitor,
    no hooks, no external diff or pager from the repository's config), never prompts
    (``GIT_TERMINAL_PROMPT=0``), takes no optional lock, and loses the settings that would
    run a command of the environment's choosing (``GIT_ENV_DROP``). The clean/smudge/process
    filters the repository's own config names are emptied (``-c filter.<name>.clean=`` ...,
    ``required=false``: files are read as stored), and ``diff``/``log``/``show`` run with
    ``--no-ext-diff --no-textconv``, so no diff driver or textconv command of a checkout runs.
    Drivers of the user's own (global, system) config stay theirs (git-lfs keeps working).
    Every other child is left as it is."""
    args, child = list(argv), dict(env)
    if args and Path(args[0]).name == "git":
        args = [args[0], *GIT_GUARD, *args[1:]]
        for name in GIT_ENV_DROP:
            child.pop(name, None)
        child.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
        off: list[str] = []
        for name in repo_filters(args, cwd, child):
            for key, value in (("clean", ""), ("smudge", ""), ("process", ""),
                               ("required", "false")):
                off += ["-c", f"filter.{name}.{key}={value}"]
        args[1:1] = off
        at = _subcommand_at(args)
        if at < len(args) and args[at] in _DIFF_FAMILY:
            args[at + 1:at + 1] = ["--no-ext-diff", "--no-textconv"]
    return args, child


# Every child of ``run`` carries this setting, a fresh value per run: a descendant that left
# the process group (fork, setsid, fork) still inherits it, and is found by it in /proc.
MARK_ENV = "ORCHESTRATOR_RUN_MARK"


def end_marked(mark: str) -> list[int]:
    """SIGKILL every process (of this user) whose environment holds ``MARK_ENV=mark``; the
    pids ended. Reads /proc (Linux); elsewhere none is found and the process group alone
    bounds a run."""
    needle = f"{MARK_ENV}={mark}".encode()
    ended: list[int] = []
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return ended
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0"):
            try:
                os.kill(int(entry.name), signal.SIGKILL)
                ended.append(int(entry.name))
            except OSError:
                continue
    return sorted(ended)


def spawn(argv: Sequence[str], *, cwd: str | Path | None, env: Mapping[str, str],
          stdin: str | None, merge: bool = True) -> subprocess.Popen[bytes]:
    args, child_vars = guarded(argv, env, cwd)
    child = subprocess.Popen(args, cwd=cwd, env=child_vars, start_new_session=True,
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
    scrubbed = child_env(env, allow=allow)
    out = CappedLog(log, cap_bytes(), head,
                    mask=[scrubbed[k].encode() for k in secret_names(scrubbed)])
    started = time.monotonic()
    mark = uuid.uuid4().hex
    try:
        child = spawn(argv, cwd=cwd, env={**scrubbed, MARK_ENV: mark}, stdin=stdin)
    except OSError as exc:
        reason = f"{argv[0]}: cannot be started: {exc.strerror or exc}\n"
        out.write(reason.encode())
        out.close()
        return Result(code=NOT_FOUND, log=log, reason=reason, header_bytes=len(head))
    _active.add(child.pid)
    try:
        timed_out = stream(child, out, started + limit)
    finally:
        _active.discard(child.pid)
    cut = out.close()
    took = time.monotonic() - started
    reason = ""
    if timed_out:
        reason = f"\n[timed out after {limit:.0f} s: the process group was ended]\n"
    reason = _ended_with(log, reason, mark, "run")
    return Result(code=TIMED_OUT if timed_out else child.returncode, log=log,
                  timed_out=timed_out, duration_s=took, cut_bytes=cut, reason=reason,
                  header_bytes=len(head))


class BudgetSpent(Exception):
    """A query was cut short by the call's foreground budget, not by a timeout of its own:
    its answer is unknown and must never be recorded as one. The engine answers ``waiting``
    (``waiting_on: "budget"``) and the step runs again, query and all, in the next call."""

    def __init__(self, argv: Sequence[str]) -> None:
        what = " ".join(shlex.quote(a) for a in argv[:4]) + (" ..." if len(argv) > 4 else "")
        super().__init__(f"{what}: cut short by the foreground budget ({FOREGROUND_ENV})")
        self.what = what


@dataclass(frozen=True)
class Captured:
    """A query's answer: its stdout as bytes (the data), stderr as text (the diagnostics).
    ``budget_cut``: it timed out because the call's budget ran out before its own timeout
    (or the budget was spent before it could start): ask again, never record it."""

    code: int
    stdout: bytes
    stderr: str
    timed_out: bool = False
    too_big: bool = False
    budget_cut: bool = False
    argv: tuple[str, ...] = ()

    def or_wait(self) -> Captured:
        """This answer, or ``BudgetSpent`` when the budget cut it short (the caller's step
        then runs again in the next call instead of recording a timeout as the answer)."""
        if self.budget_cut:
            raise BudgetSpent(self.argv)
        return self

    @property
    def ok(self) -> bool:
        return self.code == 0 and not self.timed_out and not self.too_big

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def problem(self) -> str:
        """Why it failed, in one line for an error message."""
        if self.timed_out:
            return "timed out"
        if self.too_big:
            return "printed more than the runner keeps for a query"
        return self.stderr.strip()[-500:] or f"exit {self.code}"


def capture(argv: Sequence[str], *, cwd: str | Path | None = None,
            env: Mapping[str, str] | None = None, timeout: float | None = 60.0,
            stdin: str | None = None, limit: int = 256 * 1024 * 1024,
            budget: bool = True) -> Captured:
    """Run a query (git, a version probe) whose stdout is data: stdout kept whole up to
    ``limit`` bytes (past it the group is ended and ``too_big`` set: data is never cut
    silently), stderr capped; the same process-group, environment, stdin and budget rules
    as ``run``; never raises for the child's sake (a missing program is 127). ``budget=False``
    is for a driver (the demo) whose child is itself a call with a budget of its own."""
    if not argv:
        raise ValueError("capture() needs a non-empty argument list")
    left = remaining() if budget else float("inf")
    limit_s = left if timeout is None else min(timeout, left)
    by_budget = timeout is None or left < timeout  # a timeout now is the budget's, not its own
    if limit_s <= 0:
        return Captured(TIMED_OUT, b"", "the foreground budget was spent before it started",
                        timed_out=True, budget_cut=by_budget, argv=tuple(argv))
    try:
        child = spawn(argv, cwd=cwd, env=child_env(env), stdin=stdin, merge=False)
    except OSError as exc:
        return Captured(NOT_FOUND, b"", f"{argv[0]}: cannot be started: {exc.strerror or exc}",
                        argv=tuple(argv))
    out = bytearray()
    err: deque[bytes] = deque(maxlen=64)

    def keep_out(data: bytes) -> bool:
        if len(out) > limit:  # already over: stop keeping, the group is being ended
            return False
        out.extend(data)
        return len(out) <= limit

    def keep_err(data: bytes) -> bool:
        err.append(data)
        return True

    assert child.stdout is not None and child.stderr is not None
    _active.add(child.pid)
    try:
        why = pump(child, {child.stdout: keep_out, child.stderr: keep_err},
                   time.monotonic() + limit_s)
    finally:
        _active.discard(child.pid)
    code = TIMED_OUT if why == "timed_out" else child.returncode
    return Captured(code, bytes(out), b"".join(err).decode("utf-8", errors="replace"),
                    timed_out=why == "timed_out", too_big=why == "stopped",
                    budget_cut=why == "timed_out" and by_budget, argv=tuple(argv))


# -- the background-job supervisor (run as a script by flow.core.jobs) ---------------------------

def detach_supervisor(spec: Path, env: Mapping[str, str]) -> int:
    """Start ``supervise(spec)`` as a process of its own session that outlives this one (not
    waited for here; ``flow.core.jobs`` follows it through its result file). Returns its pid."""
    child = subprocess.Popen([sys.executable, "-I", "-c", _SUPERVISOR, "supervise", str(spec)],
                             env=dict(env), cwd="/", start_new_session=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    _detached.append(child)
    return child.pid


# The supervisor's interpreter is isolated (-I: no PYTHONPATH, no user site, no script dir),
# so it is pointed at this checkout explicitly: it runs exactly the code that started it.
_SUPERVISOR = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
               "from flow.core.proc import main; sys.exit(main(sys.argv[1:]))")


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
    # the starter names the secrets it let through (never their values: the spec is a file)
    mask = [os.environ[k].encode() for k in spec.get("mask_names") or () if k in os.environ]
    out = CappedLog(log, int(spec.get("cap") or DEFAULT_CAP), head, mask=mask)
    started = time.monotonic()
    stopping: list[int] = []

    def on_term(signum: int, _frame: object) -> None:
        stopping.append(signum)
        raise KeyboardInterrupt

    try:
        mark = uuid.uuid4().hex  # the job's mark: descendants that escape its group carry it
        child = spawn(argv, cwd=spec.get("cwd"), env={**os.environ, MARK_ENV: mark},
                      stdin=spec.get("stdin"))
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
    reason = _ended_with(log, reason, mark, "job")
    code = TIMED_OUT if timed_out else (child.returncode if child.returncode is not None else -15)
    _write_result(result_path, Result(code=code, log=log, timed_out=timed_out,
                                      duration_s=time.monotonic() - started, cut_bytes=cut,
                                      reason=reason, header_bytes=len(head)))
    return 0



def _ended_with(log: Path, reason: str, mark: str, owner: str) -> str:
    """End the descendants that escaped the process group (found by ``mark``), add them to
    ``reason``, and append the whole reason to the log; the reason returned."""
    escaped = end_marked(mark)
    if escaped:
        reason += (f"\n[{len(escaped)} process(es) that left the {owner}'s process group (a "
                   f"daemon: fork, setsid, fork) were ended with it: pids "
                   f"{' '.join(map(str, escaped))}]\n")
    if reason:
        with open(log, "ab") as fh:
            fh.write(reason.encode())
    return reason

def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _write_result(path: Path, result: Result) -> None:
    write_atomic(path, json.dumps(result.to_json()).encode())


def main(argv: Sequence[str]) -> int:
    """The supervisor's entry: ``supervise SPEC.json``."""
    if len(argv) != 2 or argv[0] != "supervise":
        sys.exit("usage: supervise SPEC.json")
    return supervise(Path(argv[1]))
