"""What a person at a terminal reads instead of the JSON object of the harness contract.

The contract (shared/design/protocol.md) is one JSON object per call, and stays so whenever
stdout is not a terminal (a harness, a pipe, a file) or ``--json`` is given. On a terminal a
few answers read better as text: ``--help`` prints its usage text (flags, defaults, one
example) and ``graph`` prints the Mermaid source, or the path of the picture it wrote.
``text_for`` says which; every other answer stays JSON on a terminal too.
"""

from __future__ import annotations

from typing import Any


def wants_text(argv: list[str], is_tty: bool) -> bool:
    """A person reads this call: stdout is a terminal and ``--json`` was not asked for."""
    return is_tty and "--json" not in argv


def text_for(argv: list[str], result: dict[str, Any]) -> str | None:
    """The plain text a terminal shows for ``result``, or None to print the JSON object.

    Errors stay JSON (their code, message and hint are the answer); so does every command
    but ``--help`` and ``graph``.
    """
    if result.get("status") != "done":
        return None
    usage = result.get("usage")
    if isinstance(usage, str):
        return usage if usage.endswith("\n") else usage + "\n"
    from flow.cli.argv import command_of

    if command_of(argv)[0] != "graph":
        return None
    if result.get("picture"):
        return f"wrote {result['picture']}\n"
    mermaid = result.get("mermaid")
    return mermaid + "\n" if isinstance(mermaid, str) else None
