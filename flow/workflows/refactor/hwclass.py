"""Hardware classification: the label every test class of a PyTorch test file declares.

PyTorch's TEST_LINTER requires each top-level class that defines a ``test_*`` method (base
and intermediate classes too) to say ``hw_classification = HardwareClassification.<MEMBER>``
(enum in ``torch.testing._internal.common_utils``; members GENERIC, ACCELERATOR, CPU, CUDA,
MPS, XPU). This module maps the seed's strategies (seed "Analysis" / "Strategies") onto
those members and infers a label from a class's instantiation where the plan gives none;
it reads a class the way TEST_LINTER does. The codemod that writes the labels is
``flow.workflows.refactor.hwcodemod``. Pure stdlib ``ast``.
"""

from __future__ import annotations

import ast
from typing import Literal

HwClass = Literal["GENERIC", "ACCELERATOR", "CPU", "CUDA", "MPS", "XPU"]
HW_CLASSES: tuple[str, ...] = ("GENERIC", "ACCELERATOR", "CPU", "CUDA", "MPS", "XPU")
DEVICE_SPECIFIC: frozenset[str] = frozenset({"CPU", "CUDA", "MPS", "XPU"})
ENUM = "HardwareClassification"
ATTR = "hw_classification"
COMMON_UTILS = "torch.testing._internal.common_utils"


def labels_for(strategy: str) -> frozenset[str]:
    """The labels a seed strategy allows: cpu_only -> GENERIC, device_agnostic -> ACCELERATOR,
    device_specific -> one of CPU/CUDA/MPS/XPU."""
    if strategy == "cpu_only":
        return frozenset({"GENERIC"})
    if strategy == "device_agnostic":
        return frozenset({"ACCELERATOR"})
    return DEVICE_SPECIFIC


def is_test_class(node: ast.ClassDef) -> bool:
    """The linter's test: the class body defines a ``def test_*`` itself (not inherited)."""
    return any(isinstance(s, ast.FunctionDef) and s.name.startswith("test_") for s in node.body)


def declared(node: ast.ClassDef) -> str | None:
    """The member a class declares in one of the two forms the linter accepts, else None."""
    for stmt in node.body:
        target = value = None
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign):
            if not (isinstance(stmt.annotation, ast.Name) and stmt.annotation.id == ENUM):
                target = None
            else:
                target, value = stmt.target, stmt.value
        if not (isinstance(target, ast.Name) and target.id == ATTR):
            continue
        if (isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name)
                and value.value.id == ENUM and value.attr in HW_CLASSES):
            return value.attr
        return None
    return None


def instantiation_call(tree: ast.Module, name: str) -> ast.Call | None:
    """The top-level ``instantiate_device_type_tests(<name>, ...)`` call, as the linter finds it."""
    for stmt in tree.body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call = stmt.value
            if (isinstance(call.func, ast.Name) and call.func.id == "instantiate_device_type_tests"
                    and call.args and isinstance(call.args[0], ast.Name) and call.args[0].id == name):
                return call
    return None


def devices_kwarg(call: ast.Call | None, name: str) -> list[str] | None:
    """A keyword's literal device list (``"cuda"`` -> ``["cuda"]``); None when absent or None;
    ``["?"]`` when it is not a literal."""
    if call is None:
        return None
    for kw in call.keywords:
        if kw.arg != name:
            continue
        v = kw.value
        if isinstance(v, ast.Constant) and v.value is None:
            return None
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            return [v.value]
        if isinstance(v, ast.List | ast.Tuple):
            out = [e.value for e in v.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            return out if len(out) == len(v.elts) else ["?"]
        return ["?"]
    return None


def infer(tree: ast.Module, name: str) -> str:
    """The label a class's instantiation implies: not instantiated -> GENERIC; ``only_for`` one
    of cpu/cuda/mps/xpu -> that device; instantiated otherwise -> ACCELERATOR."""
    call = instantiation_call(tree, name)
    if call is None:
        return "GENERIC"
    only = devices_kwarg(call, "only_for")
    if only is not None and len(only) == 1 and only[0].upper() in DEVICE_SPECIFIC:
        return only[0].upper()
    return "ACCELERATOR"
