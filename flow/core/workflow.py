"""Workflows declared as data: states, transitions, one step per state, feed models.

The same declaration builds the ``transitions`` machine the engine runs and the Mermaid
diagram ``orchestrator.py graph`` prints; ``problems()`` finds unreachable states and dead ends;
``check_state`` refuses a saved state that cannot belong to the declaration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flow.core.errors import OrchestratorError, WorkflowBug

if TYPE_CHECKING:
    from pydantic import BaseModel

    from flow.core.outcome import Outcome
    from flow.core.state import FlowState

# A step gets the engine's ``Ctx`` (flow.core.engine) and returns an outcome. The declaration
# does not import the driver that runs it: the engine depends on the declaration, not back.
Step = Callable[[Any], "Outcome"]


@dataclass(frozen=True)
class Workflow:
    """A workflow: a finite-state machine plus the step that runs in each state.

    ``transitions`` are ``(trigger, source, dest)`` triples; ``terminal`` states have no way
    out and their step must return ``Done``. ``feeds`` maps a feed name to the pydantic model
    that validates results of tasks asking for that feed. ``data_model`` types ``ctx.data``.
    ``skill`` names the harness skill a cron prompt should load. ``asks_person`` names the
    states whose step may ask a person (return ``Human``: ``need_human``) and ``sleeps`` those
    whose step may sleep until a cron job fires (``Sleep``: ``schedule_cron``); the diagram
    draws them as such (``tests/test_graph_kinds.py`` holds each declaration to its steps'
    code).
    """

    name: str
    states: tuple[str, ...]
    transitions: tuple[tuple[str, str, str], ...]
    initial: str
    terminal: frozenset[str]
    steps: Mapping[str, Step]
    feeds: Mapping[str, type[BaseModel]]
    data_model: type[BaseModel]
    skill: str = ""
    description: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)
    asks_person: frozenset[str] = frozenset()
    sleeps: frozenset[str] = frozenset()

    def machine(self, model: object, state: str) -> Any:
        """A ``transitions.Machine`` on ``model``, put back at ``state`` (no callbacks fire)."""
        from transitions import Machine

        return Machine(
            model=model,
            states=list(self.states),
            transitions=[{"trigger": t, "source": s, "dest": d} for t, s, d in self.transitions],
            initial=state,
            auto_transitions=False,
            send_event=False,
        )

    def fire(self, state: str, trigger: str) -> str:
        """The state ``trigger`` leads to from ``state``; ``WorkflowBug`` if it is not allowed."""
        from transitions import MachineError

        class _Model:
            pass

        model = _Model()
        self.machine(model, state)
        try:
            model.trigger(trigger)  # type: ignore[attr-defined]
        except (MachineError, AttributeError) as exc:
            raise WorkflowBug(
                f"workflow {self.name!r}: trigger {trigger!r} is not allowed from {state!r}",
                "this is a bug in the workflow declaration; please report it with the audit log",
            ) from exc
        return str(model.state)  # type: ignore[attr-defined]

    def mermaid(self, current: str | None = None, path: Sequence[str] = ()) -> str:
        """The state diagram as Mermaid text, drawn by transitions from this declaration."""
        return str(self.diagram("mermaid", current, path).draw(None))

    def diagram(self, engine: str, current: str | None = None, path: Sequence[str] = ()) -> Any:
        """The state diagram drawn by transitions' own diagram support (``engine``: ``graphviz``
        for a ``graphviz.Digraph``, ``mermaid`` for its Mermaid text builder), the same states
        and transitions the engine runs. ``current`` is styled active; ``path`` (the states a
        flow went through, in order) styles each declared step between them as taken. Without
        ``current`` no state is active: the machine is drawn as a workflow, not as a flow.

        transitions falls back to Mermaid quietly when the ``graphviz`` binding is missing;
        that is refused here with how to install it, so a picture is never Mermaid in disguise.
        """
        from transitions.extensions import GraphMachine

        if engine == "graphviz":
            try:
                import graphviz  # noqa: F401  (transitions' graphviz engine needs the binding)
            except ImportError:
                raise OrchestratorError(
                    "drawing a picture needs the 'graphviz' Python binding",
                    "pip install graphviz (and the Graphviz programs: apt-get install graphviz)",
                    code="graphviz_missing") from None

        class _Model:
            pass

        model = _Model()
        machine = GraphMachine(
            model=model,
            states=list(self.states),
            transitions=[{"trigger": t, "source": s, "dest": d} for t, s, d in self.transitions],
            initial=self.initial,
            auto_transitions=False,
            graph_engine=engine,
            title=self.name,
        )
        graph = machine.model_graphs[id(model)]
        graph.reset_styling()  # transitions styles the initial state active: no flow is there
        declared = {(s, d) for _, s, d in self.transitions}
        taken = False
        for src, dst in zip(path, path[1:]):
            if (src, dst) in declared:
                graph.set_previous_transition(src, dst)
                taken = True
        if current is not None:
            graph.set_node_style(current, "active")
        from flow.core.diagramkinds import mark

        return mark(engine, graph.get_graph(title=self.name), self.kinds(),
                    current is not None, taken)

    def kinds(self) -> dict[str, list[str]]:
        """The states the diagram draws apart, by kind: ``final`` (terminal), ``person``
        (may ask a person) and ``sleep`` (may sleep until a cron job fires), in declared
        order."""
        return {"final": [s for s in self.states if s in self.terminal],
                "person": [s for s in self.states if s in self.asks_person],
                "sleep": [s for s in self.states if s in self.sleeps]}

    def problems(self) -> list[str]:
        """Declaration errors: unknown states, unreachable states, dead ends, missing steps."""
        found: list[str] = []
        known = set(self.states)
        for trig, src, dst in self.transitions:
            for s in (src, dst):
                if s not in known:
                    found.append(f"transition {trig!r} names unknown state {s!r}")
        if self.initial not in known:
            found.append(f"initial state {self.initial!r} is not declared")
        reach = {self.initial}
        frontier = [self.initial]
        while frontier:
            cur = frontier.pop()
            for _, src, dst in self.transitions:
                if src == cur and dst not in reach:
                    reach.add(dst)
                    frontier.append(dst)
        for s in self.states:
            if s not in reach:
                found.append(f"state {s!r} is unreachable from {self.initial!r}")
            outs = [t for t in self.transitions if t[1] == s]
            if s in self.terminal and outs:
                found.append(f"terminal state {s!r} has outgoing transitions")
            if s not in self.terminal and not outs:
                found.append(f"state {s!r} is a dead end (not terminal, no way out)")
            if s not in self.steps:
                found.append(f"state {s!r} has no step")
        for kind, named in (("asks_person", self.asks_person), ("sleeps", self.sleeps)):
            for s in sorted(named):
                if s not in known:
                    found.append(f"{kind} names unknown state {s!r}")
                elif s in self.terminal:
                    found.append(f"{kind} names terminal state {s!r} (its step ends the flow)")
        if not self.terminal:
            found.append("no terminal state")
        return found


def check_state(state: FlowState, workflow: Workflow, source: str) -> None:
    """Refuse a state that loads but cannot belong to ``workflow`` (``StateLoadError``, exit 4).

    The phase and every task's phase must be states of the workflow and ``data`` must
    validate against its data model. Called right after loading, before anything is written,
    so a hand-edited or damaged state fails closed with the file kept as it is.
    """
    from pydantic import ValidationError

    from flow.core.errors import StateLoadError

    hint = ("the file is kept for inspection; fix the named field, or move the flow folder "
            "aside (--restart) to start anew")
    known = set(workflow.states)
    if state.phase not in known:
        raise StateLoadError(f"{source}: phase {state.phase!r} is not a state of workflow "
                             f"{workflow.name!r} (one of: {', '.join(workflow.states)})", hint)
    for task in state.tasks:
        if task.phase not in known:
            raise StateLoadError(f"{source}: task {task.task_id!r} has phase {task.phase!r}, "
                                 f"not a state of workflow {workflow.name!r}", hint)
        if task.feed not in workflow.feeds:
            raise StateLoadError(f"{source}: task {task.task_id!r} expects feed {task.feed!r}, "
                                 f"which workflow {workflow.name!r} does not know", hint)
    try:
        workflow.data_model.model_validate(state.data)
    except ValidationError as exc:
        first = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}"
                          for e in exc.errors()[:3])
        raise StateLoadError(f"{source}: data does not match workflow {workflow.name!r}: "
                             f"{first}", hint) from None
