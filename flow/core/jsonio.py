"""The one way this project writes JSON: orjson, for stdout and disk alike."""

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
    """Serialise ``obj`` deterministically (sorted keys); never returns a trailing newline."""
    opts = _OPTS if indent else orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    return orjson.dumps(obj, default=_default, option=opts)


def loads(data: bytes | str) -> Any:
    """Parse JSON; raises ``orjson.JSONDecodeError`` (a ``ValueError``) on bad input."""
    return orjson.loads(data)


def digest(obj: Any) -> str:
    """A stable content hash of a JSON-able value (sorted keys, compact)."""
    return hashlib.sha256(dumps(obj, indent=False)).hexdigest()
