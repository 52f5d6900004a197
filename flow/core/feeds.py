"""The base of every feed model, and path fields that must stay inside the workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo

from flow.core.naming import is_inside


class Feed(BaseModel):
    """A result fed back by the harness. ``agent_id`` / ``agent_name`` are always allowed.

    The engine validates every feed in strict JSON mode (``1`` is no boolean, ``"3"`` no
    number): the types a model declares are the types its published schema shows. A rule a
    validator adds beyond the types belongs in ``json_schema_extra`` too (see
    tests/contract/test_feed_schemas.py).
    """

    model_config = ConfigDict(extra="forbid")

    agent_id: str | None = None
    agent_name: str | None = None


def _inside_workspace(value: str, info: ValidationInfo) -> str:
    ctx = info.context or {}
    root = ctx.get("workspace")
    if root is None:
        return value
    base = Path(ctx.get("flow_dir") or root)
    path = Path(value)
    if not path.is_absolute():
        path = base / path
    if not is_inside(Path(root), path):
        raise ValueError(f"path {value!r} is outside the workspace {str(root)!r}; "
                         f"write it under the workspace")
    return str(path.resolve())


WorkspacePath = Annotated[str, AfterValidator(_inside_workspace), Field(
    description="a path inside the workspace; a relative one is taken from the flow folder")]
"""A path from a feed; relative paths are taken from the flow folder; outside is refused."""


class RunResult(Feed):
    """What the harness feeds back after a ``run`` task: the exit status and the log."""

    exit_code: int
    log_path: WorkspacePath
