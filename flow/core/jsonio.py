"""The one way this project writes JSON: orjson, for stdout and disk alike, and the one door
every JSON object leaves by with its secrets masked (``flow.core.redact``: the state, the
audit log, verdicts, reports, the cached spec, what is printed, MCP answers)."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

_OPTS = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS


def _default(obj: Any) -> Any:
    # pydantic models and paths reach us from workflow code; keep them serialisable.
    dump = getattr(obj, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    if hasattr(obj, "__fspath__"):
        return str(obj)
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def dumps(obj: Any, *, indent: bool = True) -> bytes:
    """Serialise ``obj`` deterministically (sorted keys), every string (keys too) with its
    secrets masked (``flow.core.redact``); never returns a trailing newline. A document a
    quick scan finds nothing to mask in is written as orjson made it; one it does is parsed
    back and masked string by string, so composed text (a blocker quoting a log) is masked
    wherever it sits."""
    opts = _OPTS if indent else orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    data = orjson.dumps(obj, default=_default, option=opts)
    from flow.core.redact import needs_mask, redact_tree

    if not needs_mask(data):
        return data
    return orjson.dumps(redact_tree(orjson.loads(data)), option=opts)


def loads(data: bytes | str) -> Any:
    """Parse JSON; raises ``orjson.JSONDecodeError`` (a ``ValueError``) on bad input."""
    return orjson.loads(data)


def digest(obj: Any) -> str:
    """A stable content hash of a JSON-able value (sorted keys, compact)."""
    data = orjson.dumps(obj, default=_default,  # the raw bytes: a hash is no way out
                        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(data).hexdigest()
