"""Test-only: SIGKILL this process at the Nth ``os.replace`` counted across processes.

Active only when ORCHESTRATOR_TEST_CRASH_AT=N and ORCHESTRATOR_TEST_CRASH_COUNTER=FILE are
set; ORCHESTRATOR_TEST_CRASH_WHEN=before|after says whether the replace happens first.
"""

import os
import signal

_AT = os.environ.get("ORCHESTRATOR_TEST_CRASH_AT")
_COUNTER = os.environ.get("ORCHESTRATOR_TEST_CRASH_COUNTER")

if _AT and _COUNTER:
    _real_replace = os.replace
    _when = os.environ.get("ORCHESTRATOR_TEST_CRASH_WHEN", "before")

    def _count() -> int:
        try:
            with open(_COUNTER) as fh:
                n = int(fh.read() or 0)
        except FileNotFoundError:
            n = 0
        n += 1
        with open(_COUNTER, "w") as fh:
            fh.write(str(n))
        return n

    def replace(src, dst, *args, **kwargs):  # type: ignore[no-untyped-def]
        n = _count()
        if n == int(_AT) and _when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        _real_replace(src, dst, *args, **kwargs)
        if n == int(_AT) and _when == "after":
            os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace
