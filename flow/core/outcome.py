"""What a workflow step returns: the next thing the engine should do.

A step is a function ``step(ctx) -> Outcome``. It reads ``ctx`` (its data, the results of the
tasks it asked for, answers to its questions), may change ``ctx.data``, and returns one of:

- ``Go(trigger)``: fire a transition; the engine saves and runs the next state's step.
- ``Ask(tasks)``: a wave of agent (or ``run``) tasks; the step runs again once all are fed.
  Asking again for a key that already has a result in this visit is the next attempt.
- ``Human(key, question, options)``: ``need_human``; the step runs again once answered.
- ``Sleep(reason)``: ``schedule_cron``; the step runs again on the next ``--resume``.
- ``Done(result)``: the workflow ended; ``result`` goes into the printed object.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Method = Literal["spawn", "send_message", "inline", "run"]


@dataclass(frozen=True)
class Task:
    """An abstract unit of agent work; the harness adapters render it.

    ``key`` names the task within one visit of a state (``"analyst"``, ``"coder:R3"``); ``feed``
    names the feed model that validates its result. ``follow_up`` sends the prompt to the
    agent that last did ``role`` (falling back to a spawn). ``command`` makes it a ``run``
    task: a long shell command the harness runs in the background.
    """

    key: str
    role: str
    feed: str
    prompt: str = ""
    method: Method = "spawn"
    follow_up: bool = False
    command: list[str] | None = None
    cwd: str | None = None
    mode: str | None = None
    timeout_ms: int | None = None
    max_attempts: int = 3
    inline_for_codex: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Go:
    trigger: str
    note: str = ""


@dataclass(frozen=True)
class Ask:
    tasks: list[Task]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Human:
    key: str
    question: str
    options: dict[str, str]
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sleep:
    reason: str
    cron_interval: str = "*/7 * * * *"
    poll_seconds: int = 420
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Done:
    result: dict[str, Any]
    next_steps: list[str] = field(default_factory=list)


Outcome = Go | Ask | Human | Sleep | Done
