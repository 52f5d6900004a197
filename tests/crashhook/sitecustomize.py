"""Test-only: SIGKILL this process at the Nth ``os.replace`` counted across processes.

Active only when ORCHESTRATOR_TEST_CRASH_AT=N and ORCHESTRATOR_TEST_CRASH_COUNTER=FILE are
set; ORCHESTRATOR_TEST_CRASH_WHEN=before|after says whether the replace happens first.
ORCHESTRATOR_TEST_CRASH_TRACE=FILE appends "N<TAB>destination" for every counted replace, so a
test can choose the points that matter to it (the writes around an edit, say).
"""

import os
import signal

_AT = os.environ.get("ORCHESTRATOR_TEST_CRASH_AT")
_COUNTER = os.environ.get("ORCHESTRATOR_TEST_CRASH_COUNTER")
_when = os.environ.get("ORCHESTRATOR_TEST_CRASH_WHEN", "before")
_TRACE = os.environ.get("ORCHESTRATOR_TEST_CRASH_TRACE")
# Only this process is armed: children it starts (pip, pytest, a nested orchestrator) must
# neither be killed nor move the count.
for _name in [k for k in os.environ if k.startswith("ORCHESTRATOR_TEST_CRASH_")]:
    del os.environ[_name]

if _AT and _COUNTER:
    _real_replace = os.replace

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
        if _TRACE:
            with open(_TRACE, "a") as fh:
                fh.write(f"{n}\t{os.fspath(dst)}\n")
        if n == int(_AT) and _when == "before":
            os.kill(os.getpid(), signal.SIGKILL)
        _real_replace(src, dst, *args, **kwargs)
        if n == int(_AT) and _when == "after":
            os.kill(os.getpid(), signal.SIGKILL)

    os.replace = replace
