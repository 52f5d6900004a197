"""Where things live: the workspace root, a flow's folder, its feed files.

The root comes from ``--workspace``, then ``ORCHESTRATOR_WORKSPACE``, then ``./agent_space``.
Flow ids are relative slash-separated names (``refactor/core/test_ops``); every path built
from one stays inside the root.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from flow.core.errors import UsageError
from flow.core.naming import is_inside, safe_name  # noqa: F401 (re-exported)

ENV_WORKSPACE = "ORCHESTRATOR_WORKSPACE"
STATE_FILE = "flow_state.json"
AUDIT_FILE = "audit.jsonl"
SPEC_CACHE = ".last_spec.json"
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,127}$")


def workspace_root(flag: str | None) -> Path:
    """Resolve the workspace root to an absolute path (it need not exist yet)."""
    raw = flag or os.environ.get(ENV_WORKSPACE) or "agent_space"
    return Path(raw).expanduser().resolve()


def check_flow_id(flow_id: str) -> str:
    """Return ``flow_id`` if it is a safe relative name; raise ``UsageError`` otherwise."""
    parts = flow_id.split("/")
    if not flow_id or not all(_SEGMENT.fullmatch(p) and p not in {".", ".."} for p in parts):
        raise UsageError(
            f"invalid flow id {flow_id!r}",
            "flow ids are slash-separated names of letters, digits, '.', '_', '+', '-' "
            "(for example 'refactor/core/test_ops'); run 'orchestrator.py status' to list them",
        )
    return flow_id


_REPO_PART = re.compile(r"[A-Za-z0-9_.-]{1,100}")


def check_repo(repo: str, flag: str = "--repo") -> str:
    """Return ``repo`` if it is a GitHub ``owner/name``; raise ``UsageError`` otherwise."""
    parts = repo.split("/")
    if len(parts) != 2 or not all(_REPO_PART.fullmatch(p) and p.strip(".") for p in parts):
        raise UsageError(
            f"{flag} {repo!r} is not a GitHub repository as owner/name",
            f"give {flag} as owner/name, for example pytorch/pytorch (letters, digits, '.', "
            f"'_' and '-'; no other '/', no '..')", code="bad_input")
    return repo


def bad_segment(flow_id: str) -> str | None:
    """The first part of ``flow_id`` that is not a safe folder name, or None."""
    for part in flow_id.split("/"):
        if not _SEGMENT.fullmatch(part) or part in {".", ".."}:
            return part
    return None


def flow_dir(root: Path, flow_id: str) -> Path:
    return root / check_flow_id(flow_id)


