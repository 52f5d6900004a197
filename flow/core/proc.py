"""The one door for child processes: every git, pip, pytest, build and reproducer run of
every workflow goes through ``run`` (in the foreground) or a background job (``flow.core.jobs``,
which runs this module as its supervisor script).

What every run gets, whatever the caller:

- an argument list, never a shell string; a shell only as ``shell(block)``, an explicit
  ``bash -c`` with the block as one argument;
- its own process group: a timeout ends the whole group (TERM, a grace period, KILL), and
  so does the main process's exit, so a child that left ``sleep 45 &`` holding stdout
  neither blocks the call nor outlives it; a descendant that left the group (a daemon:
  fork, setsid, fork) is ended when the run ends, found by its environment mark or, when it
  started its last program with an environment of its own, as an orphan this process
  adopted as the run's subreaper (Linux);
- stdin from ``/dev/null`` (or the given text);
- stdout and stderr, interleaved, streamed to the step's log file and capped: the first and
  the last ``cap/2`` bytes are kept and the cut is marked, so memory and disk stay bounded
  whatever the child prints;
- no decoding on the way: bytes go to the log, and ``Result.output`` reads them back with
  replacement characters, so no output can raise ``UnicodeDecodeError``;
- an explicit environment: the given one (or the parent's) minus secrets (``child_env``);
- a timeout that defaults to what is left of the call's foreground budget
  (``ORCHESTRATOR_FOREGROUND_S``, default 90 s, under the harness shell tools' limits).

The child itself is started, streamed into its capped log and ended by
``flow.core.supervisor``, the only module that imports ``subprocess``, which is also the
background-job supervisor: ``flow.core.jobs``
starts it in an isolated interpreter (``python -I -S -c ...``, this checkout's root put first
on ``sys.path``) to own a job beyond the call's life, and ``detach_job`` hands it
what it cannot cheaply work out itself (the guarded command, the log header).
This module and ``flow.core.redact`` (which secrets, and how they are masked) import only
the standard library.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import selectors
import shlex
import signal
import sys
import time
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from flow.core.redact import (
    MASK, PASS_ENV, SECRETS_ENV, is_secret, redact, secret_names, secret_patterns, secret_values,
)
from flow.core.supervisor import (
    CHUNK, DEFAULT_CAP, GRACE_S, MARK_ENV, NOT_FOUND, TIMED_OUT, CappedLog, Child, adopted, ask,
    become_subreaper, detach, end_marked, ended_with, kill_group, new_mark, pump, result_record,
    start, stream, write_atomic,
)

FOREGROUND_ENV = "ORCHESTRATOR_FOREGROUND_S"
DEFAULT_FOREGROUND_S = 90.0
CAP_ENV = "ORCHESTRATOR_LOG_CAP_BYTES"
__all__ = ["CHUNK", "DEFAULT_CAP", "GRACE_S", "MARK_ENV", "NOT_FOUND", "TIMED_OUT", "CappedLog",
           "end_marked", "kill_group", "pump", "stream"]  # the runner's parts, re-exported

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


def this_call() -> float | None:
    """When this call's budget began (``begin_call``): what names the call to a memo kept
    for one call only; None outside a call."""
    return _call_started


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
    from flow.core.bounds import FOREGROUND, number

    raw = (settings if settings is not None else os.environ).get(FOREGROUND_ENV, "").strip()
    if not raw:
        return DEFAULT_FOREGROUND_S
    value = number(raw, FOREGROUND)
    if value is None:
        raise ValueError(f"{FOREGROUND_ENV}={raw!r} is not {FOREGROUND.says()} "
                         "(ASCII digits)")
    return float(value)


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

class Result(NamedTuple):
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
    header_bytes: int = 0

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
        return result_record(code=self.code, log=str(self.log), timed_out=self.timed_out,
                             lost=self.lost, duration_s=self.duration_s,
                             cut_bytes=self.cut_bytes, reason=self.reason,
                             header_bytes=self.header_bytes)

    @classmethod
    def from_json(cls, raw: Mapping[str, object]) -> Result:
        return cls(code=int(raw["code"]), log=Path(str(raw["log"])),  # type: ignore[call-overload]
                   timed_out=bool(raw.get("timed_out")), lost=bool(raw.get("lost")),
                   duration_s=float(raw.get("duration_s") or 0.0),  # type: ignore[arg-type]
                   cut_bytes=int(raw.get("cut_bytes") or 0),  # type: ignore[call-overload]
                   reason=str(raw.get("reason") or ""),
                   header_bytes=int(raw.get("header_bytes") or 0))  # type: ignore[call-overload]


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
    ``--git-dir`` options, from ``cwd``). Empty when there is none, no repository, or no git.
    A repository whose own ``.git/config`` has no ``filter`` and no ``include`` section is
    known to name none without asking git (one process less for every git call)."""
    if _plainly_unfiltered(args, cwd, env):
        return []
    at = _subcommand_at(args)
    query = [*args[:at], "config", "--local", "--includes", "--name-only", "--get-regexp",
             _DRIVER_KEYS]
    done = ask(query, cwd=cwd, env=env, timeout=min(10.0, remaining()))
    if done is None or done[0] != 0:
        return []
    names = []
    for key in done[1].decode("utf-8", "replace").splitlines():
        name = key[len("filter."):].rpartition(".")[0]
        if key.startswith("filter.") and name and name not in names:
            names.append(name)
    return names


_SECTION = re.compile(rb"^[ \t]*\[[ \t]*(filter|include|includeif)\b", re.IGNORECASE | re.MULTILINE)
_GIT_DIR_ENV = ("GIT_DIR", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_GLOBAL",
                "GIT_CONFIG_SYSTEM", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS")


def _plainly_unfiltered(args: Sequence[str], cwd: str | Path | None,
                        env: Mapping[str, str]) -> bool:
    """The repository ``args`` (its ``-C`` options, from ``cwd``) addresses has a plain
    ``.git`` folder whose ``config`` has no ``[filter ...]`` and no ``[include...]``
    section: its local config names no filter driver. False whenever that cannot be told
    so simply (``--git-dir``, a ``.git`` file of a worktree or submodule, git settings in
    the environment, an unreadable config): git is asked then."""
    if any(name in env for name in _GIT_DIR_ENV):
        return False
    at = _subcommand_at(args)
    where = Path(cwd) if cwd is not None else Path.cwd()
    i = 1
    while i < at:
        if args[i] == "-C" and i + 1 < at:
            where = where / args[i + 1]
        elif args[i] in _GIT_VALUE_OPTS and args[i] != "-c":
            return False  # --git-dir, --work-tree, --namespace...: git knows best
        i += 2 if args[i] in _GIT_VALUE_OPTS else 1
    try:
        here = where.resolve()
    except OSError:
        return False
    for folder in (here, *here.parents):
        dot = folder / ".git"
        if dot.is_dir():
            try:
                with open(dot / "config", "rb") as fh:
                    text = fh.read(1 << 20)
            except OSError:
                return False
            return _SECTION.search(text) is None
        if dot.exists():
            return False
    return False


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


def spawn(argv: Sequence[str], *, cwd: str | Path | None, env: Mapping[str, str],
          stdin: str | None, merge: bool = True) -> Child[bytes]:
    """``supervisor.start`` of ``argv`` with the git guard applied (``guarded``)."""
    args, child_vars = guarded(argv, env, cwd)
    return start(args, cwd=cwd, env=child_vars, stdin=stdin, merge=merge)


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
    # the let-through secrets, and this process's own (a child may print one from a file)
    out = CappedLog(log, cap_bytes(), head,
                    mask=[*(scrubbed[k].encode() for k in secret_names(scrubbed)),
                          *(v.encode("utf-8", "surrogatepass") for v in secret_values())],
                    shown_as=MASK.encode())
    started = time.monotonic()
    mark = new_mark()
    spare = set(adopted()) if become_subreaper() else set()  # earlier orphans are not its
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
    reason = ended_with(log, reason, mark, "run", spare, child.pid)
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


class Captured(NamedTuple):
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


# -- background jobs: their supervisor (flow.core.supervisor), started for flow.core.jobs ------

POLL_S = 0.05  # how often a job started by another process is looked at


def detach_job(spec: Path, argv: Sequence[str], *, cwd: str | None, env: Mapping[str, str],
               log: str, result: Path, pgid: Path, timeout: float,
               stdin: str | None = None, mark: str | None = None,
               ready: Ready | None = None) -> int:
    """Write the job's spec and start its supervisor (``flow.core.supervisor.supervise``) as
    a process of its own session that outlives this one; returns its pid. ``env`` is the
    job's scrubbed environment. The spec carries what the supervisor would otherwise import
    half the standard library to work out: the command with the git guard applied
    (``guarded``, whose environment becomes the supervisor's), the log header, and the names
    (never the values) of the secrets let through, to mask in the log. Not waited for here:
    ``flow.core.jobs`` follows it through its result file, and ``await_supervisor`` wakes
    when it ends. ``mark`` (``MARK_ENV``'s value for the job, else the supervisor makes one)
    lets the starter find every process of the job without the supervisor's help. ``ready``:
    a supervisor started before the job was known (``ready_supervisor``) takes it, the
    environment handed over its stdin, and ``claim_file(spec)`` names its pid (its command
    line does not name the spec)."""
    args, supervisor_env = guarded(argv, env, cwd)
    spec.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(str(spec), durable=False, data=json.dumps({
        "argv": args, "header": header(argv, cwd or "/").decode("utf-8"), "cwd": cwd,
        "log": log, "result": str(result), "pgid": str(pgid), "timeout": timeout,
        "cap": cap_bytes(), "stdin": stdin, "mask_names": secret_names(env),
        "mask_as": MASK, "mark": mark}).encode())
    own = secret_values()  # this process's secret values: a job may print one from a file
    if ready is not None:
        claim = claim_file(spec)
        write_atomic(str(claim), str(ready.pid).encode(), durable=False)
        if ready.hand(spec, supervisor_env, own):
            return ready.pid
        claim.unlink(missing_ok=True)  # it died before taking the job: start one as usual
    return _spawn_supervisor(str(spec), supervisor_env, own).pid


def claim_file(spec: Path) -> Path:
    """The file naming the pid of the supervisor a ready one took ``spec`` with."""
    return spec.with_name(spec.stem + ".supervisor")


class Ready:
    """A supervisor started before its job is known (``ready_supervisor``): its start-up
    (an interpreter and its imports, about 17 ms) overlaps the caller's own work."""

    def __init__(self, child: Child[bytes]) -> None:
        self.child = child
        self.pid = child.pid

    def hand(self, spec: Path, env: Mapping[str, str], mask: Sequence[str] = ()) -> bool:
        """Give it its job: the spec's path, the job's environment and the secret values to
        mask in its log (over the pipe, never in a file). False when it is gone (its pipe
        broke) and took nothing."""
        assert self.child.stdin is not None
        try:
            self.child.stdin.write(json.dumps({"spec": str(spec), "env": dict(env),
                                               "mask": list(mask)}).encode() + b"\n")
            self.child.stdin.close()
        except BrokenPipeError:
            return False
        return True

    def dismiss(self) -> None:
        """No job for it: end-of-file on its stdin ends it."""
        if self.child.stdin is not None and not self.child.stdin.closed:
            self.child.stdin.close()


def ready_supervisor() -> Ready:
    """Start a supervisor that waits for its job on stdin (``Ready.hand``); its own
    environment is empty until then."""
    return Ready(_spawn_supervisor("-", {}))


def _spawn_supervisor(spec: str, env: Mapping[str, str],
                      mask: Sequence[str] = ()) -> Child[bytes]:
    """A supervisor of job ``spec`` (``-``: one that waits for it on stdin); the secret
    values ``mask`` reach it as one JSON line on its stdin, never in a file or its
    environment (which its job inherits)."""
    wake, hold = os.pipe()
    try:
        child = detach([sys.executable, "-I", "-S", "-c", _SUPERVISOR, "supervise", spec],
                       env=env, stdin_pipe=True, keep_fd=hold)
    except BaseException:
        os.close(wake)
        raise
    finally:
        os.close(hold)
    if spec != "-":
        assert child.stdin is not None
        try:
            child.stdin.write(json.dumps(list(mask)).encode() + b"\n")
            child.stdin.close()
        except BrokenPipeError:
            pass
    _detached[child.pid] = (child, wake)
    return child


# The supervisor's interpreter is isolated (-I: no PYTHONPATH, no user site, no script dir;
# -S: no site-packages, which it does not use), so it is pointed at this checkout explicitly:
# it runs exactly the code that started it.
_SUPERVISOR = (f"import sys; sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r}); "
               "from flow.core.supervisor import main; sys.exit(main(sys.argv[1:]))")


def await_supervisor(pid: int | None, timeout: float) -> None:
    """Return once the supervisor ``pid`` has ended or ``timeout`` seconds have passed. One
    this process started wakes the caller the moment it exits (its wake pipe reaches
    end-of-file); one another process started (a job adopted on ``--resume``) is looked at
    again after ``POLL_S``."""
    entry = _detached.get(pid or 0)
    if entry is None or entry[1] is None:
        time.sleep(max(0.0, min(timeout, POLL_S)))
        return
    child, wake = entry
    with selectors.DefaultSelector() as sel:
        sel.register(wake, selectors.EVENT_READ)
        woke = sel.select(max(0.0, timeout))
    if woke and child.poll() is None:
        # At end-of-file the supervisor has written its result and is exiting (its files
        # close before it can be reaped) or, against its nature, closed the pipe early:
        # either way the pipe has said all it can, and later waits poll.
        os.close(wake)
        _detached[child.pid] = (child, None)


def running(pid: int) -> bool | None:
    """Whether supervisor ``pid``, one this process started, is still running (asked with
    ``waitpid``, which also reaps it once it has ended); None for any other pid."""
    entry = _detached.get(pid)
    if entry is None:
        return None
    return entry[0].poll() is None


def stop_supervisor(pid: int) -> None:
    """End a supervisor this process started, at once (SIGKILL to its process group, then
    reaped): its job's own group is the caller's to end (``flow.core.jobs``)."""
    kill_group(pid)
    entry = _detached.pop(pid, None)
    if entry is not None:
        entry[0].wait()
        if entry[1] is not None:
            os.close(entry[1])


def reap() -> None:
    """Collect supervisors of this process that have exited (no zombies in a long-lived
    server), closing their wake pipes."""
    for pid, (child, wake) in list(_detached.items()):
        if child.poll() is not None:
            if wake is not None:
                os.close(wake)
            del _detached[pid]


_detached: dict[int, tuple[Child[bytes], int | None]] = {}
