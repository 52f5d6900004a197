"""``graph WORKFLOW`` draws final states, states that may ask a person (``need_human``) and
states that may sleep on cron (``schedule_cron``) as such, with a legend, in the Mermaid text
and in the picture Graphviz's ``dot`` draws; and each workflow's declaration of those states
(``Workflow.asks_person``, ``Workflow.sleeps``) matches what its steps' code can return."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
import shutil
import textwrap
import types
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.contract.driver import Driver, toy_at_review

PLUGINS = "tests.contract.toyflow,tests.web.notesflow,tests.fleet.tickflow"
OURS = ("flow.", "tests.", "agents.", "workspace.")
SVG = "{http://www.w3.org/2000/svg}"


# -- what a step's code can return -----------------------------------------------------------

def _resolve(name: str, fn: types.FunctionType, local: dict[str, Any]) -> Any:
    if name in local:
        return local[name]
    for free, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
        if free == name:
            try:
                return cell.cell_contents
            except ValueError:
                return None
    return fn.__globals__.get(name)


def builds(fn: Any, seen: set[Any] | None = None) -> set[str]:
    """Which of ``Human`` and ``Sleep`` the code of ``fn`` can build: the names its source
    uses (module globals, closure cells, imports inside the function, ``module.name``),
    followed through every function of this project it names, called or handed on (a lambda
    given to ``guarded`` included). Methods of objects are not followed."""
    from flow.core.outcome import Human, Sleep

    seen = set() if seen is None else seen
    if not isinstance(fn, types.FunctionType) or fn.__code__ in seen or \
            not (fn.__module__ or "").startswith(OURS):
        return set()
    seen.add(fn.__code__)
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    local: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            module = importlib.import_module(node.module)
            for alias in node.names:
                local[alias.asname or alias.name] = getattr(module, alias.name, None)
    found: set[str] = set()
    for node in ast.walk(tree):
        obj = None
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            obj = _resolve(node.id, fn, local)
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            base = _resolve(node.value.id, fn, local)
            obj = getattr(base, node.attr, None) if isinstance(base, types.ModuleType) else None
        if obj is Human or obj is Sleep:
            found.add(obj.__name__)
        elif isinstance(obj, types.FunctionType):
            found |= builds(obj, seen)
    return found


def _workflows(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    from flow.workflows import registry

    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", PLUGINS)
    return [registry.load(name).WORKFLOW for name in registry.names()]


def test_each_declaration_names_the_states_whose_steps_ask_or_sleep(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """For every workflow (built in and the tests' own), ``asks_person`` is exactly the
    states whose step can build a ``Human`` and ``sleeps`` those that can build a ``Sleep``."""
    seen = {}
    declared = {}
    for wf in _workflows(monkeypatch):
        made = {s: builds(wf.steps[s]) for s in wf.states}
        seen[wf.name] = ({s for s, b in made.items() if "Human" in b},
                         {s for s, b in made.items() if "Sleep" in b})
        declared[wf.name] = (set(wf.asks_person), set(wf.sleeps))
        assert [] == wf.problems(), wf.name
    assert declared == seen
    assert seen["ci"] == ({"ci_monitor", "ci_rerun", "ci_report"},) * 2  # GitHub's refusals
    assert (set(), set()) == seen["reproduce"]


def test_a_declaration_naming_an_unknown_or_final_state_is_a_problem(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    toy = next(w for w in _workflows(monkeypatch) if w.name == "toy")
    bad = replace(toy, asks_person=frozenset({"nowhere"}), sleeps=frozenset({"shipped"}))
    assert ["asks_person names unknown state 'nowhere'",
            "sleeps names terminal state 'shipped' (its step ends the flow)"] == [
        p for p in bad.problems() if "asks_person" in p or "sleeps" in p]


# -- the drawings ---------------------------------------------------------------------------

def _graph(ws: Path, *argv: str) -> dict[str, Any]:
    call = Driver(ws, {"ORCHESTRATOR_PLUGINS": PLUGINS}).call(["graph", *argv])
    assert (0, None) == (call.code, call.spec.get("error")), call.stderr
    return call.spec


def test_the_mermaid_text_marks_each_kind_and_has_a_legend(tmp_path: Path) -> None:
    """ci: every final state ends in ``[*]`` and is bold; the states GitHub's refusals and
    rate limits reach carry the person and cron classes; a legend names the three kinds;
    the JSON lists them; no state is current without ``--flow``."""
    spec = _graph(tmp_path, "ci")
    text = spec["mermaid"]
    classes = re.findall(r"^\s*class (\w+) (\w+)$", text, re.M)
    finals = ["ci_done", "ci_stopped", "ci_closed"]
    assert ([(s, "k_final") for s in finals]
            + [(s, "k_person") for s in ("ci_monitor", "ci_rerun", "ci_report")]
            + [(s, "k_sleep") for s in ("ci_monitor", "ci_rerun", "ci_report")]
            + [("legend_final", "k_final"), ("legend_person", "k_person"),
               ("legend_sleep", "k_sleep")]) == classes
    assert all(f"\n  {s} --> [*]" in text for s in finals)
    legend = text[text.index('state "legend" as legend {'):]
    assert ['final state (the flow ends here)', 'may ask a person (need_human)',
            'may sleep until its cron job fires (schedule_cron)'] == re.findall(
        r'state "([^"]+)" as legend_\w+', legend)
    assert {"final": finals, "person": ["ci_monitor", "ci_rerun", "ci_report"],
            "sleep": ["ci_monitor", "ci_rerun", "ci_report"]} == spec["kinds"]
    assert "s_active" not in re.sub(r"classDef s_active.*", "", text)
    assert "current" not in spec and "the flow's current state" not in text


def _nodes(svg: str) -> dict[str, dict[str, Any]]:
    """Each node of a Graphviz svg by its title: its outlines (polygons with their corner
    counts, or a rounded path), fills and whether its border is dashed."""
    out: dict[str, dict[str, Any]] = {}
    for g in ET.fromstring(svg).iter(f"{SVG}g"):
        if g.get("class") not in ("node", "cluster"):
            continue
        title = g.findtext(f"{SVG}title") or ""
        shapes = [el for el in g if el.tag in (f"{SVG}polygon", f"{SVG}path",
                                                f"{SVG}ellipse")]
        out[title] = {
            "corners": [len(el.get("points", "").split()) - 1 for el in shapes
                        if el.tag == f"{SVG}polygon"],
            "paths": sum(el.tag == f"{SVG}path" for el in shapes),
            "fills": [el.get("fill") for el in shapes],
            "dashed": any(el.get("stroke-dasharray") for el in shapes),
            "text": " ".join(t.text or "" for t in g.iter(f"{SVG}text")),
        }
    return out


needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is missing")


@needs_dot
def test_the_picture_draws_each_kind_in_its_shape_with_a_legend(tmp_path: Path) -> None:
    """ci's svg: final states are double octagons, states that may ask a person hexagons
    with a dashed border when they may also sleep, plain states rounded boxes; the legend
    cluster holds one entry per kind drawn the same way; nothing is filled as current."""
    spec = _graph(tmp_path, "ci", "--format", "svg", "--output", str(tmp_path / "ci.svg"))
    nodes = _nodes(Path(spec["picture"]).read_text())
    shape = {name: (n["corners"], n["paths"], n["dashed"]) for name, n in nodes.items()
             if not name.startswith("cluster")}
    assert {"ci_done": ([8, 8], 0, False), "ci_stopped": ([8, 8], 0, False),
            "ci_closed": ([8, 8], 0, False), "ci_monitor": ([6], 0, True),
            "ci_rerun": ([6], 0, True), "ci_report": ([6], 0, True),
            "ci_debug": ([], 1, False), "legend_final": ([8, 8], 0, False),
            "legend_person": ([6], 0, False), "legend_sleep": ([], 1, True)} == shape
    assert "legend" == nodes["cluster_legend"]["text"]
    assert ["final state (the flow ends here)", "may ask a person (need_human)",
            "may sleep until its cron job fires (schedule_cron)"] == [
        nodes[f"legend_{k}"]["text"] for k in ("final", "person", "sleep")]
    assert not any("darksalmon" in n["fills"] for n in nodes.values())


@needs_dot
def test_a_flows_picture_adds_current_and_taken_to_the_legend(tmp_path: Path) -> None:
    """toy at review (asked nothing yet): its current state red and the states it went
    through blue, each kind still in its shape (approve a hexagon, the ends double
    octagons), and the legend shows what red and blue mean."""
    toy_at_review(Driver(tmp_path, {"ORCHESTRATOR_PLUGINS": PLUGINS}))
    out = _graph(tmp_path, "toy", "--flow", "toy/pic", "--format", "svg", "--output",
                 str(tmp_path / "pic.svg"))
    nodes = _nodes(Path(out["picture"]).read_text())
    assert (["darksalmon", "azure", [6], [8, 8]], "the flow's current state",
            "a state the flow went through") == (
        [nodes["review"]["fills"][0], nodes["work"]["fills"][0], nodes["approve"]["corners"],
         nodes["shipped"]["corners"]],
        nodes["legend_current"]["text"], nodes["legend_taken"]["text"])
    assert ("darksalmon", "azure") == (nodes["legend_current"]["fills"][0],
                                       nodes["legend_taken"]["fills"][0])
    assert "class legend_current s_active" in out["mermaid"]
