"""Names in Python syntax trees, shared by the workflows that read test files with ``ast``
(refactor's device scan and assessment, reproduce's skip-marker lookup). Pure stdlib."""

from __future__ import annotations

import ast


def dotted(node: ast.expr) -> str:
    """Return ``a.b.c`` for a Name/Attribute chain, the callee's name for a Call, else ''
    (a chain that does not start at a name, such as ``f().skip``, has no dotted name)."""
    if isinstance(node, ast.Call):
        return dotted(node.func)
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return ""
