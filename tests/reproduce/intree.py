"""What bash gives for a command typed in a project tree, and the local profile's verdict for
the same command: the pair the in-tree tests compare (seed: Stage 1, "Working directory")."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.contract.driver import Driver


def bash_exit(command: str, tree: Path, python: Path) -> int:
    """bash's exit code: the command typed in the tree, the venv first on PATH."""
    env = {"PATH": f"{python.parent}:/usr/bin:/bin", "HOME": str(tree.parent)}
    return subprocess.run(["bash", "-c", command], cwd=tree, env=env,
                          capture_output=True).returncode


def verdict_spec(drv: Driver, tree: Path, command: str) -> dict:
    """The last spec of a `--stage nightly` local reproduce of ``command`` in ``tree``."""
    call = drv.call(["reproduce", "--profile", "local", "--stage", "nightly", "--source-dir",
                     str(tree), "--command", command])
    assert call.spec is not None and call.spec["status"] == "done", call.stderr[-3000:]
    return call.spec
