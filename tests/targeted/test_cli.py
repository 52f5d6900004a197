"""``orchestrator.py affected-tests`` through the real CLI, on synthetic git repositories."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.driver import Driver
from tests.targeted.conftest import Repo, cuda_test


def _pr(repo: Repo) -> str:
    """main with a module and a CUDA test importing it; branch pr changes the module."""
    repo.commit({"pkg/__init__.py": "", "pkg/core.py": "X = 1\n",
                 "tests/test_core.py": cuda_test("from pkg import core")}, "base")
    repo.git("checkout", "-q", "-b", "pr")
    return repo.commit({"pkg/core.py": "X = 2\n"}, "change core")


def test_json_report_lists_the_reached_test_and_its_rerun_line(repo: Repo, tmp_path: Path) -> None:
    """--json prints the envelope plus the report; the changed module reaches its test."""
    _pr(repo)
    call = Driver(tmp_path / "ws").call(["affected-tests", "--base", "main", "--json",
                                         "--repo-dir", str(repo.path)])
    assert 0 == call.code
    report = call.spec["report"]
    assert ("done", None) == (call.spec["status"], call.spec["flow_id"])
    assert ["/rerun-test tests/test_core.py"] == report["rerun"]
    assert [("tests/test_core.py", "pkg/core.py", 1)] == [
        (t["path"], t["reached_from"], t["hop"]) for t in report["tests"]]
    assert (3, 40) == (report["depth"], report["hub_limit"])


def test_text_report_is_printed_as_is_on_a_terminal_and_json_when_piped(repo: Repo,
                                                                         tmp_path: Path) -> None:
    """On a terminal the rendered sections are printed; piped, the same call is one JSON
    object (the contract: everything piped is JSON)."""
    import subprocess
    import sys

    from tests.contract.driver import SCRIPT
    from tests.terminal import on_a_terminal

    _pr(repo)
    argv = ["affected-tests", "--base", "main", "--depth", "2", "--repo-dir", str(repo.path)]
    code, out = on_a_terminal(tmp_path / "ws", *argv, stderr=False)
    assert (0, True) == (code, out.startswith("Profile: defaults. Base: merge base of main and "
                                              "HEAD;"))
    assert ("\nPlan: run these files\n  comment: /rerun-test tests/test_core.py  (est 60s)\n"
            "  files total: est 60s of GPU time\n") in out
    piped = subprocess.run([sys.executable, str(SCRIPT), "--workspace", str(tmp_path / "ws"),
                            *argv], capture_output=True, text=True, check=True).stdout
    import json

    assert ["/rerun-test tests/test_core.py"] == json.loads(piped)["report"]["rerun"]


def test_profile_and_bounds_are_passed_through(repo: Repo, tmp_path: Path) -> None:
    """--depth, --hub-limit and --profile reach the tracer (the miles profile's allowlist)."""
    _pr(repo)
    repo.commit({"Dockerfile": "FROM x\n"}, "docker")
    call = Driver(tmp_path / "ws").call(["affected-tests", "--base", "main", "--json",
                                         "--depth", "1", "--hub-limit", "5", "--profile",
                                         "miles", "--repo-dir", str(repo.path)])
    report = call.spec["report"]
    assert (1, 5) == (report["depth"], report["hub_limit"])
    assert [("Dockerfile", "non-Python file"), ("pkg/core.py", "Python outside the allowlist")] \
        == [(o["path"], o["reason"]) for o in report["outside_trace"]]


@pytest.mark.parametrize("argv, code, needle", [
    (["--base", "no-such-rev"], "targeted_git", "no-such-rev"),
    ([], "bad_input", "--base is required"),
    (["--base", "main", "--depth", "0"], "bad_input", "--depth '0' is not a whole number of import hops from 1 to 50"),
    (["--base", "main", "--profile", "nope"], "targeted_config", "'nope'"),
    (["--base=-all"], "targeted_git", "'-all'"),
])
def test_bad_input_is_an_error_object_with_a_hint(repo: Repo, tmp_path: Path, argv: list[str],
                                                  code: str, needle: str) -> None:
    """A bad base, missing base, bad bound or unknown profile: exit 2, code, message, hint."""
    _pr(repo)
    call = Driver(tmp_path / "ws").call(["affected-tests", "--json", "--repo-dir",
                                         str(repo.path), *argv])
    assert (2, "error", code) == (call.code, call.spec["status"], call.spec["error"]["code"])
    assert needle in call.spec["error"]["message"]
    assert call.spec["error"]["hint"]


def test_not_a_repository_is_refused(tmp_path: Path) -> None:
    """A --repo-dir outside any git work tree is a bad_input error naming the directory."""
    plain = tmp_path / "plain"
    plain.mkdir()
    call = Driver(tmp_path / "ws").call(["affected-tests", "--base", "main", "--json",
                                         "--repo-dir", str(plain)])
    assert (2, "bad_input") == (call.code, call.spec["error"]["code"])
    assert str(plain) in call.spec["error"]["message"]


def test_affected_tests_never_imports_pygithub_or_libcst(repo: Repo, tmp_path: Path) -> None:
    """The tracer on the command line needs no GitHub client and no CST: neither is loaded."""
    import subprocess
    import sys

    from tests.contract.driver import SCRIPT

    _pr(repo)
    code = ("import io, sys\n"
            f"sys.path.insert(0, {str(SCRIPT.parent)!r})\n"
            "import orchestrator\n"
            "sys.stdout = io.TextIOWrapper(io.BytesIO())\n"
            "code = orchestrator.main(sys.argv[1:])\n"
            "sys.stderr.write(f'\\nEXIT {code} MODULES ' + ' '.join(sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code, "--workspace", str(tmp_path / "ws"),
                           "affected-tests", "--base", "main", "--json", "--repo-dir",
                           str(repo.path)], capture_output=True, text=True, check=True)
    status, mods = proc.stderr.rsplit("\nEXIT ", 1)[1].split(" MODULES ", 1)
    assert ("0", set()) == (status, {m for m in mods.split()
                                     if m.split(".")[0] in {"github", "libcst"}})


def test_repeated_calls_share_a_cache_under_the_workspace(repo: Repo, tmp_path: Path) -> None:
    """affected-tests keeps the tracer's cache in <workspace>/.cache/targeted/<checkout>; the
    next call on the same checkout reads it and reports the same; an edit is seen."""
    from flow.workflows.targeted.affected import cache_dir_for
    from flow.workflows.targeted.facts import FACTS_VERSION

    _pr(repo)
    drv = Driver(tmp_path / "ws")
    argv = ["affected-tests", "--base", "main", "--json", "--repo-dir", str(repo.path)]
    first = drv.call(argv).spec["report"]
    cache = cache_dir_for((tmp_path / "ws").resolve(), repo.path)
    files = sorted(p.name for p in cache.iterdir())
    graph = cache / f"graph-v{FACTS_VERSION}.json"
    written = graph.stat().st_ino  # the cache is replaced atomically when it is written
    again = drv.call(argv).spec["report"]
    untouched = graph.stat().st_ino == written  # answered from the cache: nothing rewritten
    repo.commit({"tests/test_other.py": cuda_test("import pkg.core")})
    edited = drv.call(argv).spec["report"]
    assert ([f"facts-v{FACTS_VERSION}.json", f"graph-v{FACTS_VERSION}.json"], first, True) == (
        files, again, untouched)
    assert ["tests/test_core.py", "tests/test_other.py"] == [t["path"] for t in edited["tests"]]
