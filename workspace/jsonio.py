"""The one way this project writes JSON, for the stores and the layers above the engine: the
engine's own ``flow.core.jsonio`` (orjson, for stdout and disk alike), under the name the
stores have always imported it by."""

from __future__ import annotations

from flow.core.jsonio import digest, dumps, loads

__all__ = ["digest", "dumps", "loads"]
