"""Which store a call uses: ``--store`` or ``ORCHESTRATOR_STORE``, a folder or a URL.

Unset (the default) or a folder: the file store, every flow a folder under the workspace (a
``--store DIR`` alone is the workspace; with a different ``--workspace`` it is refused). A
``postgresql://`` URL (the scheme in any case, or ``postgresql+psycopg://``): the PostgreSQL
store (``workspace.pgstore``), the local files under the workspace as before; any other
``SCHEME://`` value is refused (``pgerrors.check_url``), never taken for a folder. psycopg is
imported only for a URL.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from flow.core.errors import UsageError
from workspace.interface import StateStore
from workspace.paths import workspace_root
from workspace.pgerrors import check_url, is_url, mask_url

ENV_STORE = "ORCHESTRATOR_STORE"


def store_value(flag: str | None, env: Mapping[str, str]) -> str | None:
    """The store named by the flag, else the environment; None for the default."""
    raw = flag if flag else env.get(ENV_STORE, "").strip()
    return raw or None


def store_url(flag: str | None, env: Mapping[str, str]) -> str | None:
    """The PostgreSQL URL to use, or None for the file store (a checked URL)."""
    value = store_value(flag, env)
    return check_url(value) if value is not None and is_url(value) else None


def workspace_for(store_flag: str | None, workspace_flag: str | None,
                  env: Mapping[str, str]) -> Path:
    """The workspace root; a ``--store`` folder is the workspace (and must agree with it)."""
    value = store_value(store_flag, env)
    if value is None or is_url(value):
        return workspace_root(workspace_flag)
    folder = Path(value).expanduser().resolve()
    if not store_flag:  # ORCHESTRATOR_STORE names a folder: --workspace still wins
        return workspace_root(workspace_flag) if workspace_flag else folder
    if workspace_flag and workspace_root(workspace_flag) != folder:
        raise UsageError(
            f"--store {mask_url(value)!r} (a folder) and --workspace {workspace_flag!r} "
            "disagree",
            "a folder store is the workspace: give one of them, or a postgresql:// URL as "
            "--store to keep the state in a database beside the workspace's local files")
    return folder


def open_store(root: Path, flow_id: str, url: str | None) -> StateStore:
    """The store of ``flow_id``: the file store, or the PostgreSQL store at ``url``."""
    if url is None:
        from workspace.store import FlowStore

        return FlowStore(root, flow_id)
    from workspace.pgstore import PgFlowStore

    return PgFlowStore(root, flow_id, url)
