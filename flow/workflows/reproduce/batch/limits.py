"""The bounds every reproduce call checks, batch or not (``--repeat``, ``--timeout``, the
batch file's size, a ``--ci-repo`` OWNER/NAME), apart from ``entries`` so that a single
run checks them without loading the batch models."""
from __future__ import annotations

import re

from flow.core.bounds import MAX_REPEAT, MAX_TIMEOUT_S  # the flags' ranges, one table

__all__ = ["MAX_BATCH_BYTES", "MAX_ENTRIES", "MAX_REPEAT", "MAX_TIMEOUT_S", "REPO_RE", "is_repo"]

MAX_ENTRIES = 2000          # entries of one batch (each is a full reproduce run)
MAX_BATCH_BYTES = 4 << 20   # a batch file larger is refused before it is parsed
# OWNER/NAME as GitHub spells them; "." and ".." are no name (they would leave /repos/).
REPO_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/(?!\.\.?\Z)[A-Za-z0-9_.-]{1,100}")


def is_repo(value: str) -> bool:
    """Whether ``value`` is a full OWNER/NAME (a full match: no trailing newline)."""
    return REPO_RE.fullmatch(value) is not None
