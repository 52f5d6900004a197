"""Phase 0: which field a test file belongs to, and what that field's workflow runs.

A path is ``distributed`` or ``graph`` when it is listed, exactly, in
``reference/<field>/test_list.txt``; otherwise it is ``core``. A path in both lists is a
``FieldConflictError``. Non-core fields run the seed's *safe baseline*: import and symbol
cleanup only, field-agnostic verification and review, no local test gate.
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import BaseModel, ConfigDict

from flow.workflows.refactor.errors import FieldConflictError

Field = Literal["core", "distributed", "graph"]
NON_CORE_FIELDS: tuple[Field, ...] = ("distributed", "graph")

#: Verify checks every field runs; they need no knowledge of accelerator strategies.
FIELD_AGNOSTIC_CHECKS: tuple[str, ...] = ("syntax", "test_count", "import_audit", "external_refs")
#: The full core set, in the order ``verify.run_checks`` runs them.
CORE_CHECKS: tuple[str, ...] = (
    "syntax",
    "test_count",
    "class_structure",
    "decorate_info",
    "external_refs",
    "stale_patterns",
    "import_audit",
    "lint",
)


class FieldProfile(BaseModel):
    """What the workflow does for one field; the engine reads these flags."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    field: Field
    reference_dir: str  # relative to the repository's reference/ root
    safe_baseline: bool  # True: only rules tagged for the baseline may be distributed
    checks: tuple[str, ...]
    local_test_gate: bool


def normalise(path: str) -> str:
    """Return ``path`` in list form: POSIX separators, no leading ``./``.

    Only spelling is normalised; membership stays exact (no globbing, no suffix match).
    """
    return str(PurePosixPath(path.replace("\\", "/")))


def read_test_list(text: str) -> frozenset[str]:
    """Parse one ``test_list.txt`` body: a path a line, ``#`` comments, blanks ignored."""
    entries = (line.strip() for line in text.splitlines())
    return frozenset(normalise(e) for e in entries if e and not e.startswith("#"))


def load_field_lists(reference_root: Path) -> dict[Field, frozenset[str]]:
    """Read every non-core field's test list under ``reference_root``.

    A missing list reads as empty (the field then matches nothing); never raises for that.
    """
    lists: dict[Field, frozenset[str]] = {}
    for field in NON_CORE_FIELDS:
        path = reference_root / field / "test_list.txt"
        lists[field] = read_test_list(path.read_text(encoding="utf-8")) if path.exists() else frozenset()
    return lists


def detect_field(path: str, lists: dict[Field, frozenset[str]]) -> Field:
    """Return the field of ``path`` by exact membership in ``lists``.

    Raises ``FieldConflictError`` when the path is in more than one list.
    """
    key = normalise(path)
    hits = [field for field in NON_CORE_FIELDS if key in lists.get(field, frozenset())]
    if len(hits) > 1:
        raise FieldConflictError(key, list(hits))
    return hits[0] if hits else "core"


def field_profile(field: Field) -> FieldProfile:
    """Return the workflow profile for ``field``: full decoupling or the safe baseline."""
    if field == "core":
        return FieldProfile(
            field="core", reference_dir="", safe_baseline=False, checks=CORE_CHECKS, local_test_gate=True
        )
    return FieldProfile(
        field=field,
        reference_dir=field,
        safe_baseline=True,
        checks=FIELD_AGNOSTIC_CHECKS,
        local_test_gate=False,
    )
