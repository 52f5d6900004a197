"""Test-only: one orchestrator call that starts when told to, so that callers race.

``python racer.py READY_DIR GO_FILE ARGS...``: imports what a call imports (the command line,
the workflow, the stores), writes ``READY_DIR/<pid>``, waits for ``GO_FILE`` to appear, then
runs ``orchestrator.main(ARGS)`` as ``orchestrator.py ARGS`` would. Interpreter start-ups
differ by up to a second on a busy machine; lined up at the same point, the calls reach the
"new or existing flow" decision together, which is what the race tests are about.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

BOUND_S = 600.0


def main() -> int:
    ready, go, argv = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    import orchestrator
    from flow.cli import main as _cli  # noqa: F401
    from flow.workflows.reproduce import declaration as _decl  # noqa: F401
    from workspace import pgstore as _pg, store as _fs  # noqa: F401

    (ready / str(os.getpid())).write_text("")
    stop = time.monotonic() + BOUND_S
    while not go.exists():
        if time.monotonic() > stop:
            return 9
        time.sleep(0.002)
    sys.argv = [str(orchestrator.SCRIPT), *argv]
    return orchestrator.main(argv)


if __name__ == "__main__":
    sys.exit(main())
