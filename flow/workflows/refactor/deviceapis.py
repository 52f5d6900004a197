"""The device API catalog (``reference/refactor/device_apis.json``) and the calls a test makes
into it (seed "Strategies": device-agnostic tests run on every accelerator).

A test widened to every accelerator (an ACCELERATOR class, or ``@onlyAccelerator``) that
still calls ``torch.cuda.synchronize()`` fails on XPU, MPS or a PrivateUse1 backend.
``scan_calls`` finds the catalogued names under a test; ``advice`` says what to do with
each: an ``accelerator`` name has a same-call equivalent (``rename`` lists them for the
codemod), a ``rewrite`` one an equivalent with other arguments, a ``device_specific`` one
none (the test stays in a class of that device). Pure stdlib ``ast`` and ``json``.
"""

from __future__ import annotations

import ast
import json
from functools import cache

from flow.workflows.astnames import dotted
from reference import DIR as REFERENCE

CATALOG = REFERENCE / "refactor" / "device_apis.json"


@cache
def catalog() -> dict[str, object]:
    """The catalog as loaded (read once per process)."""
    return json.loads(CATALOG.read_text(encoding="utf-8"))


def rename() -> dict[str, str]:
    """``torch.cuda.X`` -> its same-call accelerator equivalent."""
    return dict(catalog()["accelerator"])  # type: ignore[call-overload]


def _match(name: str) -> tuple[str, str] | None:
    """(kind, advice) for a dotted name in the catalog, else None."""
    cat = catalog()
    acc: dict[str, str] = cat["accelerator"]  # type: ignore[assignment]
    rew: dict[str, str] = cat["rewrite"]  # type: ignore[assignment]
    spec: list[str] = cat["device_specific"]  # type: ignore[assignment]
    if name in acc:
        return "accelerator", f"use {acc[name]}"
    if name in rew:
        return "rewrite", f"use {rew[name]}"
    for prefix in spec:
        if name == prefix or name.startswith(prefix + "."):
            return "device_specific", "no accelerator equivalent: keep the test in a class of that device"
    return None


def _reachable(nodes: list[ast.stmt]) -> list[ast.AST]:
    """Every node under ``nodes`` except the body of an ``if`` that branches on the device
    kind (``if out.device.type == "cuda":``): code there runs on that device only."""
    from flow.workflows.refactor.devices import is_device_check

    out: list[ast.AST] = []
    todo: list[ast.AST] = list(nodes)
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and is_device_check(node.test):
            todo += [node.test, *node.orelse]
            continue
        todo += list(ast.iter_child_nodes(node))
    return sorted(out, key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0),
                                      -getattr(n, "end_col_offset", 0)))


def scan_calls(nodes: list[ast.stmt]) -> list[tuple[str, int]]:
    """Catalogued names used under ``nodes``: (dotted name, line), outermost match only; code
    under a branch on the device kind is not scanned."""
    out: list[tuple[str, int]] = []
    seen: set[int] = set()
    for node in _reachable(nodes):
        if not isinstance(node, ast.Attribute) or id(node) in seen:
            continue
        name = dotted(node)
        hit = name if _match(name) else None
        if hit is None and node.attr in catalog()["rewrite"]:  # type: ignore[operator]
            hit = node.attr  # profiler fields such as evt.self_cuda_time_total
        if hit is not None:
            out.append((hit, node.lineno))
            seen.update(id(n) for n in ast.walk(node))
    return out


def advice(name: str) -> tuple[str, str]:
    """(kind, what to do) for a name ``scan_calls`` returned."""
    return _match(name) or ("rewrite", "use " + str(catalog()["rewrite"][name]))  # type: ignore[index]
