"""The rules for what a person types, shared by every front end (command line, MCP tools,
environment settings, the stores): numbers of ASCII digits within a stated range, campaign
names, and ids that a list may hold once (seed: the harness contract's "bad input is exit 2
with what was wrong and how to mend it").

A number is written in ASCII digits only: Python's ``int()`` and ``float()`` also take
``1_0`` (as 10), Arabic-Indic or full-width digits, ``nan``, ``inf`` and ``1e999``, none of
which a person means as a count or a number of seconds. Each numeric flag has one range
(``RANGES``): a value outside it is refused before any work starts, so no flag can ask for
``10**30`` import hops or a lease that never ends. Standard library only: the command line
parses every call with these.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from flow.core.errors import SettingError, UsageError, WorkflowInputError

_INT = re.compile(r"[+-]?[0-9]{1,30}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]{1,30}(?:\.[0-9]{0,30})?|\.[0-9]{1,30})")

MAX_REPEAT = 100            # --repeat / a batch entry's repeat
MAX_TIMEOUT_S = 86400.0     # --timeout / a batch entry's timeout, seconds (a day)
MAX_DEPTH = 50              # --depth: import hops from a changed file
MAX_HUB_LIMIT = 1_000_000   # --hub-limit: tests reached before a file counts as a hub
MAX_PR_NUMBER = 2**31 - 1   # GitHub's issue numbers are 32-bit; a larger one overflows a query
MAX_LIMIT = 10_000          # --limit: PRs one review-queue flow reviews
MAX_LEASE = 2**63 - 1       # --lease: a campaign lease token (a PostgreSQL bigint)


class Range(NamedTuple):
    """The values a numeric flag takes: ``low`` to ``high`` (``low_open``: above ``low``).
    A named tuple, not a dataclass: this module is on every call's path, and dataclasses
    imports inspect (about 20 ms)."""

    low: float
    high: float
    whole: bool = True
    low_open: bool = False
    unit: str = ""

    def says(self) -> str:
        """The range in words: ``a whole number from 1 to 50``."""
        kind = "a whole number" if self.whole else "a number"
        low = f"{self.low:g}" if not self.whole else str(int(self.low))
        high = f"{self.high:g}" if not self.whole else str(int(self.high))
        unit = f" {self.unit}" if self.unit else ""
        if self.low_open:
            return f"{kind}{unit} above {low}, at most {high}"
        return f"{kind}{unit} from {low} to {high}"

    def schema(self) -> dict[str, float]:
        """The bounds as pydantic ``Field`` keywords (``ge``/``gt``, ``le``)."""
        low = int(self.low) if self.whole else self.low
        high = int(self.high) if self.whole else self.high
        return {"gt" if self.low_open else "ge": low, "le": high}

    def json_schema(self) -> dict[str, dict[str, float]]:
        """The bounds as a JSON Schema (``minimum``/``exclusiveMinimum``, ``maximum``) for a
        pydantic ``Field(json_schema_extra=...)``: the MCP tools advertise the range and
        leave the refusal to the command line's own parser, so both answer alike."""
        low, high = self.schema().values()
        return {"json_schema_extra": {"exclusiveMinimum" if self.low_open else "minimum": low,
                                      "maximum": high}}


# settings of the environment that every call reads
FOREGROUND = Range(0, 86400, whole=False, low_open=True, unit="of seconds")

# flag (without its dashes) -> its range; the MCP tools' fields use the same
RANGES: dict[str, Range] = {
    "depth": Range(1, MAX_DEPTH, unit="of import hops"),
    "hub-limit": Range(1, MAX_HUB_LIMIT, unit="of tests"),
    "pr-number": Range(1, MAX_PR_NUMBER),
    "limit": Range(1, MAX_LIMIT, unit="of PRs"),
    "repeat": Range(1, MAX_REPEAT, unit="of runs"),
    "timeout": Range(0, MAX_TIMEOUT_S, whole=False, low_open=True, unit="of seconds"),
    "port": Range(0, 65535),
    "lease": Range(1, MAX_LEASE),
}


def number(text: str, rng: Range) -> float | int | None:
    """``text`` as a number within ``rng``, or None when it is not one (not ASCII digits,
    ``1_0``, ``nan``, ``inf``, an exponent, out of range). Never raises."""
    text = str(text).strip()
    if not (_INT if rng.whole else _FLOAT).fullmatch(text):
        return None
    value: float | int = int(text) if rng.whole else float(text)
    if not math.isfinite(value):
        return None
    low_ok = value > rng.low if rng.low_open else value >= rng.low
    return value if low_ok and value <= rng.high else None


class Flag:
    """The argparse ``type`` of a numeric flag: ASCII digits within ``RANGES[name]``; any
    other value is a ``WorkflowInputError`` (exit 2, ``bad_input``) naming the range, with
    ``flag`` and ``allowed``."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.range = RANGES[name]
        self.__name__ = "int" if self.range.whole else "float"  # argparse's messages

    def __call__(self, text: str) -> float | int:
        value = number(text, self.range)
        if value is None:
            raise WorkflowInputError(
                f"--{self.name} {str(text)[:60]!r} is not {self.range.says()}",
                f"pass --{self.name} as {self.range.says()}, in ASCII digits (no underscores, "
                "exponents or other scripts' digits)", flag=f"--{self.name}",
                allowed=self.range.schema())
        return value


def setting(env: Mapping[str, str], name: str, rng: Range,
            default: float | int) -> float | int:
    """The environment setting ``name`` as a number within ``rng`` (``default`` when unset
    or blank); ``SettingError`` (exit 2, ``bad_setting``) saying the range otherwise."""
    raw = str(env.get(name, "") or "").strip()
    if not raw:
        return default
    value = number(raw, rng)
    if value is None:
        raise SettingError(name, raw, f"{rng.says()} (ASCII digits)")
    return value


# A campaign's name: it is a path segment of the dashboard's URL, a word of every printed
# command and of the Codex crontab line, so only letters, digits and ._- (no slash, space
# or quote), 1 to 100 characters, not starting with a dot or a dash.
CAMPAIGN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}")


def campaign_name(name: str) -> str:
    """``name`` if it is a campaign name; ``UsageError`` (exit 2, ``bad_campaign_name``)."""
    if isinstance(name, str) and CAMPAIGN_NAME.fullmatch(name):
        return name
    raise UsageError(f"campaign name {str(name)[:120]!r} is not 1 to 100 letters, digits, "
                     "'.', '_' or '-' (starting with a letter, digit or '_')",
                     "name the campaign e.g. nightly-2026.12 (no slash, space or quote: the "
                     "name is a path of the dashboard and a word of every printed command)",
                     code="bad_campaign_name")


def repeated(ids: Iterable[str]) -> list[str]:
    """The ids that occur more than once, each once, in the order they first repeat."""
    seen: set[str] = set()
    twice: list[str] = []
    for item in ids:
        if item in seen and item not in twice:
            twice.append(item)
        seen.add(item)
    return twice


def refuse_repeated(ids: Iterable[str], what: str) -> None:
    """The one rule for a list of items (a batch file, a campaign's items): every id once.
    ``WorkflowInputError`` (exit 2, ``duplicate_ids``) naming the repeated ids; ``what``
    names the list (``"batch file 'f.json'"``)."""
    twice = repeated(ids)
    if twice:
        shown = ", ".join(repr(i) for i in twice[:20])
        more = f" and {len(twice) - 20} more" if len(twice) > 20 else ""
        raise WorkflowInputError(
            f"the {what} repeats the id(s) {shown}{more}; every id must be unique",
            "give each entry its own id (an entry without one is entry-N, N its place "
            "in the list), then run the same command again", code="duplicate_ids",
            ids=twice[:50])
