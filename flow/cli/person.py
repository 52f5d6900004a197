"""What a person at a terminal reads instead of the JSON object of the harness contract.

The contract (shared/design/protocol.md) is one JSON object per call, and stays so whenever
stdout is not a terminal (a harness, a pipe, a file) or ``--json`` is given. On a terminal a
few answers read better as text: ``--help`` prints its usage text (flags, defaults, one
example), ``graph`` the Mermaid source or the path of the picture it wrote, an error its
message once with its hint, ``demo`` what it did, and ``serve`` that it serves (and, when
stopped, that it stopped). ``text_for`` says which; every other answer stays JSON.

A count is written with its words agreeing (``counted``: ``1 claim``, ``2 claims``). Text
here fits ``width()`` columns (the terminal's, at most 100): long text is wrapped between
words, never cut inside one (only a word longer than a whole line is broken).
"""

from __future__ import annotations

import shutil
import textwrap
from typing import Any

WIDTH = 100  # the widest text a terminal is given, however wide the terminal
NARROWEST = 40


def wants_text(argv: list[str], is_tty: bool) -> bool:
    """A person reads this call: stdout is a terminal and ``--json`` was not asked for."""
    return is_tty and "--json" not in argv


def width() -> int:
    """The columns text may take: the terminal's (``COLUMNS`` first), at most ``WIDTH``;
    ``WIDTH`` when stdout is no terminal."""
    columns = shutil.get_terminal_size((WIDTH, 24)).columns
    return max(NARROWEST, min(WIDTH, columns))


def wrap(text: str, columns: int, indent: str = "", first: str | None = None) -> list[str]:
    """``text`` on one line or more of at most ``columns`` characters, broken between words.

    ``first`` starts the first line (default ``indent``), ``indent`` every later one; runs of
    white space (newlines too) read as one space. A word longer than a line (a path, a URL)
    stays whole on a line of its own, so it can be copied.
    """
    lead = indent if first is None else first
    lines = textwrap.wrap(" ".join(str(text).split()), columns, initial_indent=lead,
                          subsequent_indent=indent, break_on_hyphens=False,
                          break_long_words=False)
    return lines or [lead.rstrip()]


def counted(n: Any, one: str, many: str | None = None) -> str:
    """``n`` and the words for that many: ``counted(1, "claim")`` is ``1 claim``,
    ``counted(2, "claim")`` ``2 claims``; ``many`` where adding an ``s`` is wrong
    (``counted(n, "lease expired", "leases expired")``, ``counted(n, "needs", "need")``)."""
    return f"{n} {one if n == 1 else (many if many is not None else one + 's')}"


def clip(text: str, limit: int) -> str:
    """``text`` on one line, at most ``limit`` characters: cut at a space where one is near
    the end, ending in ``...`` (for text read in passing, such as a log's last line; an
    error is never clipped)."""
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat.rfind(" ", 0, limit - 2)
    return flat[:cut if cut > limit // 2 else limit - 3] + "..."


def text_for(argv: list[str], result: dict[str, Any]) -> str | None:
    """The plain text a terminal shows for ``result``, or None to print the JSON object."""
    if result.get("status") == "error" and isinstance(result.get("error"), dict):
        return error_text(result, width())
    if result.get("status") != "done":
        return None
    usage = result.get("usage")
    if isinstance(usage, str):
        return usage if usage.endswith("\n") else usage + "\n"
    from flow.cli.argv import command_of

    command = command_of(argv)[0]
    if command == "demo" and isinstance(result.get("demo"), dict):
        return demo_text(result, width())
    if command != "graph":
        return None
    if result.get("picture"):
        return f"wrote {result['picture']}\n"
    mermaid = result.get("mermaid")
    return mermaid + "\n" if isinstance(mermaid, str) else None


def error_text(result: dict[str, Any], columns: int) -> str:
    """An error as a person reads it: the code and message once, the flow it is about, the
    hint, then any details the error carries (one line each, lists item by item)."""
    err = result["error"]
    lines = wrap(err.get("message", ""), columns, "  ", f"error ({err.get('code')}): ")
    if result.get("flow_id"):
        lines.append(f"flow: {result['flow_id']}")
    if err.get("hint"):
        lines.extend(wrap(err["hint"], columns, "  ", "hint: "))
    for key, value in err.items():
        if key in {"code", "message", "hint"} or value in (None, "", [], {}):
            continue
        if isinstance(value, list):
            lines.append(f"{key}:")
            for item in value:
                lines.extend(wrap(_flat(item), columns, "    ", "  - "))
        else:
            lines.extend(wrap(_flat(value), columns, "  ", f"{key}: "))
    return "\n".join(lines) + "\n"


def _flat(value: Any) -> str:
    """One value in words: a mapping as ``key: value`` pairs, a list comma-separated."""
    if isinstance(value, dict):
        return "; ".join(f"{k}: {_flat(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ", ".join(_flat(v) for v in value)
    return str(value)


def demo_text(result: dict[str, Any], columns: int) -> str:
    """The end of ``demo refactor``: done once, what it reached, where to look, what next."""
    demo = result["demo"]
    file, checkout = str(result.get("file")), f"{demo.get('checkout')}/"
    file = file[len(checkout):] if file.startswith(checkout) else file
    lines = wrap(f"done: the demo took {file} to {result.get('phase')} "
                 f"(outcome {result.get('outcome')}) in {counted(demo.get('calls'), 'call')}",
                 columns, "  ", "")
    for label, value in (("summary", result.get("summary_path")),
                         ("refactored checkout", demo.get("checkout")),
                         ("recorded answers", demo.get("replay"))):
        if value:
            lines.extend(wrap(str(value), columns, "    ", f"  {label}: "))
    steps = [s for s in result.get("next_steps") or [] if isinstance(s, str)]
    if steps:
        lines.append("next:")
        for step in steps:
            lines.extend(wrap(step, columns, "    ", "  - "))
    return "\n".join(lines) + "\n"


def serving_text(shown: dict[str, Any], columns: int) -> str:
    """What ``serve`` says once it listens: where, over what, and how to stop it."""
    over = shown.get("store") or shown.get("workspace")
    lines = wrap(f"serving the read-only dashboard of {over} at {shown.get('url')}", columns,
                 "  ", "")
    lines.append("open it in a browser; Ctrl-C stops the server")
    return "\n".join(lines) + "\n"


def stopped_text(shown: dict[str, Any]) -> str:
    return f"stopped serving {shown.get('url')}; done\n"
