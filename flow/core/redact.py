"""Secrets out of fetched text and child output: tokens echoed in a CI log, an API answer or a
job's log never get stored or printed. ``redact`` replaces known token shapes and the values
of the secret settings."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from flow.proc import MASK, secret_names

_SHAPES = re.compile(
    r"(?:gh[pousr]_[A-Za-z0-9]{20,255}"          # GitHub tokens (classic, OAuth, app, refresh)
    r"|github_pat_[A-Za-z0-9_]{20,255}"          # GitHub fine-grained tokens
    r"|AKIA[0-9A-Z]{16}"                         # AWS access key ids
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"            # Slack tokens
    r"|(?<=[Bb]earer )[A-Za-z0-9._~+/=-]{16,}"   # bearer tokens in echoed headers
    r"|(?<=[Tt]oken )[A-Za-z0-9._~+/=-]{16,})")


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """``text`` with token-shaped strings and the values of the secret settings in ``env``
    (default: this process's; the names the runner keeps from children,
    ``flow.proc.secret_names``) replaced by ``***``."""
    env = os.environ if env is None else env
    for value in sorted({env[k] for k in secret_names(env)}, key=len, reverse=True):
        text = text.replace(value, MASK)
    return _SHAPES.sub(MASK, text)
