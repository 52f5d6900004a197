"""Secrets out of fetched text: tokens echoed in a CI log or an API answer never get stored
or printed. ``redact`` replaces known token shapes and the values of the token settings."""

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


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """``text`` with token-shaped strings and the token settings' values replaced by ``***``."""
    env = os.environ if env is None else env
    for name in TOKEN_SETTINGS:
        value = env.get(name) or ""
        if len(value) >= 8:  # a very short value would mask ordinary words
            text = text.replace(value, MASK)
    return _SHAPES.sub(MASK, text)
