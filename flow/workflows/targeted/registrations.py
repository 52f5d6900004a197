"""CI registrations read from a test file's top-level ``register_*_ci(...)`` calls.

The calls are parsed, never executed: top-level, literal values, accepted as miles'
``ci_register.py`` accepts them: the parameters named in ``cfg.positional`` (``est_time``,
``suite``) may be passed by position, ``est_time`` is any number (``60`` or ``1.5``), and
``labels=None`` means no labels. A file whose declaration cannot be read gets an
``Unreadable`` with the reason instead of an exception, so one broken file never aborts a
trace.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from flow.workflows.targeted.config import Backend, TargetedConfig
from flow.workflows.targeted.facts import Calls, read_calls
from flow.workflows.targeted.paths import any_match, glob_match


class Declaration(BaseModel):
    """The keyword arguments a ``register_*_ci`` call may carry, read strictly from literals:
    a typo or a wrong type makes the declaration invalid."""

    model_config = ConfigDict(extra="forbid", strict=True)

    suite: str
    est_time: int | float | None = None
    labels: list[str] = []
    hardware: list[str] = []
    nightly: bool = False
    disabled: str | None = None
    num_gpus: int | None = None

    @property
    def enabled(self) -> bool:
        return not self.disabled


class Registration(Declaration):
    """One CI registration of one test file: its declaration plus where it was found."""

    model_config = ConfigDict(extra="forbid", strict=False)

    path: str
    backend: Backend
    implicit: bool = False  # registered by location (``TargetedConfig.implicit``)
    span: list[int] = []  # first and last line of the call (empty when implicit)


class Unreadable(BaseModel):
    """A test file whose registration cannot be read, and why."""

    model_config = ConfigDict(extra="forbid")

    path: str
    reason: str


def from_calls(path: str, calls: Calls, cfg: TargetedConfig) -> list[Registration] | Unreadable:
    """The registrations of test file ``path`` from its calls (``facts.read_calls``), or why
    none can be read.

    Files under an ``implicit`` location need no call. Never raises.
    """
    if calls.get("e"):
        return Unreadable(path=path, reason=f"syntax error: {calls['e']}")
    regs: list[Registration] = []
    for call in calls["c"]:
        backend = cfg.backend_of(call["f"] or "")
        if backend is None:
            continue
        where = f"{call['f']}(...) at line {call['l']}"
        if call["p"] > len(cfg.positional):
            return Unreadable(path=path, reason=f"invalid declaration: {where} passes "
                              f"{call['p']} positional argument(s); only "
                              f"{', '.join(cfg.positional) or 'none'} may be positional")
        if call["bad"]:
            return Unreadable(path=path, reason=f"invalid declaration: {where}: "
                              f"{', '.join(call['bad'])} not a literal")
        given = dict(zip(cfg.positional, call.get("a", ()), strict=False))
        twice = sorted(set(given) & set(call["k"]))
        if twice:
            return Unreadable(path=path, reason=f"invalid declaration: {where}: "
                              f"{', '.join(twice)} given twice")
        try:
            declared = Declaration.model_validate(_coerce({**given, **call["k"]}))
        except ValidationError as exc:
            first = exc.errors()[0]
            key = ".".join(str(p) for p in first["loc"])
            return Unreadable(path=path, reason=f"invalid declaration: {where}: {key}: "
                              f"{first['msg']} (got {first.get('input')!r})")
        regs.append(Registration(path=path, backend=backend, **declared.model_dump(),
                                 span=[call["l"], call.get("z", call["l"])]))
    if regs:
        return regs
    for rule in cfg.implicit:
        if glob_match(path, rule.path):
            return [Registration(path=path, backend=rule.backend, suite=rule.suite,
                                 labels=list(rule.labels), est_time=rule.est_time,
                                 implicit=True)]
    names = " / ".join(sorted(cfg.registration))
    return Unreadable(path=path, reason=f"none: no top-level {names} call")


def _coerce(kwargs: dict[str, Any]) -> dict[str, Any]:
    # literal_eval gives tuples for ("a", "b"); the declaration means a list. miles reads
    # labels=None as no labels.
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in kwargs.items()}
    if "labels" in out and out["labels"] is None:
        out["labels"] = []
    return out


def read_source(path: str, source: bytes, cfg: TargetedConfig) -> list[Registration] | Unreadable:
    """Parse ``source`` and read its registrations (see ``from_calls``). Never raises."""
    return from_calls(path, read_calls(source), cfg)


def is_test(path: str, cfg: TargetedConfig) -> bool:
    """True when ``path`` is a test file under the config's test globs."""
    return any_match(path, cfg.tests) and not any_match(path, cfg.tests_exclude)
