"""The rule catalogue (``reference/refactor/rules.json``), validated when loaded.

Rule ids are stable: feeds, summaries and audit lines refer to rules by id, so an id is
never reused for a different rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from flow.workflows.refactor.errors import CatalogueError
from reference import DIR as REFERENCE

Strategy = Literal["cpu_only", "device_agnostic", "device_specific"]
CODEMODS: frozenset[str] = frozenset({"only_accelerator", "remove_only_native", "decorate_info", "sentinel_rename"})
DEFAULT_PATH = REFERENCE / "refactor" / "rules.json"


class Trigger(BaseModel):
    """When a rule produces a coder task; any one matching condition is enough."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decorators: tuple[str, ...] = ()
    strategy: Strategy | None = None
    device_strings: bool = False
    cuda_gates: bool = False
    stale_imports: bool = False
    moves: bool = False
    # an @onlyCPU/@onlyMPS/@onlyXPU test the plan leaves in an ACCELERATOR class (TEST_LINTER forbids it)
    only_in_accelerator: bool = False


class Rule(BaseModel):
    """One refactoring rule with a stable id."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    slug: str
    title: str
    mechanical: bool
    codemod: str | None
    baseline: bool  # allowed under a non-core field's safe baseline
    trigger: Trigger
    instructions: str


class Catalogue(BaseModel):
    """The whole catalogue: rules in application order plus the keep-list of skips."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: int
    keep_decorators: tuple[str, ...]
    rules: tuple[Rule, ...]

    def get(self, rule_id: str) -> Rule:
        """Return the rule with ``rule_id``; raises ``CatalogueError`` naming the known ids."""
        for rule in self.rules:
            if rule.id == rule_id:
                return rule
        known = ", ".join(r.id for r in self.rules)
        raise CatalogueError("lookup", f"no rule {rule_id!r}; known ids are {known}")


def parse_catalogue(text: str, source: str = "<text>") -> Catalogue:
    """Validate catalogue JSON text. Raises ``CatalogueError`` on any defect."""
    try:
        catalogue = Catalogue.model_validate(json.loads(text))
    except (ValueError, ValidationError) as exc:
        raise CatalogueError(source, f"invalid: {exc}; fix the JSON against flow/refactor/rules.py") from exc
    ids = [rule.id for rule in catalogue.rules]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise CatalogueError(source, f"duplicate rule ids {duplicates}; give each rule its own id")
    for rule in catalogue.rules:
        if rule.mechanical != (rule.codemod is not None):
            raise CatalogueError(source, f"rule {rule.id!r}: mechanical rules need a codemod and only they may name one")
        if rule.codemod is not None and rule.codemod not in CODEMODS:
            raise CatalogueError(source, f"rule {rule.id!r}: unknown codemod {rule.codemod!r}; use one of {sorted(CODEMODS)}")
    return catalogue


def load_catalogue(path: Path = DEFAULT_PATH) -> Catalogue:
    """Read and validate the catalogue at ``path`` (default: the bundled one)."""
    return parse_catalogue(path.read_text(encoding="utf-8"), str(path))
