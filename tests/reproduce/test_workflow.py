"""The reproduce workflow end to end through the CLI (tests.contract.driver.Driver):
real pytest runs on copies of examples/calc, a real venv build fed back as a run task,
Stage 3 against the fake GitHub server, and the batch sweep resumed after a SIGKILL."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import CRASH_HOOK, Driver
from tests.fakegithub import FakeGitHub
from tests.reproduce.conftest import REPO

FAILING = "pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"
PASSING = "pytest tests/test_calc.py::test_add"
EXTRA_TESTS = '''
import os
import pytest


def skipIfXpu(fn):
    return pytest.mark.skip(reason="skipIfXpu: hides a bug on XPU")(fn)


@skipIfXpu
def test_hidden():
    assert 1 == 2


@pytest.mark.skipif(True, reason="needs a GPU")
def test_needs_gpu():
    assert 1 == 2


@pytest.mark.skip(reason="hides a regression")
def test_skip_hidden():
    assert 1 == 2


def test_ci_strict():
    assert os.environ.get("CALC_STRICT") != "1"


def test_not_in_the_built_venv():
    import sys
    assert "/build/venv/" not in sys.executable
'''


@pytest.fixture
def calc(tmp_path: Path) -> Path:
    """A copy of examples/calc with extra tests (an XPU-marker skip, an environmental skip,
    a test that fails only under the CI job's env, one that fails only in the Stage 2
    venv) and a test file with no tests."""
    src = Path(shutil.copytree(REPO / "examples" / "calc", tmp_path / "calc"))
    (src / "tests" / "test_extra.py").write_text(EXTRA_TESTS)
    (src / "tests" / "test_empty.py").write_text("X = 1\n")
    return src


def _start(drv: Driver, src: Path | str, command: str | None, *extra: str) -> dict[str, Any]:
    argv = ["reproduce", "--profile", "local", "--source-dir", str(src), *extra]
    argv += ["--command", command] if command is not None else []
    call = drv.call(argv)
    assert call.spec is not None, call.stderr
    return call.spec


def _verdict(spec: dict[str, Any], keys: tuple[str, ...] = ("verdict", "stage")) -> tuple[str, Any]:
    """(status, the verdict's ``keys`` it has)."""
    v = spec.get("verdict") or {}
    return spec["status"], {k: v[k] for k in keys if k in v}


def test_readme_command_reproduces(tmp_path: Path) -> None:
    """The README's first command ends done/REPRODUCED, and its refined command fails again."""
    drv = Driver(tmp_path / "ws")
    spec = _start(drv, "examples/calc", FAILING)
    assert ("done", {"verdict": "REPRODUCED", "stage": "nightly"}) == _verdict(spec)
    rerun = subprocess.run(["bash", "-c", spec["verdict"]["refined_command"]], capture_output=True,
                           text=True, env=drv.env)
    assert (1, True) == (rerun.returncode, "1 failed" in rerun.stdout)


@pytest.mark.parametrize("command, extra, expected", [
    (PASSING, ["--stage", "nightly"],
     {"verdict": "NOT_REPRODUCED", "checked_stages": ["nightly"]}),
    ("", [], {"verdict": "NO_REPRODUCER", "reason": "no_command"}),
    ("pytest tests/test_empty.py", [], {"verdict": "NO_REPRODUCER", "reason": "collected_zero"}),
    ("pytest tests/test_extra.py::test_needs_gpu", [],
     {"verdict": "CANNOT_VERIFY", "stage": "nightly"}),
    ('python -c "import no_such_module_here"', [], {"verdict": "CANNOT_VERIFY", "stage": "nightly"}),
    ("git -C /nonexistent/dir status\npython -c \"raise SystemExit(3)\"", [],
     {"verdict": "CANNOT_VERIFY", "stage": "nightly"}),
    ('python -c "raise ValueError(42)"', ["--failure-pattern", "ValueError: 42"],
     {"verdict": "REPRODUCED", "stage": "nightly"}),
], ids=["nightly-pass", "no-command", "collected-zero", "env-skip", "missing-dep", "setup-fails",
        "python-c-pattern"])
def test_stage1_verdicts(calc: Path, tmp_path: Path, command: str, extra: list[str],
                         expected: dict[str, Any]) -> None:
    """Each Stage 1 / preflight row of the seed ends in its verdict in one call."""
    spec = _start(Driver(tmp_path / "ws"), calc, command, *extra)
    assert ("done", expected) == _verdict(spec, tuple(expected))


def test_xpu_skip_marker_is_removed_rerun_and_restored(calc: Path, tmp_path: Path) -> None:
    """All skipped by @skipIfXpu: the marker is removed, the re-run fails (REPRODUCED) and
    the test file is byte-for-byte restored."""
    before = (calc / "tests" / "test_extra.py").read_bytes()
    spec = _start(Driver(tmp_path / "ws"), calc, "pytest tests/test_extra.py::test_hidden")
    assert (("done", {"verdict": "REPRODUCED", "stage": "nightly"}), before) == (
        _verdict(spec), (calc / "tests" / "test_extra.py").read_bytes())


def _writes_to(trace: Path, which: Callable[[str], bool]) -> list[int]:
    """The points (counted atomic writes, see tests/crashhook) of a traced run whose
    destination ``which`` accepts."""
    rows = (line.split("\t", 1) for line in trace.read_text().splitlines())
    return [int(n) for n, dst in rows if which(dst)]


@pytest.mark.slow
def test_skip_marker_restored_after_kill_mid_rerun(calc: Path, tmp_path: Path) -> None:
    """A SIGKILL at every write from the save before the marker's removal to the save after
    its restore, then --resume: the file always ends restored and the verdict is the same (the
    pending restore was saved before the edit). Writes outside that window are the engine's,
    killed in the contract suite."""
    target = calc / "tests" / "test_extra.py"
    before = target.read_bytes()
    command = "pytest tests/test_extra.py::test_hidden"
    trace = tmp_path / "trace"
    Driver(tmp_path / "count-ws", {"PYTHONPATH": str(CRASH_HOOK), "ORCHESTRATOR_TEST_CRASH_AT": "999999",
                                   "ORCHESTRATOR_TEST_CRASH_COUNTER": str(tmp_path / "count"),
                                   "ORCHESTRATOR_TEST_CRASH_TRACE": str(trace)}).call(
        ["reproduce", "--profile", "local", "--source-dir", str(calc), "--command", command])
    edits = _writes_to(trace, lambda dst: dst == str(target))
    assert 2 == len(edits)  # the marker removed, then the file restored
    left_edited = 0
    for n in range(edits[0] - 1, edits[-1] + 2):
        env = {"PYTHONPATH": str(CRASH_HOOK), "ORCHESTRATOR_TEST_CRASH_AT": str(n),
               "ORCHESTRATOR_TEST_CRASH_COUNTER": str(tmp_path / f"c{n}"),
               "ORCHESTRATOR_TEST_CRASH_WHEN": "after"}
        drv = Driver(tmp_path / f"ws{n}", env)
        first = drv.call(["reproduce", "--profile", "local", "--source-dir", str(calc),
                          "--command", command])
        assert first.code in (-9, 137), f"point {n} did not kill"
        left_edited += target.read_bytes() != before
        again = drv.call(["reproduce", "--profile", "local", "--source-dir", str(calc),
                          "--command", command])
        assert (("done", {"verdict": "REPRODUCED", "stage": "nightly"}), before) == (
            _verdict(again.spec), target.read_bytes()), f"point {n}"
    assert left_edited >= 1  # some kill really hit between the edit and the restore


def _feed_run(drv: Driver, spec: dict[str, Any], exit_code: int | None = None) -> dict[str, Any]:
    """Act as the harness for a run task: run it (or pretend it exited ``exit_code``), feed."""
    assert "need_agent" == spec["status"], spec
    task = spec["tasks"][0]
    if exit_code is None:
        proc = subprocess.run(task["command"], shell=True, capture_output=True, text=True,
                              env=drv.env)
        Path(task["log_file"]).write_text(proc.stdout + proc.stderr)
        exit_code = proc.returncode
    Path(task["feed_file"]).write_text(json.dumps({"exit_code": exit_code,
                                                   "log_path": task["log_file"]}))
    call = drv.shell(task["feed_command"])
    assert call.spec is not None, call.stderr
    return call.spec


def test_stage2_builds_fail_then_fallback_fails(calc: Path, tmp_path: Path) -> None:
    """Both builds failing (origin/main, then the one ci_commit fallback) is the seed's
    CANNOT_VERIFY(trunk and ci_commit both fail to build)."""
    drv = Driver(tmp_path / "ws")
    spec = _start(drv, calc, PASSING, "--ci-commit", "a" * 40)
    spec = _feed_run(drv, spec, exit_code=1)
    assert "--commit" in spec["tasks"][0]["argv"]
    spec = _feed_run(drv, spec, exit_code=1)
    assert ("done", "trunk and ci_commit both fail to build") == (
        spec["status"], spec["verdict"]["blocker"])


def _wheel_of(calc: Path, tmp_path: Path) -> bytes:
    out = tmp_path / "wheelhouse"
    # The interpreter running the tests: any virtual environment works, none is assumed.
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-w",
                    str(out), str(calc)], check=True, capture_output=True)
    return next(out.glob("*.whl")).read_bytes()


@pytest.mark.parametrize("command, log, runs, expected", [
    ("pytest tests/test_extra.py::test_ci_strict", "env:\n  CALC_STRICT: 1\n  OTHER: x\n", "wheel",
     {"verdict": "REPRODUCED", "stage": "ci_env"}),
    (PASSING, "", "wheel", {"verdict": "NOT_REPRODUCED",
                            "checked_stages": ["nightly", "source_build", "ci_env"]}),
    (PASSING, "", "none", {"verdict": "CANNOT_VERIFY", "stage": "ci_env"}),
    (PASSING, "", "nowheel", {"verdict": "CANNOT_VERIFY", "stage": "ci_env"}),
], ids=["env-fold-reproduces", "passes-everywhere", "no-run", "no-wheel"])
@pytest.mark.slow
def test_stage3_against_fake_github(calc: Path, tmp_path: Path, fake_github: FakeGitHub,
                                    command: str, log: str, runs: str,
                                    expected: dict[str, Any]) -> None:
    """Stage 2 runs as a fed-back run task, Stage 3 looks up the fake GitHub's runs: when the
    reproducer passes as written, the CI job log's env is folded in and it runs again (and
    into refined_command); no run / no wheel are the seed's blockers."""
    repo = fake_github.repo("acme/calc")
    if runs != "none":
        run = repo.add_run(repo.add_workflow("ci", ".github/workflows/ci.yml"), "c" * 40,
                           head_branch="main", jobs=[])
        repo.add_job(run, "test", "success", log=log)
        files = {"dist/calc-0.1.0-py3-none-any.whl": _wheel_of(calc, tmp_path)} \
            if runs == "wheel" else {"README.txt": b"no wheel"}
        run.add_artifact("calc-wheel-1", files)
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_GITHUB_API": fake_github.base_url,
                                   "GITHUB_TOKEN": fake_github.token})
    spec = _feed_run(drv, _start(drv, calc, command, "--ci-repo", "acme/calc"))
    assert ("done", expected) == _verdict(spec, tuple(expected))
    if expected["verdict"] == "REPRODUCED":  # passes as written: folded only on the re-run
        assert (True, True) == ("CALC_STRICT=1" in spec["verdict"]["refined_command"],
                                any("passes as written" in n for n in spec["report"]["notes"]))
    if runs == "none":
        assert "no_recent_successful_torch-xpu-ops_run" == spec["verdict"]["blocker"]
    if runs == "nowheel":
        assert "no_wheel_in_artifact" == spec["verdict"]["blocker"]


@pytest.mark.slow
def test_batch_resumes_at_the_entry_it_was_on(calc: Path, tmp_path: Path) -> None:
    """A batch killed at every write while its middle entry is on (from the first write after
    the entry before it finished to the last before the next one's ends) resumes there:
    finished entries are not run again, and the report has every bucket."""
    marks = tmp_path / "marks"
    batch = tmp_path / "batch.json"
    entries = [
        {"id": "fails", "command": f"pytest {calc}/tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"},
        {"id": "slow", "command": f"python -c \"open('{marks}', 'a').write('x'); raise SystemExit(1)\"",
         "failure_pattern": "nothing-like-this"},
        {"id": "fixed", "command": f"pytest {calc}/tests/test_calc.py::test_add", "stage": "nightly"},
        {"id": "bad"},
    ]
    batch.write_text(json.dumps(entries))
    clean = Driver(tmp_path / "clean").call(["reproduce", "--profile", "local", "--batch", str(batch)])
    assert "done" == clean.spec["status"], clean.stderr
    expected = {"still_failing": 1, "already_fixed": 1, "invalid_entry": 1, "unverified": 1}
    marks.unlink()
    # Kill right after the saved transition that follows entry "slow" was run once.
    counter = tmp_path / "count"
    env = {"PYTHONPATH": str(CRASH_HOOK), "ORCHESTRATOR_TEST_CRASH_COUNTER": str(counter),
           "ORCHESTRATOR_TEST_CRASH_AT": "999999"}
    trace = tmp_path / "trace"
    Driver(tmp_path / "count-ws", {**env, "ORCHESTRATOR_TEST_CRASH_TRACE": str(trace)}).call(
        ["reproduce", "--profile", "local", "--batch", str(batch)])
    marks.unlink()
    [fails] = _writes_to(trace, lambda dst: "-fails_" in Path(dst).name)  # its job's result
    [fixed] = _writes_to(trace, lambda dst: "-fixed_" in Path(dst).name)
    resumed_ok = []
    for n in range(fails + 1, fixed):
        drv = Driver(tmp_path / f"ws{n}", {**env, "ORCHESTRATOR_TEST_CRASH_AT": str(n),
                                           "ORCHESTRATOR_TEST_CRASH_COUNTER": str(tmp_path / f"c{n}")})
        first = drv.call(["reproduce", "--profile", "local", "--batch", str(batch)])
        ran_before = len(marks.read_text()) if marks.exists() else 0
        again = drv.call(["reproduce", "--profile", "local", "--batch", str(batch)])
        assert (first.code in (-9, 137), "done", expected) == (
            True, again.spec["status"], again.spec["counts"]), f"point {n}"
        ran = len(marks.read_text())
        marks.unlink()
        resumed_ok.append((ran_before, ran))
    # The reproducer run is a background job recorded in the state: wherever the kill
    # falls (before its row was saved or after), the resumed flow never runs it again.
    assert {1} == {ran for _, ran in resumed_ok}
    assert expected == clean.spec["counts"]


def _ci_repo_with_wheel(fake_github: FakeGitHub, calc: Path, tmp_path: Path, log: str,
                        name: str = "acme/calc", wheel: bytes | None = None) -> bytes:
    """``name`` (acme/calc) on the fake GitHub: one successful run with a job log and a calc
    wheel (``wheel``, or one built now); returns the wheel."""
    wheel = wheel or _wheel_of(calc, tmp_path)
    repo = fake_github.repo(name)
    run = repo.add_run(repo.add_workflow("ci", ".github/workflows/ci.yml"), "c" * 40,
                       head_branch="main", jobs=[])
    repo.add_job(run, "test", "success", log=log)
    run.add_artifact("calc-wheel-1", {"dist/calc-0.1.0-py3-none-any.whl": wheel})
    return wheel


def _feed_until_done(drv: Driver, spec: dict[str, Any], ran: list[list[str]] | None = None,
                     resume: list[str] | None = None) -> dict[str, Any]:
    """Run and feed every build task until the flow is done (each task's argv is appended
    to ``ran``); the build sees no crash hook."""
    clean_env = {k: v for k, v in drv.env.items() if not k.startswith("ORCHESTRATOR_TEST_CRASH")}
    while spec["status"] in {"need_agent", "waiting"}:  # waiting: handed out before a kill
        task = spec["tasks"][0]
        if ran is not None:
            ran.append(task["argv"])
        proc = subprocess.run(task["command"], shell=True, capture_output=True, text=True,
                              env=clean_env)
        Path(task["log_file"]).write_text(proc.stdout + proc.stderr)
        Path(task["feed_file"]).write_text(json.dumps({"exit_code": proc.returncode,
                                                       "log_path": task["log_file"]}))
        call = drv.shell(task["feed_command"])
        if call.spec is None and call.code in (-9, 137) and resume is not None:
            call = drv.call(resume)  # killed by the crash hook: resume as a harness would
        assert call.spec is not None, call.stderr
        spec = call.spec
    return spec


def _rows(spec: dict[str, Any]) -> dict[str, tuple[str, str, Any]]:
    """{id: (bucket, verdict, stage or checked_stages)} from the batch's report.json."""
    rows = json.loads(Path(spec["report_json_path"]).read_text())["rows"]
    return {r["id"]: (r["bucket"], (r["verdict"] or {}).get("verdict"),
                      (r["verdict"] or {}).get("stage", (r["verdict"] or {}).get("checked_stages")))
            for r in rows}


@pytest.mark.slow
def test_batch_auto_entries_go_through_one_build_and_one_ci_env_per_ci_repository(
        calc: Path, tmp_path: Path, fake_github: FakeGitHub) -> None:
    """Auto entries passing Stage 1 share ONE source build and ONE CI alignment per CI
    repository they name, each re-run to its verdict; a nightly entry ends at Stage 1. The
    entry naming acme/calc-lax (whose CI job sets no CALC_STRICT) is judged in that CI's
    environment, not in the batch's acme/calc one the entries before it were; the first
    group's CI (acme/no-such-ci) cannot be found, which decides that entry alone."""
    wheel = _ci_repo_with_wheel(fake_github, calc, tmp_path, "env:\n  CALC_STRICT: 1\n")
    _ci_repo_with_wheel(fake_github, calc, tmp_path, "", name="acme/calc-lax", wheel=wheel)
    tests = f"{calc}/tests"
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "stage1", "command": f"pytest {tests}/test_calc.py::test_mean_of_ints_keeps_the_fraction"},
        {"id": "nowhere", "command": f"pytest {tests}/test_calc.py::test_add",
         "ci_repo": "acme/no-such-ci"},
        {"id": "everywhere", "command": f"pytest {tests}/test_calc.py::test_add"},
        {"id": "built", "command": f"pytest {tests}/test_extra.py::test_not_in_the_built_venv"},
        {"id": "ci", "command": f"pytest {tests}/test_extra.py::test_ci_strict"},
        {"id": "lax", "command": f"pytest {tests}/test_extra.py::test_ci_strict",
         "ci_repo": "acme/calc-lax"},
        {"id": "nightly", "command": f"pytest {tests}/test_calc.py::test_add", "stage": "nightly"},
    ]))
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_GITHUB_API": fake_github.base_url,
                                   "GITHUB_TOKEN": fake_github.token})
    first = drv.call(["reproduce", "--profile", "local", "--source-dir", str(calc),
                      "--ci-repo", "acme/calc", "--batch", str(batch)])
    assert first.spec is not None, first.stderr
    ran: list[list[str]] = []
    spec = _feed_until_done(drv, first.spec, ran)
    assert ([["--source", str(calc)]], "done", {
        "stage1": ("still_failing", "REPRODUCED", "nightly"),
        "nowhere": ("unverified", "CANNOT_VERIFY", "ci_env"),
        "everywhere": ("already_fixed", "NOT_REPRODUCED", ["nightly", "source_build", "ci_env"]),
        "built": ("still_failing", "REPRODUCED", "source_build"),
        "ci": ("still_failing", "REPRODUCED", "ci_env"),
        "lax": ("already_fixed", "NOT_REPRODUCED", ["nightly", "source_build", "ci_env"]),
        "nightly": ("already_fixed", "NOT_REPRODUCED", ["nightly"]),
    }) == ([argv[argv.index("--source"):][:2] for argv in ran], spec["status"], _rows(spec))
    state = json.loads((Path(spec["workspace"]) / "flow_state.json").read_text())
    runs = [n for n in state["data"]["notes"] if n.startswith("ci_env: run ")]
    assert (["acme/calc", "acme/calc-lax"], [["nowhere"], ["everywhere", "ci"], ["lax"]]) == (
        [n.split(" of ")[1].split(" ")[0] for n in runs], state["data"]["batch_ci_groups"])


def _where(marks: Path) -> list[str]:
    """Which interpreter ran each line of ``marks`` (stage 1's, the build's, the CI env's);
    the file is removed."""
    lines = marks.read_text().splitlines()
    marks.unlink()
    return ["source_build" if "/build/venv/" in line else "ci_env" if "/ci_env/venv/" in line
            else "nightly" for line in lines]


@pytest.mark.slow
def test_batch_killed_in_stages_2_and_3_resumes_at_its_entry(
        calc: Path, tmp_path: Path, fake_github: FakeGitHub) -> None:
    """A SIGKILL at sampled writes after the batch's build was fed (Stage 2 and 3 visits,
    the CI alignment of each of the two CI repositories the entries name), then resume: the
    same rows, and no stage of an entry runs again."""
    wheel = _ci_repo_with_wheel(fake_github, calc, tmp_path, "")
    _ci_repo_with_wheel(fake_github, calc, tmp_path, "", name="acme/calc-lax", wheel=wheel)
    marks = tmp_path / "marks"
    batch = tmp_path / "batch.json"
    mark = f"python -c \"import sys; open('{marks}', 'a').write(sys.executable + chr(10))\""
    batch.write_text(json.dumps([
        {"id": "stage1", "command": f"pytest {calc}/tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"},
        {"id": "slow", "command": mark},
        {"id": "lax", "command": mark, "ci_repo": "acme/calc-lax"},
    ]))
    argv = ["reproduce", "--profile", "local", "--source-dir", str(calc), "--ci-repo", "acme/calc",
            "--batch", str(batch)]
    github = {"ORCHESTRATOR_GITHUB_API": fake_github.base_url, "GITHUB_TOKEN": fake_github.token}
    counter = tmp_path / "count"
    env = {**github, "PYTHONPATH": str(CRASH_HOOK), "ORCHESTRATOR_TEST_CRASH_COUNTER": str(counter),
           "ORCHESTRATOR_TEST_CRASH_AT": "999999"}
    # The clean run, counted. Its workspace is kept as it is once the harness has run the build
    # task (the venv built, the feed written, not yet fed): every killed replay starts from that
    # copy, at the same path, so the venv in it stays valid and the build is not redone.
    ws, snapshot = tmp_path / "ws", tmp_path / "built"
    drv = Driver(ws, env)
    first = drv.call(argv)
    assert "need_agent" == first.spec["status"]  # the build is fed, so kills come after it
    before_feed, stage1_marks = int(counter.read_text()), _where(marks)
    task = first.spec["tasks"][0]
    build = subprocess.run(task["command"], shell=True, capture_output=True, text=True,
                           env={k: v for k, v in drv.env.items() if "TEST_CRASH" not in k})
    Path(task["log_file"]).write_text(build.stdout + build.stderr)
    Path(task["feed_file"]).write_text(json.dumps({"exit_code": build.returncode,
                                                   "log_path": task["log_file"]}))
    shutil.copytree(ws, snapshot, symlinks=True)
    clean = _feed_until_done(drv, drv.shell(task["feed_command"]).spec)
    total, clean_marks = int(counter.read_text()), _where(marks)
    points = sorted({before_feed + 1 + i * (total - before_feed - 1) // 7 for i in range(8)})
    extra = []
    for n in points:
        shutil.rmtree(ws)
        shutil.copytree(snapshot, ws, symlinks=True)
        (tmp_path / f"c{n}").write_text(str(before_feed))
        drv = Driver(ws, {**env, "ORCHESTRATOR_TEST_CRASH_AT": str(n),
                          "ORCHESTRATOR_TEST_CRASH_COUNTER": str(tmp_path / f"c{n}")})
        fed = drv.shell(task["feed_command"])
        assert fed.code in (-9, 137), f"point {n} did not kill"
        spec = _feed_until_done(drv, drv.call(argv).spec, resume=argv)
        ran = _where(marks)
        assert "done" == spec["status"], f"point {n}: {spec}"
        assert (_rows(clean), set(clean_marks)) == (_rows(spec), set(ran)), f"point {n}"
        extra.append(len(ran) - len(clean_marks))
    # each run is a background job recorded in the state: a resumed flow never runs it again
    assert (["nightly"] * 2, ["source_build"] * 2 + ["ci_env"] * 2, {0}) == (
        stage1_marks, clean_marks, set(extra)), extra


@pytest.mark.slow
def test_batch_rows_name_the_tree_each_entry_ran_in(calc: Path, tmp_path: Path,
                                                     git_env: dict[str, str]) -> None:
    """A batch whose origin/main build fails falls back to the ci_commit build: the entry
    re-run there names the build's clone at ci_commit (its path, HEAD and base) in its row,
    while the entry decided at Stage 1 names the --source-dir tree at its own HEAD."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(calc), *args], env=git_env, check=True,
                              capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "calc")
    ci_commit = git("rev-parse", "HEAD")
    (calc / "NOTES.txt").write_text("a later commit\n")
    git("add", "-A")
    git("commit", "-qm", "later")
    head = git("rev-parse", "HEAD")
    batch = tmp_path / "batch.json"
    batch.write_text(json.dumps([
        {"id": "stage1", "command": FAILING, "stage": "nightly"},
        {"id": "built", "command": "pytest tests/test_extra.py::test_not_in_the_built_venv"},
    ]))
    drv = Driver(tmp_path / "ws", {**git_env, "ORCHESTRATOR_REPRODUCE_OFFLINE": "1"})
    first = drv.call(["reproduce", "--profile", "local", "--source-dir", str(calc),
                      "--ci-commit", ci_commit, "--batch", str(batch)])
    assert first.spec is not None, first.stderr
    spec = _feed_run(drv, first.spec, exit_code=1)  # origin/main does not build
    assert "--commit" in spec["tasks"][0]["argv"]
    spec = _feed_until_done(drv, spec)  # the ci_commit build, for real
    rows = {r["id"]: r["verdict"] for r in
            json.loads(Path(spec["report_json_path"]).read_text())["rows"]}
    built, stage1 = rows["built"]["environment"]["tree"], rows["stage1"]["environment"]["tree"]
    assert (("REPRODUCED", "source_build", ci_commit, ci_commit, True),
            ("REPRODUCED", str(calc), head)) == (
        (rows["built"]["verdict"], rows["built"]["stage"], rows["built"]["base"], built["head"],
         built["path"] != str(calc) and built["path"].endswith("/build/src")),
        (rows["stage1"]["verdict"], stage1["path"], stage1["head"]))
