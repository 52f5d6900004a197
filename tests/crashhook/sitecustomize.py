"""Test-only: SIGKILL this process at the Nth ``os.replace`` counted across processes.

Active only when ORCHESTRATOR_TEST_CRASH_AT=N and ORCHESTRATOR_TEST_CRASH_COUNTER=FILE are
set; ORCHESTRATOR_TEST_CRASH_WHEN=before|after says whether the replace happens first.
On the PostgreSQL store (ORCHESTRATOR_STORE a postgresql:// URL) the end of each psycopg
transaction counts too: "before" kills ahead of its COMMIT, "after" right after it.
ORCHESTRATOR_TEST_CRASH_TRACE=FILE appends "N<TAB>destination" for every counted replace, so a
test can choose the points that matter to it (the writes around an edit, say).
"""

import os
import signal

_AT = os.environ.get("ORCHESTRATOR_TEST_CRASH_AT")
_COUNTER = os.environ.get("ORCHESTRATOR_TEST_CRASH_COUNTER")
_when = os.environ.get("ORCHESTRATOR_TEST_CRASH_WHEN", "before")
_TRACE = os.environ.get("ORCHESTRATOR_TEST_CRASH_TRACE")
_PG = os.environ.get("ORCHESTRATOR_STORE", "").startswith(("postgresql://", "postgres://"))
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

    if _PG:
        import psycopg

        _real_exit = psycopg.Transaction.__exit__

        def _exit(self, *exc):  # type: ignore[no-untyped-def]
            n = _count()
            if _TRACE:
                with open(_TRACE, "a") as fh:
                    fh.write(f"{n}\tpostgres transaction\n")
            if n == int(_AT) and _when == "before":
                os.kill(os.getpid(), signal.SIGKILL)
            out = _real_exit(self, *exc)
            if n == int(_AT) and _when == "after":
                os.kill(os.getpid(), signal.SIGKILL)
            return out

        psycopg.Transaction.__exit__ = _exit
