"""Fork servers for the processes the tests start by the hundred: in each worker one
interpreter imports what such a process imports, once, and each start is a fork of it rather
than a fresh interpreter. Two kinds:

- ``torch``: the PyTorch runs the refactor flows start with their test interpreter (the
  refactor seed's phases 5 to 7). Every such start imports torch and, through upstream's
  ``common_device_type``, ``torch._inductor.utils`` and all of ``torch._dynamo``: 4 to 5
  CPU-seconds on a 2-core machine, some 140 starts a suite. Forked, a start costs what is
  left: pytest's own start and the test file.
- ``orchestrator``: ``orchestrator.py`` calls, the tests' own and the printed commands their
  harnesses run (``tests.contract.driver``), some 1,400 a suite. A fresh call spends about
  0.3 CPU-seconds importing pydantic, its models and the workflows' declarations; a forked one
  about 0.03. The server imports the modules by their names and runs none of their code
  besides; a call's own work, lazy imports included, happens in the fork.

Neither is how a harness or a person starts them: the tests that pin a fresh start (which
modules a call imports, how it starts and exits) start the real interpreter.

How: ``running`` writes ``python``, a small executable a test starts its processes with
(``python(kind)``). It hands its arguments, working directory, environment and standard
streams (the descriptors themselves, over a Unix socket) to the server, which forks; the child
takes them on, runs ``pytest`` or the script as ``__main__`` would run, and its exit status
comes back as the executable's own. A signal the executable gets is passed to the child's
process group, and an executable killed outright (a job's timeout) has the child's group killed.
Whatever a fork could run differently from a fresh start goes to the real interpreter instead
(``exec``, so the process is the one a flow started): other interpreter options or ``-c``, a
``PYTHON*`` setting other than ``PYTHONPATH``, ``PYTHONDONTWRITEBYTECODE`` and
``PYTHONUNBUFFERED``, or a module the server imported (``torch``, ``pytest``, ``flow``, ...)
shadowed on the path the run would search first by another copy, as a PyTorch source checkout's
own ``torch/`` or a copied checkout's ``flow/`` would be. The server forgets the
``sitecustomize`` it started with: each fork imports one from its own path as site would (the
crash hook's on ``PYTHONPATH``, else the interpreter's own, Debian's say). With no server
listening (not yet started, or gone) the executable is the real interpreter too, so a printed
command stays runnable.

A server lives as long as the worker that started it: it ends when its parent does.
Run as ``python tests/forkserver.py SOCKET KIND``.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import site
import socket
import sys
from collections.abc import Iterator

# Each kind's server, and the package that must be importable for it to start.
KINDS = {"torch": "torch", "orchestrator": "flow"}
KEPT_SETTINGS = {"PYTHONPATH", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED"}

# The executable the flows are given. Standard library only, started with -IS (about 15 ms):
# it may not lean on the environment it passes on.
WRAPPER = """#!{real} -IS
import os, signal, socket, sys, json
REAL, SOCK = {real!r}, {sock!r}
args = sys.argv[1:]
def real():
    os.execv(REAL, [REAL, *args])
if not (args[:2] == ["-m", "pytest"] or (args and not args[0].startswith("-"))):
    real()
conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    conn.connect(SOCK)
except OSError:
    real()
body = json.dumps({{"args": args, "cwd": os.getcwd(), "env": dict(os.environ)}}).encode()
try:
    socket.send_fds(conn, [len(body).to_bytes(8, "big") + body], [0, 1, 2])
except OSError:
    real()
reader = conn.makefile("rb")
line = reader.readline()
if line != b"started\\n":
    conn.close()
    real()
def forward(sig, frame):
    conn.sendall(b"%d\\n" % sig)
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
            signal.SIGUSR2):
    signal.signal(sig, forward)
line = reader.readline()
if not line:
    sys.stderr.write("tests/forkserver: the fork server ended before the run did\\n")
    os._exit(1)
status = int(line)
if status < 0:  # the run was killed by a signal: so is this process (SIGKILL keeps its action)
    if -status != signal.SIGKILL:
        signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
os._exit(status if status >= 0 else 128 - status)
"""


def _preloads(kind: str) -> list[str]:
    """The modules a ``kind`` server imports. The orchestrator's: the command line, the state
    and its rendering, and every built-in workflow's declaration; not ``workspace.pgconn``, as
    a call closes the PostgreSQL store's connections only where it imported that module
    (``orchestrator._exit``)."""
    if kind == "torch":
        return ["torch", "torch._inductor.utils", "pytest"]
    from flow.workflows.registry import BUILTIN

    return ["flow.cli.main", "flow.core.render", "flow.core.workflow", *BUILTIN.values()]


def _receive(conn: socket.socket) -> tuple[dict, list[int]]:
    import json

    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    while len(data) < 8 or len(data) < 8 + int.from_bytes(data[:8], "big"):
        more = conn.recv(1 << 16)
        if not more:
            raise EOFError("the executable went away while sending its request")
        data += more
    return json.loads(data[8:8 + int.from_bytes(data[:8], "big")]), list(fds)


def _modules(folder: str) -> dict[str, str | None]:
    """The modules ``folder`` holds, each with its source (a package's ``__init__.py``), or
    None where it has none to compare (a compiled module, a folder without ``__init__.py``)."""
    found: dict[str, str | None] = {}
    for entry in os.listdir(folder):
        path = os.path.join(folder, entry)
        if entry.endswith(".py"):
            found[entry[:-3]] = path
        elif entry.endswith((".pyc", ".so", ".pyd")):
            found.setdefault(entry.split(".", 1)[0], None)
        elif "." not in entry and os.path.isdir(path):
            init = os.path.join(path, "__init__.py")
            found[entry] = init if os.path.isfile(init) else None
    return found


def _loaded_from(name: str, file: str | None) -> bool:
    """The server's module ``name`` is the very file ``file``: a fork that finds it there
    finds what a fresh start would."""
    loaded = getattr(sys.modules.get(name), "__file__", None)
    try:
        return bool(file and loaded) and os.path.samefile(file, loaded)
    except OSError:
        return False


def _plan(request: dict, base_path: list[str], preloaded: set[str]) -> tuple | str:
    """(how to run, its sys.path) for a request a fork runs as a fresh start would, else why
    the real interpreter runs it."""
    args, env, cwd = request["args"], request["env"], request["cwd"]
    settings = sorted(k for k in env if k.startswith("PYTHON") and k not in KEPT_SETTINGS)
    if settings:
        return f"set: {' '.join(settings)}"
    if args[:2] == ["-m", "pytest"]:
        first, run = cwd, ("module", "pytest", args[2:])
    else:
        script = os.path.join(cwd, args[0])
        if not script.endswith(".py") or not os.path.isfile(script) or os.path.islink(script):
            return "not a .py file (or a link to one)"
        first, run = os.path.dirname(os.path.abspath(script)), ("path", script, args[1:])
    extra = [os.path.normpath(os.path.join(cwd, p))
             for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    for folder in [first, *extra]:
        try:
            modules = _modules(folder)
        except OSError:
            continue
        shadowing = sorted(name for name, file in modules.items()
                           if name in preloaded and not _loaded_from(name, file))
        if shadowing:
            return f"{folder} holds {' '.join(shadowing)}"
    return run, [first, *extra, *base_path]


def _child(request: dict, fds: list[int], run: tuple, path: list[str],
           closing: list[int]) -> None:
    """In the fork: become the run the executable asked for, then exit with its status."""
    import atexit
    import importlib
    import io
    import runpy

    os.setpgid(0, 0)
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for fd in closing:
        os.close(fd)
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.dont_write_bytecode = bool(os.environ.get("PYTHONDONTWRITEBYTECODE"))
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.FileIO(0, "r", closefd=False),
                                                 encoding="utf-8")
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False), encoding="utf-8", line_buffering=os.isatty(1),
        write_through=unbuffered)
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.FileIO(2, "w", closefd=False), encoding="utf-8", errors="backslashreplace",
        line_buffering=True)
    # site imports sitecustomize (usercustomize where user sites are on) before the run's own
    # folder joins the path: the one PYTHONPATH holds, else the interpreter's own (Debian's).
    sys.path[:] = path[1:]
    for name in ["sitecustomize"] + (["usercustomize"] if site.ENABLE_USER_SITE else []):
        try:  # as site does: a missing one is no error, a failing one is said
            importlib.import_module(name)
        except ImportError:
            pass
        except Exception as exc:
            print(f"Error in {name}; set PYTHONVERBOSE for traceback:\n{type(exc).__name__}: "
                  f"{exc}", file=sys.stderr)
    sys.path[:] = path
    kind, target, rest = run
    code = 0
    try:
        if kind == "module":
            sys.argv = ["-m", *rest]
            runpy.run_module(target, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [request["args"][0], *rest]
            runpy.run_path(target, run_name="__main__")
    except SystemExit as stop:
        if stop.code is None:
            code = 0
        elif isinstance(stop.code, int):
            code = stop.code
        else:
            print(stop.code, file=sys.stderr)
            code = 1
    except BaseException as exc:
        # as an uncaught exception ends a fresh start: sys.excepthook's report, then status 1,
        # or for Ctrl-C death by SIGINT
        sys.excepthook(type(exc), exc, exc.__traceback__)
        code = -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF)


def serve(path: str, kind: str) -> None:
    """Import what ``kind`` names, listen on ``path`` and fork a child per request until the
    parent ends."""
    import gc
    import importlib

    # A fresh start imports the sitecustomize (usercustomize) on its own path: this one's is
    # forgotten, so that each fork imports its own (``_child``), not counted as shadowed.
    for name in ("sitecustomize", "usercustomize"):
        sys.modules.pop(name, None)
    for name in _preloads(kind):
        importlib.import_module(name)
    preloaded = {name.split(".", 1)[0] for name in sys.modules}
    # What the imports left is never garbage: out of the collector's sight a fork's collections
    # neither walk nor write to it (each page written is copied), half of a fork's CPU.
    gc.collect()
    gc.freeze()
    base_path = sys.path[1:]  # without this file's own folder
    parent = os.getppid()

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    listener.listen(64)
    os.rename(path + ".new", path)  # a client connects only once the server is ready
    wake_r, wake_w = socket.socketpair()
    wake_r.setblocking(False)
    wake_w.setblocking(False)
    signal.set_wakeup_fd(wake_w.fileno())
    signal.signal(signal.SIGCHLD, lambda *_: None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    sel.register(wake_r, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}   # pid: the executable's connection
    try:
        while os.getppid() == parent:
            for key, _ in sel.select(timeout=1.0):
                if key.fileobj is wake_r:
                    try:
                        wake_r.recv(4096)
                    except BlockingIOError:
                        pass
                elif key.fileobj is listener:
                    conn, _ = listener.accept()
                    _start(conn, children, sel, base_path, preloaded,
                           [listener.fileno(), wake_r.fileno(), wake_w.fileno()])
                else:
                    _relay(key.fileobj, children, sel)
            _reap(children, sel)
    finally:
        for pid in children:
            _kill(pid, signal.SIGKILL)
        try:
            os.unlink(path)
        except OSError:
            pass


def _start(conn: socket.socket, children: dict[int, socket.socket],
           sel: selectors.BaseSelector, base_path: list[str], preloaded: set[str],
           own: list[int]) -> None:
    """Take one request: fork its run, or tell the executable to start the real interpreter."""
    fds: list[int] = []
    try:
        request, fds = _receive(conn)
        planned = _plan(request, base_path, preloaded) if len(fds) == 3 else "no streams"
        if isinstance(planned, str):
            print(f"real interpreter ({planned}): {request['args'][:3]}", file=sys.stderr,
                  flush=True)
            conn.sendall(b"real\n")
            conn.close()
            return
        closing = own + [c.fileno() for c in children.values() if c.fileno() >= 0] + \
            [conn.fileno()]
        pid = os.fork()
        if pid == 0:
            try:
                _child(request, fds, *planned, closing)
            finally:
                os._exit(1)
        try:  # here too, as the child does: a kill right after the fork finds its group
            os.setpgid(pid, pid)
        except OSError:
            pass
        print(f"fork {pid}: {request['args'][:3]}", file=sys.stderr, flush=True)
        children[pid] = conn
        sel.register(conn, selectors.EVENT_READ)
        try:
            conn.sendall(b"started\n")
        except OSError:  # the executable is gone already: so is its run
            _kill(pid, signal.SIGKILL)
    except (OSError, EOFError, ValueError):
        conn.close()
    finally:
        for fd in fds:
            os.close(fd)


def _relay(conn: socket.socket, children: dict[int, socket.socket],
           sel: selectors.BaseSelector) -> None:
    """A signal the executable passes on, or its end (killed outright: end the run too)."""
    pid = next(p for p, c in children.items() if c is conn)
    try:
        data = conn.recv(256)
    except OSError:
        data = b""
    if not data:
        sel.unregister(conn)
        _kill(pid, signal.SIGKILL)
        return
    for line in data.split():
        if line.isdigit():
            _kill(pid, int(line))


def _reap(children: dict[int, socket.socket], sel: selectors.BaseSelector) -> None:
    """Send each ended run's status to its executable."""
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is None:
            continue
        try:
            sel.unregister(conn)
        except (KeyError, ValueError):
            pass
        try:
            conn.sendall(b"%d\n" % os.waitstatus_to_exitcode(status))
        except OSError:
            pass
        conn.close()


def _kill(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_serving: dict[str, list[str]] = {kind: [] for kind in KINDS}  # executables, by kind


def python(kind: str) -> str:
    """The interpreter a test starts a ``kind`` process with (a PyTorch run, an
    ``orchestrator.py`` call): the executable of this worker's server of that kind while
    there is one, else this interpreter."""
    return _serving[kind][-1] if _serving[kind] else sys.executable


@contextlib.contextmanager
def running(folder: str, kind: str) -> Iterator[str | None]:
    """A ``kind`` server for this interpreter while the block runs: the executable's path in
    ``folder``, or None where this interpreter cannot import what the server would (a torch
    server with no torch). The server imports in the background: until it listens the
    executable runs the real interpreter."""
    import importlib.util
    import subprocess

    if importlib.util.find_spec(KINDS[kind]) is None:
        yield None
        return
    sock = os.path.join(folder, "server.sock")
    if len(sock.encode()) > 100:  # a Unix socket's path is at most 107 bytes
        import warnings

        warnings.warn(f"tests/forkserver: {sock} is too long for a Unix socket: {kind} "
                      "processes start afresh (a shorter --basetemp mends it)", stacklevel=2)
        yield None
        return
    python = os.path.join(folder, "python")
    with open(python, "w", encoding="utf-8") as fh:
        fh.write(WRAPPER.format(real=sys.executable, sock=sock))
    os.chmod(python, 0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    with open(os.path.join(folder, "server.log"), "wb") as log:
        server = subprocess.Popen([sys.executable, __file__, sock, kind], env=env, cwd=folder,
                                  stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    _serving[kind].append(python)
    try:
        yield python
    finally:
        _serving[kind].remove(python)
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


if __name__ == "__main__":
    serve(*sys.argv[1:3])
