"""The refactor workflow's test environment: which interpreter runs the tests, whether it has
torch, the local-test job settings, and the original file's ``pytest --collect-only`` (run once
per content and interpreter, before the analyst plans, so an original that does not even import
stops the flow there instead of surfacing at the local test gate).

Below ``steps`` (phases 1-4) so the analyze step can ask it; ``gates`` and ``fixloop`` use it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from flow.core import proc
from flow.core.errors import WorkflowInputError
from flow.workflows.refactor.mechanical import original


def _python(ctx: Any) -> str:
    """The test interpreter (``flow.workflows.refactor.interpreter``'s rule), chosen once per flow."""
    if ctx.data.test_python is None:
        from flow.workflows.refactor.interpreter import choose_python

        python, why = choose_python(ctx.settings, Path(ctx.data.repo))
        ctx.data.test_python = python
        _note(ctx, f"tests run with {python}: {why}")
    return ctx.data.test_python


def _note(ctx: Any, text: str) -> None:
    """Add ``text`` to the summary's notes once (a re-run step must not repeat it)."""
    if text not in ctx.data.notes:
        ctx.data.notes.append(text)


TEST_TIMEOUT_ENV = "ORCHESTRATOR_REFACTOR_TEST_TIMEOUT"
TEST_SHARDS_ENV = "ORCHESTRATOR_REFACTOR_TEST_SHARDS"
DEFAULT_TEST_TIMEOUT = 1800.0


def test_settings(settings: Any) -> tuple[float, int]:
    """(timeout in seconds of one local-test job, how many shards a device's run is split
    into) from ``ORCHESTRATOR_REFACTOR_TEST_TIMEOUT`` (default 1800) and
    ``ORCHESTRATOR_REFACTOR_TEST_SHARDS`` (default 1). ``WorkflowInputError`` for a bad
    value; the workflow's start calls this so a typo is refused before any agent work."""
    from flow.core.bounds import Range, number

    raw_t = (settings.get(TEST_TIMEOUT_ENV) or "").strip()
    raw_s = (settings.get(TEST_SHARDS_ENV) or "").strip()
    timeout = number(raw_t, Range(0, 7 * 86400, whole=False, low_open=True)) if raw_t \
        else DEFAULT_TEST_TIMEOUT
    shards = number(raw_s, Range(1, 64)) if raw_s else 1
    if timeout is None or shards is None:
        raise WorkflowInputError(
            f"{TEST_TIMEOUT_ENV}={raw_t!r} / {TEST_SHARDS_ENV}={raw_s!r}: a timeout must be a "
            f"number of seconds above 0, at most 604800, and shards a whole number from 1 to "
            "64, in ASCII digits",
            f"e.g. {TEST_TIMEOUT_ENV}=3600 {TEST_SHARDS_ENV}=4, or unset them")
    return float(timeout), int(shards)


def _has_torch(ctx: Any) -> bool:
    """Whether the test interpreter finds torch, and which (asked once per flow, recorded).

    The collect-only check runs under that interpreter, so the orchestrator's own imports say
    nothing. The probe only locates torch and reads its version, without importing it. Only
    a clear "not found" skips the check: an interpreter that cannot be started counts as
    having torch, so the collection runs and reports the failure (V204) instead of the check
    passing unseen.
    """
    if ctx.data.test_torch is None:
        from flow.workflows.refactor.interpreter import TORCH_PROBE

        # A probe the call's budget cut short is asked again next call (BudgetSpent), never
        # recorded as "could not ask the interpreter: timed out".
        probe = proc.capture([_python(ctx), "-c", TORCH_PROBE], env=ctx.settings,
                             timeout=300).or_wait()
        if probe.timed_out or probe.code == proc.NOT_FOUND:
            ctx.data.test_torch = True
            ctx.data.test_torch_info = f"could not ask the interpreter: {probe.problem}"
        else:
            ctx.data.test_torch = probe.code == 0
            found = probe.text.strip().splitlines()[-1] if probe.text.strip() else ""
            ctx.data.test_torch_info = (f"torch {found}" if ctx.data.test_torch and found
                                        else "no torch")
        _note(ctx, f"the test interpreter has {ctx.data.test_torch_info}")
    return bool(ctx.data.test_torch)


def original_collected(ctx: Any, attempt: int = 0) -> Any:
    """The original's collect-only result, cached in the flow folder by content hash.

    The original never changes, so it is collected once per content and interpreter, not
    every verify round. It is collected from the flow folder's copy with the checkout as the
    working directory and the test file's own folder first on ``PYTHONPATH``, so sibling
    imports (``from _fa_test_common import ...``) resolve as they do in place.
    """
    import os

    from flow.workflows.refactor.collect import CollectResult

    text = original(ctx).read_bytes()
    digest = hashlib.sha256(text + b"\0" + _python(ctx).encode()).hexdigest()[:20]
    name = f"collect_cache/original-{digest}.json"
    if ctx.path(name).exists():
        return CollectResult.model_validate_json(ctx.path(name).read_bytes())
    folder = str(Path(ctx.data.file).parent)
    path = os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH", "")) if p)
    key = f"collect-original-{digest}" + (f"-{attempt}" if attempt else "")  # a retry runs anew
    result = collected(ctx, key, original(ctx), {"PYTHONPATH": path})
    ctx.write_json(name, result.model_dump(mode="json"))
    return result


def collect_job(ctx: Any, key: str, file: Path, env: dict[str, str] | None = None
                 ) -> dict[str, Any]:
    from flow.workflows.refactor.collect import collect_argv

    return dict(key=key, argv=collect_argv(file, _python(ctx)), cwd=ctx.data.repo,
                env={**ctx.settings, **(env or {})}, timeout=test_settings(ctx.settings)[0],
                log_name=f"logs/{key}.log")


def collected(ctx: Any, key: str, file: Path, env: dict[str, str] | None = None) -> Any:
    """A collect-only run in the checkout as a background job the flow owns (collecting a
    big file such as test_ops.py can outlast a call); ``CollectError`` when it could not
    run, timed out or was lost: never read as zero tests."""
    from flow.core import proc
    from flow.workflows.refactor.collect import read_collected
    from flow.workflows.refactor.errors import CollectError

    res = ctx.job(**collect_job(ctx, key, file, env))
    if res.timed_out or res.lost or res.code == proc.NOT_FOUND:
        raise CollectError(str(file), f"could not run {_python(ctx)!r}: {res.tail(3)}")
    return read_collected(file, res.code, res.output)
