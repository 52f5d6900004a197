"""The one process runner (flow/core/proc.py): decoding, process groups, caps, secrets, stdin."""

from __future__ import annotations

import ast
import os
import sys
import time
from pathlib import Path

import pytest

from flow.core import proc
from tests.proc import gone

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = [ROOT / "orchestrator.py", *(p for d in ("flow", "workspace", "agents", "reference")
                                        for p in (ROOT / d).rglob("*.py"))]


def test_only_the_runner_imports_subprocess() -> None:
    """One shipped module imports subprocess: every child goes through flow/core/proc.py,
    which starts it with flow/core/supervisor.py (a run, a query, a job's supervisor)."""
    offenders = []
    for path in SHIPPED:
        tree = ast.parse(path.read_bytes())
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n.split(".")[0] == "subprocess" for n in names):
                offenders.append(str(path.relative_to(ROOT)))
    assert ["flow/core/supervisor.py"] == sorted(set(offenders))


def test_non_utf8_output_is_kept_and_read_with_replacement(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 never raise: the log keeps them, output replaces them."""
    res = proc.run([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'caf\\xe9\\n');"
                    " sys.exit(1)"], log=tmp_path / "l.log")
    assert (1, "caf\ufffd\n") == (res.code, res.output)
    assert b"caf\xe9\n" in (tmp_path / "l.log").read_bytes()


def test_a_child_left_holding_stdout_neither_blocks_nor_survives(tmp_path: Path) -> None:
    """`sleep 45 &` left behind by a failing command ends with it, and the call returns."""
    pidfile = tmp_path / "pid"
    started = time.monotonic()
    res = proc.run(["bash", "-c", f"sleep 45 & echo $! > {pidfile}; echo failing; exit 1"],
                   log=tmp_path / "l.log", timeout=30)
    assert (1, "failing\n") == (res.code, res.output)
    assert time.monotonic() - started < 10
    assert gone(pidfile.read_text())


def test_a_timeout_ends_the_whole_group_and_says_so(tmp_path: Path) -> None:
    """A hang is cut at its timeout: exit 124, timed_out, the reason in the output, and the
    grandchild it started is gone too."""
    pidfile = tmp_path / "pid"
    res = proc.run(["bash", "-c", f"sleep 60 & echo $! > {pidfile}; echo waiting; wait"],
                   log=tmp_path / "l.log", timeout=1)
    assert (124, True) == (res.code, res.timed_out)
    assert "waiting" in res.output and "timed out after 1 s" in res.output
    assert gone(pidfile.read_text())


def test_the_timeout_is_capped_by_the_foreground_budget(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """No foreground run outlives ORCHESTRATOR_FOREGROUND_S, whatever timeout it asked for."""
    monkeypatch.setenv(proc.FOREGROUND_ENV, "1")
    monkeypatch.setattr(proc, "_call_started", time.monotonic())  # as begin_call, undone after
    res = proc.run(["sleep", "30"], log=tmp_path / "l.log", timeout=600)
    assert res.timed_out and res.duration_s < 10


def test_output_is_capped_head_and_tail_with_the_cut_marked(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    """A flood keeps the first and the last bytes and says how much was cut."""
    monkeypatch.setenv(proc.CAP_ENV, "2000")
    res = proc.run([sys.executable, "-c", "print('FIRST'); print('x' * 100000); print('LAST')"],
                   log=tmp_path / "l.log")
    text = res.output
    assert text.startswith("FIRST") and text.rstrip().endswith("LAST")
    assert res.cut_bytes > 90000 and f"{res.cut_bytes} bytes of output cut" in text
    assert (tmp_path / "l.log").stat().st_size < 3000


def test_secrets_never_reach_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tokens, secrets and passwords are scrubbed from the child's environment by default;
    a name in ORCHESTRATOR_PASS_ENV is let through, a pattern in ORCHESTRATOR_SECRET_ENV kept out."""
    env = {"PATH": os.environ["PATH"], "GITHUB_TOKEN": "sentinel-1", "GH_TOKEN": "sentinel-2",
           "npm_token_x": "sentinel-3", "DB_PASSWORD": "sentinel-4", "AWS_SECRET_KEY": "s-5",
           "PLAIN": "visible", "HF_AUTH": "s-6", "NEEDED_TOKEN": "passed"}
    monkeypatch.setenv(proc.SECRETS_ENV, "HF_*")
    monkeypatch.setenv(proc.PASS_ENV, "NEEDED_TOKEN")
    # NAME<TAB>value, not `env`'s NAME=value: a log masks a secret name's `=value` by its shape
    res = proc.run([sys.executable, "-c", "import os\nfor k, v in os.environ.items(): "
                    "print(k, v, sep='\\t')"], log=tmp_path / "l.log", env=env)
    seen = dict(line.split("\t", 1) for line in res.output.splitlines() if "\t" in line)
    assert {"PLAIN": "visible", "NEEDED_TOKEN": "passed"} == {
        k: v for k, v in seen.items() if k in env and k != "PATH"}


def test_a_secret_let_through_is_masked_in_the_log_even_split_across_reads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A secret the child was let see (ORCHESTRATOR_PASS_ENV) and prints in two writes far
    apart is written to the log as ***; the bytes around it are kept."""
    value = "pa55-word-0123456789"
    monkeypatch.setenv(proc.PASS_ENV, "DEPLOY_TOKEN")
    script = ("import os, sys, time\n"
              "v = os.environ['DEPLOY_TOKEN']\n"
              "sys.stdout.write('before ' + v[:7]); sys.stdout.flush(); time.sleep(0.3)\n"
              "sys.stdout.write(v[7:] + ' after\\n'); sys.stdout.flush()\n")
    res = proc.run([sys.executable, "-c", script], log=tmp_path / "l.log",
                   env={**os.environ, "DEPLOY_TOKEN": value})
    raw = (tmp_path / "l.log").read_bytes()
    assert (0, False, True) == (res.code, value.encode() in raw, b"before *** after" in raw)


def test_the_log_masks_each_secret_however_the_bytes_arrive(tmp_path: Path) -> None:
    """One byte per write, two secrets (one inside the other's reach), non-UTF-8 around."""
    log = proc.CappedLog(tmp_path / "l.log", 1 << 20, b"", mask=[b"s3cret-one", b"another-secret"])
    for byte in b"\xff s3cret-one, another-secret; s3cret-on\n":
        log.write(bytes([byte]))
    log.close()
    assert b"\xff ***, ***; s3cret-on\n" == (tmp_path / "l.log").read_bytes()


def test_stdin_is_dev_null_unless_text_is_given(tmp_path: Path) -> None:
    """A child that reads stdin gets end-of-file at once, or exactly the text given."""
    assert "EOF\n" == proc.run(["bash", "-c", "read x || echo EOF"], log=tmp_path / "a.log").output
    assert "got hi\n" == proc.run(["bash", "-c", "read x; echo got $x"], log=tmp_path / "b.log",
                                  stdin="hi\n").output


def test_a_missing_program_is_127_with_the_reason(tmp_path: Path) -> None:
    """A program that cannot be started is exit 127 with why, never an exception."""
    res = proc.run(["/no/such/program"], log=tmp_path / "l.log")
    assert 127 == res.code and "cannot be started" in res.output


def test_the_log_names_the_command_and_its_folder(tmp_path: Path) -> None:
    """The log opens with `$ argv` (shell-quoted) and the cwd; output excludes that header."""
    res = proc.run(["echo", "a b"], log=tmp_path / "l.log", cwd=tmp_path)
    assert (tmp_path / "l.log").read_text().startswith(f"$ echo 'a b'\n(cwd {tmp_path})\n")
    assert "a b\n" == res.output


def test_tools_run_through_their_interpreter_not_a_shebang(tmp_path: Path) -> None:
    """`tool` spells `python -m module`, which works from a venv whose path has a space."""
    venv = tmp_path / "ws space" / "v env"
    res = proc.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], log=tmp_path / "v.log",
                   timeout=120)
    assert res.ok, res.output
    ran = proc.run(proc.tool(str(venv / "bin" / "python"), "json.tool", "--help"),
                   log=tmp_path / "t.log")
    assert 0 == ran.code and "json" in ran.output


def test_a_bad_foreground_budget_is_a_usage_error(tmp_path: Path) -> None:
    """ORCHESTRATOR_FOREGROUND_S that is not a positive number is refused with a hint (exit 2)."""
    from tests.contract.driver import Driver

    call = Driver(tmp_path, {proc.FOREGROUND_ENV: "ninety"}).call(["status", "--json"])
    assert call.spec is not None
    assert (2, "usage") == (call.code, call.spec["error"]["code"])
    assert "ninety" in call.spec["error"]["message"] and call.spec["error"]["hint"]


def test_a_child_that_daemonizes_is_ended_with_the_run_and_named(tmp_path: Path) -> None:
    """A child that forks, calls setsid and forks again (leaving the process group) is found
    by its environment mark when the run ends, killed, and the result's reason says so."""
    pid_file = tmp_path / "daemon.pid"
    script = ("import os, time, sys\n"
              "if os.fork() == 0:\n"
              "    os.setsid()\n"
              "    if os.fork() == 0:\n"
              f"        open({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
              "        time.sleep(60)\n"
              "    os._exit(0)\n"
              "time.sleep(0.5)\n")
    res = proc.run([sys.executable, "-c", script], log=tmp_path / "l.log", timeout=30)
    daemon = pid_file.read_text()
    assert (0, True, True) == (res.code, gone(daemon), f"pids {daemon}" in res.reason)
    assert "left the run's process group" in (tmp_path / "l.log").read_text()
