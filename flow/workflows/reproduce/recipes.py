"""Fill a profile's command templates. Each ``{placeholder}`` is replaced inside one
argument only, so a value from outside (a path, a sha) can never split into more words
or reach a shell: the result is an argument list for ``flow.core.proc.run``.
"""
from __future__ import annotations

import re
import string

_SHA = re.compile(r"^[0-9a-fA-F]{7,40}$")


def fill(template: list[str], **values: str) -> list[str]:
    """``template`` with placeholders filled. Raises KeyError naming a missing value, and
    ValueError when a ``ci_commit``/``wheel_commit`` is not a hex sha (it becomes a git
    argument; ``--upload-pack=...`` must not)."""
    for key in ("ci_commit", "wheel_commit"):
        if key in values and not _SHA.fullmatch(values[key]):
            raise ValueError(f"{key} {values[key]!r} is not a commit sha; pass 7-40 hex digits")
    out = []
    for word in template:
        names = [f for _, f, _, _ in string.Formatter().parse(word) if f]
        missing = [n for n in names if n not in values]
        if missing:
            raise KeyError(f"template word {word!r} needs {missing}; pass them to fill()")
        out.append(word.format(**values))
    return out
