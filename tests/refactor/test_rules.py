"""The rule catalogue: bundled file valid, stable ids, malformed catalogues refused."""

from __future__ import annotations

import json

import pytest

from flow.workflows.refactor.errors import CatalogueError
from flow.workflows.refactor.rules import load_catalogue, parse_catalogue

STABLE_IDS = ["TR001", "TR002", "TR003", "TR004", "TR005", "TR011", "TR006", "TR007", "TR008", "TR009", "TR010"]


def test_bundled_catalogue_has_the_stable_ids_in_order() -> None:
    """The shipped catalogue loads and keeps its ids (feeds and summaries refer to them)."""
    assert STABLE_IDS == [r.id for r in load_catalogue().rules]


def test_mechanical_rules_are_the_codemod_ones() -> None:
    """Exactly the four mechanical rules name a codemod."""
    expected = {"TR001": "only_accelerator", "TR002": "remove_only_native", "TR009": "decorate_info", "TR010": "sentinel_rename"}
    assert expected == {r.id: r.codemod for r in load_catalogue().rules if r.mechanical}


def _catalogue(**rule_overrides: object) -> str:
    rule = {"id": "X1", "slug": "x", "title": "x", "mechanical": False, "codemod": None, "baseline": False,
            "trigger": {}, "instructions": "x"}
    rule.update(rule_overrides)
    return json.dumps({"version": 1, "keep_decorators": [], "rules": [rule]})


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("{", "invalid"),
        (_catalogue(mechanical=True), "mechanical rules need a codemod"),
        (_catalogue(mechanical=True, codemod="nope"), "unknown codemod 'nope'"),
        (_catalogue(typo=1), "invalid"),
        (json.dumps({"version": 1, "keep_decorators": [], "rules": [json.loads(_catalogue())["rules"][0]] * 2}), "duplicate rule ids"),
    ],
)
def test_malformed_catalogue_is_refused(text: str, fragment: str) -> None:
    """Each defect raises CatalogueError with a message that names it."""
    with pytest.raises(CatalogueError) as info:
        parse_catalogue(text)
    assert fragment in str(info.value)


def test_unknown_rule_lookup_lists_known_ids() -> None:
    """Looking up a missing id raises and lists the ids that exist."""
    with pytest.raises(CatalogueError) as info:
        load_catalogue().get("TR999")
    assert "TR001" in str(info.value)
