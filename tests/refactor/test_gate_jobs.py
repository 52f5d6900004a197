"""The local test gate's runs: sharding one big file into jobs that together run each test once."""

from __future__ import annotations

import sys
from pathlib import Path

from flow.core import proc
from flow.workflows.refactor.junit import local_test_run, read_local_tests


def test_three_shards_run_each_of_600_tests_exactly_once(tmp_path: Path) -> None:
    """`ORCHESTRATOR_SHARD=i/3` runs every third test; the three reports merge to all 600,
    each once, with the failing ones named."""
    body = "\n".join(f"def test_{i:03d}():\n    assert {i} % 97 != 0\n" for i in range(600))
    (tmp_path / "test_big.py").write_text(body)
    runs = []
    for i in range(3):
        junit = tmp_path / f"r{i}.xml"
        argv, env = local_test_run(Path("test_big.py"), "cpu", junit, python=sys.executable,
                                   shard=(i, 3))
        res = proc.run(argv, cwd=tmp_path, env={**proc.child_env(), **env},
                       log=tmp_path / f"r{i}.log", timeout=120)
        runs.append((res, junit))
    result = read_local_tests(Path("test_big.py"), "cpu", runs)
    names = [o.name for o in result.outcomes]
    assert 600 == len(names) == len(set(names))
    assert sorted(f"test_big.test_{i:03d}" for i in range(0, 600, 97)) == sorted(result.FAIL)


def test_a_timed_out_gate_run_is_never_read_as_a_pass(tmp_path: Path) -> None:
    """A run cut at its timeout raises JUnitError naming it, even if a report exists."""
    import pytest

    from flow.workflows.refactor.errors import JUnitError

    (tmp_path / "test_slow.py").write_text("import time\ndef test_slow():\n    time.sleep(30)\n")
    junit = tmp_path / "r.xml"
    argv, env = local_test_run(Path("test_slow.py"), "cpu", junit, python=sys.executable)
    res = proc.run(argv, cwd=tmp_path, env={**proc.child_env(), **env}, log=tmp_path / "r.log",
                   timeout=3)
    junit.write_text("<testsuite/>")
    with pytest.raises(JUnitError, match="timed out"):
        read_local_tests(Path("test_slow.py"), "cpu", [(res, junit)])
