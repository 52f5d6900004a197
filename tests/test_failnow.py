"""``tests.failnow``: under pytest-xdist a failure is named while other tests still run, not
only in the summary at the end."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.contract.driver import ROOT

SUITE = '''
import os, time
from pathlib import Path

def test_fails_first():
    assert 1 == 2

def test_runs_until_the_failure_is_named():
    # ends once the controller's output names the failure (or after a generous bound)
    out = Path(os.environ["FAILNOW_OUT"])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and "FAILED" not in out.read_text():
        time.sleep(0.1)
    assert "FAILED test_pair.py::test_fails_first" in out.read_text()
'''


def test_a_failure_is_named_before_the_run_ends(tmp_path: Path) -> None:
    (tmp_path / "test_pair.py").write_text(SUITE)
    out = tmp_path / "out.txt"
    out.write_text("")
    with out.open("w") as sink:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-p", "tests.failnow",
                               "-p", "no:cacheprovider", "-q", "--rootdir", str(tmp_path),
                               str(tmp_path)], stdout=sink, stderr=subprocess.STDOUT,
                              cwd=tmp_path, timeout=300,
                              env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT),
                                   "FAILNOW_OUT": str(out)})
    text = out.read_text()
    named = text.find("FAILED test_pair.py::test_fails_first\n")
    summary = text.find("short test summary info")
    assert (1, True) == (proc.returncode, 0 <= named < summary)
    assert "1 failed, 1 passed" in text  # the other test saw the name while it ran
