"""The published feed schemas say exactly what the validators accept, for every feed model.

For each model a set of probe documents is built from its own published schema: ``{}``, a
minimal and a full valid example, then every field dropped, retyped (``1`` for a boolean,
``"3"`` for a number, ...), nulled, and an unknown field added, also one level down inside
lists of objects. The schema (checked with ``jsonschema``) and the strict validator the engine
uses must give the same verdict on each probe.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from flow.cli.schemas import all_models, feed_models

FEEDS = feed_models()
RETYPES: list[Any] = [1, "3", True, None, 1.5, [], {}, "x", "", -1]


def _resolve(node: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        name = node["$ref"].split("/")[-1]
        node = {**root["$defs"][name], **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def _example(node: dict[str, Any], root: dict[str, Any], full: bool) -> Any:
    """A value valid against ``node`` (filled with every property when ``full``)."""
    node = _resolve(node, root)
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    if "default" in node and not full:
        return node["default"]
    for key in ("anyOf", "oneOf"):
        if key in node and "type" not in node:
            options = [o for o in node[key] if _resolve(o, root).get("type") != "null"]
            return _example((options or node[key])[0], root, full)
    kind = node.get("type")
    if kind == "object" or "properties" in node:
        branch = node.get("anyOf", [{}])[-1] if "anyOf" in node else {}
        props = {**node.get("properties", {}), **branch.get("properties", {})}
        need = set(node.get("required", [])) | set(branch.get("required", []))
        keys = [k for k in props if full or k in need]
        return {k: _example(props[k], root, full) for k in keys}
    if kind == "array":
        count = max(node.get("minItems", 0), 1 if full else 0)
        return [_example(node.get("items", {}), root, full) for _ in range(count)]
    if kind == "string":
        if "pattern" in node:
            return "0123456789abcdef0123456789abcdef01234567"
        return "x" * max(node.get("minLength", 1), 1)
    if kind == "integer":
        return max(node.get("minimum", 1), 1)
    if kind == "number":
        return 1.5
    if kind == "boolean":
        return False
    return None


def _mutations(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{**doc, "unknown_field": 1}]
    for key, value in doc.items():
        out.append({k: v for k, v in doc.items() if k != key})
        out.extend({**doc, key: other} for other in RETYPES if other != value)
        if isinstance(value, list) and value and isinstance(value[0], dict):
            for inner in _mutations(value[0]):
                out.append({**doc, key: [inner]})
            out.append({**doc, key: ["plain string"]})
    return out


def _probes(schema: dict[str, Any]) -> list[dict[str, Any]]:
    minimal = _example(schema, schema, full=False)
    full = _example(schema, schema, full=True)
    probes = [{}, minimal, full, *_mutations(minimal), *_mutations(full)]
    if "anyOf" in schema:  # one example per declared alternative
        for branch in schema["anyOf"]:
            alt = {**schema, "anyOf": [branch]}
            probes.append(_example(alt, schema, full=False))
    unique = {json.dumps(p, sort_keys=True): p for p in probes}
    return [copy.deepcopy(p) for p in unique.values()]


@pytest.mark.parametrize("name", sorted(FEEDS))
def test_published_schema_agrees_with_the_validator(name: str, tmp_path: Path) -> None:
    """Every probe built from the schema is accepted by the schema iff the validator accepts it."""
    model = FEEDS[name]
    schema = all_models()[name].model_json_schema()
    checker = jsonschema.Draft202012Validator(schema)
    context = {"workspace": str(tmp_path), "flow_dir": str(tmp_path / "flow")}
    disagree = []
    for probe in _probes(schema):
        by_schema = checker.is_valid(probe)
        try:
            model.model_validate_json(json.dumps(probe), strict=True, context=context)
            by_model = True
        except ValueError:
            by_model = False
        if by_schema != by_model:
            disagree.append((probe, f"schema {by_schema}, validator {by_model}"))
    assert [] == disagree[:5]


def test_every_workflow_feed_model_is_published() -> None:
    """The schema command lists every feed model of every built workflow."""
    assert {"ci.debugger", "review-queue.review", "refactor.checker_rule"} <= set(FEEDS)
    assert set(FEEDS) <= set(all_models())
