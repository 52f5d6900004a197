"""What counts as a secret and how it is kept out of sight.

The names: ``GITHUB_TOKEN``, ``GH_TOKEN`` and every setting matching ``*TOKEN*``,
``*SECRET*``, ``*PASSWORD*``, ``*PASSWD*``, ``*KEY*`` (``ANTHROPIC_API_KEY``,
``AWS_ACCESS_KEY_ID``) or ``*CREDENTIAL*`` (case-insensitive), plus the patterns
in ``ORCHESTRATOR_SECRET_ENV``; ``ORCHESTRATOR_PASS_ENV`` (comma-separated names or
patterns) names the ones a child may be let see, e.g. ``ORCHESTRATOR_PASS_ENV=GPG_KEY``.
The runner (``flow.core.proc``) keeps them out of children's environments and masks the
let-through ones in logs; ``redact`` takes token shapes and the values of the secret
settings out of fetched text and child output, so a token echoed in a CI log, an API answer
or a job's log is never stored or printed. Standard library only.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

SECRETS_ENV = "ORCHESTRATOR_SECRET_ENV"
PASS_ENV = "ORCHESTRATOR_PASS_ENV"
SECRET_PATTERNS = ("GITHUB_TOKEN", "GH_TOKEN", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*",
                   "*KEY*", "*CREDENTIAL*")
MASK_MIN = 8  # a shorter secret value would mask ordinary words
MASK = "***"  # what a secret is shown as (here and in the runner's logs)

_SHAPES = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9]{20,255}"          # GitHub tokens (classic, OAuth, app, refresh)
    r"|github_pat_[A-Za-z0-9_]{20,255}"          # GitHub fine-grained tokens
    r"|AKIA[0-9A-Z]{16}"                         # AWS access key ids
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"            # Slack tokens
    r"|(?<=[Bb]earer )[A-Za-z0-9._~+/=-]{16,}"   # bearer tokens in echoed headers
    r"|(?<=[Tt]oken )[A-Za-z0-9._~+/=-]{16,})")


def secret_patterns(value: str | None) -> list[str]:
    """The name patterns of a comma-separated setting (``ORCHESTRATOR_SECRET_ENV``)."""
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def is_secret(name: str, deny: Iterable[str] = ()) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p.upper()) for p in (*SECRET_PATTERNS, *deny))


def secret_names(env: Mapping[str, str]) -> list[str]:
    """The names in ``env`` that are secrets (``is_secret``, ``ORCHESTRATOR_SECRET_ENV`` read
    from this process) with a value long enough to mask. ``redact`` masks their values in
    what is read back; in a child's scrubbed environment they are the ones let through
    (``allow``, ``ORCHESTRATOR_PASS_ENV``), which its log must not keep either."""
    deny = secret_patterns(os.environ.get(SECRETS_ENV))
    return sorted(k for k, v in env.items() if is_secret(k, deny) and len(v) >= MASK_MIN)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """``text`` with token-shaped strings and the values of the secret settings in ``env``
    (default: this process's; ``secret_names``) replaced by ``***``. A value is masked as it
    is, stripped of surrounding whitespace, and as ``repr`` writes it (an HTTP library's
    error quotes a header value holding a ``\r`` so)."""
    return _mask(text, _values(os.environ if env is None else env))


def redact_tree(obj: Any, env: Mapping[str, str] | None = None) -> Any:
    """``obj`` (JSON-like: dicts, lists, strings) with every string ``redact``-ed; used on
    every error on its way out (output, error file, MCP answer)."""
    values = _values(os.environ if env is None else env)

    def walk(o: Any) -> Any:
        if isinstance(o, str):
            return _mask(o, values)
        if isinstance(o, dict):
            return {k: walk(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [walk(v) for v in o]
        return o
    return walk(obj)


def masker(env: Mapping[str, str] | None = None, cache: int = 65536) -> Any:
    """``redact`` for a long-lived reader (the dashboard): the secret values of ``env``
    (default: this process's, as it is now) are found once, and each distinct text is
    masked once (an LRU of ``cache`` texts)."""
    from functools import lru_cache

    values = _values(os.environ if env is None else env)

    @lru_cache(maxsize=cache)
    def mask(text: str) -> str:
        return _mask(text, values)
    return mask


def _values(env: Mapping[str, str]) -> list[str]:
    forms: set[str] = set()
    for key in secret_names(env):
        value = env[key]
        forms.update(f for f in (value, value.strip(), repr(value)[1:-1]) if len(f) >= MASK_MIN)
    return sorted(forms, key=len, reverse=True)


def _mask(text: str, values: Iterable[str]) -> str:
    for value in values:
        text = text.replace(value, MASK)
    return _SHAPES.sub(MASK, text)
