"""Currency conversion with rates read from a ``CODE=RATE`` text file, cached as JSON
beside it so later runs skip the parse."""
from __future__ import annotations

import json
from pathlib import Path


def _cache(path: Path) -> Path:
    return path.with_name(".rates-cache.json")


def load(path: str | Path) -> dict[str, float]:
    """{currency: rate} from the rates file (from the cache when it is there)."""
    path = Path(path)
    cache = _cache(path)
    if cache.is_file():
        return json.loads(cache.read_text())
    rates = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            code, _, rate = line.partition("=")
            rates[code.strip()] = rate.strip()
    cache.write_text(json.dumps({k: float(v) for k, v in rates.items()}))
    return rates


def convert(cents: int, currency: str, rates_file: str | Path) -> int:
    """``cents`` converted at the file's rate for ``currency``, rounded to whole cents."""
    return round(cents * load(rates_file)[currency])
