"""The fork servers the PyTorch runs and the orchestrator calls share (``tests.forkserver``):
a run started through its
executable ends as a fresh start would (exit status, streams, working directory, environment,
path, a signal), and what a fork could run differently goes to the real interpreter."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import forkserver
from tests.contract.driver import SCRIPT


def _listening(kind: str) -> tuple[str, Path]:
    """This worker's ``kind`` server (``tests/conftest.py`` starts it): its executable and its
    log, once it listens."""
    python = forkserver.python(kind)
    assert python != sys.executable, f"no {kind} fork server runs in this worker"
    folder = Path(python).parent
    deadline = time.monotonic() + 300
    while not (folder / "server.sock").exists():
        assert time.monotonic() < deadline, (folder / "server.log").read_text()
        time.sleep(0.1)
    return python, folder / "server.log"


@pytest.fixture
def server() -> tuple[str, Path]:
    """The torch server."""
    pytest.importorskip("torch")
    return _listening("torch")


@pytest.fixture
def orchestrator() -> tuple[str, Path]:
    """The orchestrator server."""
    return _listening("orchestrator")


def _script(tmp_path: Path, body: str) -> Path:
    """A script named after its test, so that the server's log tells its runs apart."""
    script = tmp_path / f"probe_{tmp_path.name}.py"
    script.write_text(body)
    return script


def _decisions(log: Path, script: Path) -> list[str]:
    """What the server decided for the runs of ``script``: "fork PID: ..." or "real
    interpreter (why): ..."."""
    return [line for line in log.read_text().splitlines() if script.name in line]


def test_a_script_runs_forked_with_its_arguments_folder_environment_and_status(
        server: tuple[str, Path], tmp_path: Path) -> None:
    python, log = server
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helper.py").write_text("VALUE = 'from PYTHONPATH'\n")
    script = _script(tmp_path, "import os, sys, helper, torch\n"
                               "print(sys.argv[1:], os.getcwd(), os.environ['PROBE'], helper.VALUE)\n"
                               "print(sys.path[0], file=sys.stderr)\n"
                               "sys.exit(int(sys.argv[1]))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    proc = subprocess.run([python, script.name, "7", "x y"], cwd=tmp_path, capture_output=True,
                          text=True, env={**env, "PROBE": "here", "PYTHONPATH": "lib"})
    assert (7, f"['7', 'x y'] {tmp_path} here from PYTHONPATH\n", f"{tmp_path}\n") == (
        proc.returncode, proc.stdout, proc.stderr)
    assert ["fork"] == [line.split()[0] for line in _decisions(log, script)]


def test_pytest_runs_forked_and_its_failures_count(server: tuple[str, Path], tmp_path: Path) -> None:
    python, log = server
    tests = tmp_path / f"test_{tmp_path.name}.py"
    tests.write_text("def test_ok():\n    pass\n\ndef test_bad():\n    assert 1 == 2\n")
    proc = subprocess.run([python, "-m", "pytest", tests.name, "-q", "-p", "no:cacheprovider",
                           "-o", "addopts="], cwd=tmp_path, capture_output=True, text=True)
    assert (1, True) == (proc.returncode, "1 failed, 1 passed" in proc.stdout), proc.stdout
    assert ["fork"] == [line.split()[0] for line in _decisions(log, tests)]


def test_an_uncaught_exception_and_a_signal_end_the_run_as_they_would(
        server: tuple[str, Path], tmp_path: Path) -> None:
    python, _ = server
    raised = subprocess.run([python, _script(tmp_path, "raise ValueError('no')\n").name],
                            cwd=tmp_path, capture_output=True, text=True)
    assert (1, True) == (raised.returncode, "ValueError: no" in raised.stderr)

    started = tmp_path / "started"
    script = _script(tmp_path, f"import time\nopen({str(started)!r}, 'w').close()\n"
                               "time.sleep(600)\n")
    for sig in (signal.SIGTERM, signal.SIGINT):  # SIGINT: KeyboardInterrupt, then its death
        started.unlink(missing_ok=True)
        run = subprocess.Popen([python, script.name], cwd=tmp_path, stderr=subprocess.PIPE,
                               text=True)
        deadline = time.monotonic() + 120
        while not started.exists():
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.05)
        run.send_signal(sig)
        assert -sig == run.wait(timeout=120), run.stderr.read()
        assert (sig == signal.SIGINT) == ("KeyboardInterrupt" in run.stderr.read())

    # A run that kills itself outright (the contract tests' crash hook does) ends its
    # executable by the same signal, though no handler can be set for it.
    suicide = _script(tmp_path, "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    killed = subprocess.run([python, suicide.name], cwd=tmp_path, capture_output=True, text=True)
    assert (-signal.SIGKILL, "") == (killed.returncode, killed.stderr)


def test_an_executable_killed_outright_ends_its_fork(server: tuple[str, Path],
                                                     tmp_path: Path) -> None:
    python, _ = server
    pidfile = tmp_path / "pid"
    script = _script(tmp_path, f"import os, time\nopen({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
                               "time.sleep(600)\n")
    run = subprocess.Popen([python, script.name], cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline and run.poll() is None
        time.sleep(0.05)
    fork = int(pidfile.read_text())
    assert fork != run.pid
    run.kill()
    run.wait()
    while Path(f"/proc/{fork}").exists() and "Z" not in _state(fork):
        assert time.monotonic() < deadline, "the fork outlived its executable"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


@pytest.mark.parametrize("case", ["option", "setting", "shadow"])
def test_what_a_fork_could_run_differently_goes_to_the_real_interpreter(
        server: tuple[str, Path], tmp_path: Path, case: str) -> None:
    """``-c``, a PYTHON* setting the fork would not honour, and a module of the server's
    shadowed in the run's folder (a PyTorch source checkout's ``torch/``) start for real."""
    python, log = server
    script = _script(tmp_path, "import os, sys, torch\nprint(os.getpid(), torch.__file__)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    argv, extra = [python, script.name], {}
    if case == "option":
        # named after the script as well, so that a run of it the server took would be
        # found in its log below
        argv = [python, "-c", f"# {script.name}\n{script.read_text()}"]
    elif case == "setting":
        extra = {"PYTHONHASHSEED": "3"}
    else:
        (tmp_path / "torch").mkdir()
        (tmp_path / "torch" / "__init__.py").write_text("__file__ = 'the checkout'\n")
    proc = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True,
                          env={**env, **extra})
    assert 0 == proc.returncode, proc.stderr
    assert ("the checkout" in proc.stdout) == (case == "shadow")
    # -c never reaches the server; the others are sent back to the real interpreter
    assert ([] if case == "option" else ["real"]) == [
        line.split()[0] for line in _decisions(log, script)]


def test_an_orchestrator_call_forks_and_answers_as_a_fresh_start(
        orchestrator: tuple[str, Path], tmp_path: Path) -> None:
    """The orchestrator.py of this checkout: its folder's ``flow/`` and ``workspace/`` are the
    modules the server imported, so the calls fork; each prints and exits as a fresh one."""
    python, log = orchestrator
    ws = str(tmp_path / "ws")
    for argv in (["status"], ["--flow", "no/such", "--resume"], ["schema", "nope"], ["schema"]):
        fresh, forked = (subprocess.run([interpreter, str(SCRIPT), "--workspace", ws, *argv],
                                        capture_output=True, text=True, cwd=tmp_path)
                         for interpreter in (sys.executable, python))
        assert (fresh.returncode, fresh.stdout, fresh.stderr) == (
            forked.returncode, forked.stdout, forked.stderr), argv
    assert ["fork"] * 4 == [line.split()[0] for line in log.read_text().splitlines()
                            if ws in line]


def test_an_orchestrator_fork_holds_the_modules_but_the_store_connection(
        orchestrator: tuple[str, Path], tmp_path: Path) -> None:
    """A fork starts with the orchestrator's modules imported, bar ``workspace.pgconn``
    (``orchestrator._exit`` closes its connections where a call imported it); another copy of
    ``flow`` in the run's folder (a copied checkout's) starts the real interpreter."""
    python, log = orchestrator
    script = _script(tmp_path, "import sys\nprint(sorted(m for m in ('flow.core.state', "
                               "'flow.workflows.refactor.declaration', 'workspace.pgconn', "
                               "'pydantic') if m in sys.modules))\n")
    forked = subprocess.run([python, script.name], cwd=tmp_path, capture_output=True, text=True)
    assert (0, "['flow.core.state', 'flow.workflows.refactor.declaration', 'pydantic']\n") == (
        forked.returncode, forked.stdout), forked.stderr
    (tmp_path / "flow").mkdir()
    (tmp_path / "flow" / "__init__.py").write_text("")
    copied = subprocess.run([python, script.name], cwd=tmp_path, capture_output=True, text=True)
    assert (0, "[]\n") == (copied.returncode, copied.stdout), copied.stderr
    assert ["fork", "real"] == [line.split()[0] for line in _decisions(log, script)]
    assert "holds flow" in _decisions(log, script)[1]


def test_a_fork_imports_the_sitecustomize_a_fresh_start_would(
        orchestrator: tuple[str, Path], tmp_path: Path) -> None:
    """The one on PYTHONPATH (the contract tests' crash hook) where there is one, else the
    interpreter's own (Debian's) or none: the server imported none, each fork imports its own."""
    python, log = orchestrator
    script = _script(tmp_path, "import sys\n"
                               "print(getattr(sys.modules.get('sitecustomize'), '__file__', None))\n")
    (tmp_path / "hook").mkdir()
    (tmp_path / "hook" / "sitecustomize.py").write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    for extra in ({}, {"PYTHONPATH": "hook"}):
        fresh, forked = (subprocess.run([interpreter, script.name], cwd=tmp_path, text=True,
                                        capture_output=True, env={**env, **extra})
                         for interpreter in (sys.executable, python))
        assert (0, fresh.stdout) == (forked.returncode, forked.stdout), forked.stderr
    assert f"{tmp_path}/hook/sitecustomize.py\n" == forked.stdout
    assert ["fork", "fork"] == [line.split()[0] for line in _decisions(log, script)]
