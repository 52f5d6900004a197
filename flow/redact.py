"""Secrets out of fetched text and child output: tokens echoed in a CI log, an API answer or a
job's log never get stored or printed. ``redact`` replaces known token shapes and the values
of the secret settings."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

TOKEN_SETTINGS = ("GITHUB_TOKEN", "GH_TOKEN", "ORCHESTRATOR_GITHUB_TOKEN")
_SHAPES = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9]{20,255}"          # GitHub tokens (classic, OAuth, app, refresh)
    r"|github_pat_[A-Za-z0-9_]{20,255}"          # GitHub fine-grained tokens
    r"|AKIA[0-9A-Z]{16}"                         # AWS access key ids
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"            # Slack tokens
    r"|(?<=[Bb]earer )[A-Za-z0-9._~+/=-]{16,}"   # bearer tokens in echoed headers
    r"|(?<=[Tt]oken )[A-Za-z0-9._~+/=-]{16,})")
MASK = "***"


def secret_values(env: Mapping[str, str]) -> list[str]:
    """The values of the settings that are secrets: the token settings and every name the
    process runner keeps from children (``flow.proc.is_secret``, ``ORCHESTRATOR_SECRET_ENV``
    included), longest first; a value under 8 characters would mask ordinary words."""
    from flow.proc import MASK_MIN, SECRETS_ENV, is_secret, secret_patterns

    deny = secret_patterns(env.get(SECRETS_ENV))
    values = {v for k, v in env.items()
              if (k in TOKEN_SETTINGS or is_secret(k, deny)) and len(v) >= MASK_MIN}
    return sorted(values, key=len, reverse=True)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """``text`` with token-shaped strings and the secret settings' values replaced by ``***``."""
    for value in secret_values(os.environ if env is None else env):
        text = text.replace(value, MASK)
    return _SHAPES.sub(MASK, text)
