"""The state diagram's kinds of state and its legend (``orchestrator.py graph``, the
dashboard's picture).

``Workflow.diagram`` draws the machine with transitions' own diagram support (current state
red, the path taken blue); ``mark`` then draws apart, on the same drawing, the states a
person or a clock has to act on, and adds a legend naming every kind it drew:

- a final state (terminal: the flow ends there): a double octagon in the picture; in the
  Mermaid text a ``--> [*]`` end marker and a bold border;
- a state whose step may ask a person (``need_human``): a hexagon; in Mermaid an orange
  border;
- a state whose step may sleep until its cron job fires (``schedule_cron``): a dashed
  border, in both;
- with a flow, the current state and the states it went through (transitions' own red and
  blue).

Shapes and borders never use the fill and text colours transitions gives the current and
taken states, so a current final state is both red and a double octagon. Imports nothing
(the graphviz drawing is handed in).
"""

from __future__ import annotations

from typing import Any

LEGEND = {
    "final": "final state (the flow ends here)",
    "person": "may ask a person (need_human)",
    "sleep": "may sleep until its cron job fires (schedule_cron)",
    "current": "the flow's current state",
    "taken": "a state the flow went through",
}
SHAPES = {"final": "doubleoctagon", "person": "hexagon"}
MERMAID_CLASSES = {
    "final": "stroke-width:3px",
    "person": "stroke:darkorange,stroke-width:3px",
    "sleep": "stroke-dasharray:5 5",
}
# transitions' own styles for the current and the taken states (GraphMachine.style_attributes)
FLOW_STYLES = {"current": {"color": "red", "fillcolor": "darksalmon", "peripheries": "2"},
               "taken": {"color": "blue", "fillcolor": "azure", "peripheries": "1"}}


def legend_keys(kinds: dict[str, list[str]], current: bool, taken: bool) -> list[str]:
    """The legend's entries: the kinds drawn in this machine, then the flow's marks."""
    keys = [k for k in ("final", "person", "sleep") if kinds.get(k)]
    return keys + (["current"] if current else []) + (["taken"] if taken else [])


def mark(engine: str, drawn: Any, kinds: dict[str, list[str]], current: bool,
         taken: bool) -> Any:
    """``drawn`` (transitions' drawing for ``engine``) with the kinds of state drawn apart
    and a legend of what this drawing uses."""
    keys = legend_keys(kinds, current, taken)
    if engine == "graphviz":
        return _graphviz(drawn, kinds, keys)
    return type(drawn)(_mermaid(str(drawn.source), kinds, keys))


def _graphviz(graph: Any, kinds: dict[str, list[str]], keys: list[str]) -> Any:
    """A later node statement adds to a node's attributes in DOT: the shapes go on top of
    transitions' styles (its colours stay)."""
    marked = {s for k in ("final", "person", "sleep") for s in kinds.get(k, [])}
    for state in sorted(marked):
        graph.node(state, **_look({k for k in ("final", "person", "sleep")
                                   if state in kinds.get(k, [])}))
    with graph.subgraph(name="cluster_legend") as box:
        box.attr(label="legend", style="dashed", color="gray50", fontsize="11")
        for key in keys:
            attrs = {**(_look({key}) if key in SHAPES or key == "sleep" else {}),
                     **FLOW_STYLES.get(key, {})}
            box.node(f"legend_{key}", label=LEGEND[key], fontsize="10", **attrs)
    return graph


def _look(kinds: set[str]) -> dict[str, str]:
    """Graphviz attributes of a state of these kinds: its shape (a final state's or a
    person's; else transitions' rounded box) and a dashed border when it may sleep."""
    shape = next((SHAPES[k] for k in ("final", "person") if k in kinds), None)
    style = ["filled"] if shape else ["rounded", "filled"]
    if "sleep" in kinds:
        style.append("dashed")
    double = {"peripheries": "2"} if "final" in kinds else {}
    return {**({"shape": shape} if shape else {}), "style": ",".join(style), **double}


def _mermaid(source: str, kinds: dict[str, list[str]], keys: list[str]) -> str:
    lines = [f"  classDef k_{k} {v}" for k, v in MERMAID_CLASSES.items()]
    lines += [f"  {s} --> [*]" for s in kinds.get("final", [])]
    for kind in ("final", "person", "sleep"):
        lines += [f"  class {s} k_{kind}" for s in kinds.get(kind, [])]
    lines.append('  state "legend" as legend {')
    for key in keys:
        lines.append(f'    state "{LEGEND[key]}" as legend_{key}')
    if "final" in keys:
        lines.append("    legend_final --> [*]")
    lines.append("  }")
    style = {"final": "k_final", "person": "k_person", "sleep": "k_sleep",
             "current": "s_active", "taken": "s_previous"}
    lines += [f"  class legend_{key} {style[key]}" for key in keys]
    return source.rstrip("\n") + "\n" + "\n".join(lines)
