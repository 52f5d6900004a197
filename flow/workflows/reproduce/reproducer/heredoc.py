"""A here-document line that goes on after ``;``, read the way bash reads it (seed: Stage 1
"Reproducer forms": a shell block is split into the commands bash would run).

Bash reads ``cat <<EOF; python f.py`` as two commands: ``cat`` with the lines up to ``EOF``
on its stdin, then ``python f.py``. The grammar the splitter uses refuses that line, so
``heredoc_lines`` writes the same block the other way bash accepts it: the rest of the line
after the ``;`` moved below the bodies of the here-documents opened before it
(``cat <<EOF`` / body / ``EOF`` / ``python f.py``), repeated while a line still does so
(``cat <<A; cat <<B`` takes two passes). What runs, and in which order, does not change.
"""
from __future__ import annotations

import re

_DELIM = re.compile(r"""\s*(['"]?)([A-Za-z0-9_.\-]+)\1""")


def _openers_and_split(line: str) -> tuple[list[tuple[str, bool]], int | None]:
    """The here-documents ``line`` opens before its first ``;`` that follows one
    ((delimiter, ``<<-``) in order), and that ``;``'s index (None when there is none).
    Quotes and backslashes are followed; ``<<<`` (a here-string) opens nothing."""
    openers: list[tuple[str, bool]] = []
    quote, i = "", 0
    while i < len(line):
        c = line[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
            i += 1
            continue
        if c == "\\":
            i += 2
            continue
        if c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1].isspace()):
            break
        elif line.startswith("<<<", i):
            i += 3
            continue
        elif line.startswith("<<", i):
            dash = line.startswith("<<-", i)
            found = _DELIM.match(line, i + (3 if dash else 2))
            if found:
                openers.append((found.group(2), dash))
                i = found.end()
                continue
        elif c == ";" and openers and not line.startswith(";;", i):
            return openers, i
        i += 1
    return openers, None


def _bodies_end(lines: list[str], start: int, openers: list[tuple[str, bool]]) -> int | None:
    """The index of the line that closes the last of ``openers`` (bodies follow in order
    from line ``start``), or None when one is never closed."""
    at = start
    for delim, dash in openers:
        while at < len(lines) and (lines[at].lstrip("\t") if dash else lines[at]) != delim:
            at += 1
        if at >= len(lines):
            return None
        at += 1
    return at - 1


def heredoc_lines(text: str) -> str | None:
    """``text`` with every here-document line that goes on after ``;`` rewritten as bash
    reads it (the rest of the line below the bodies); None when nothing was to move or a
    body is never closed."""
    lines = text.split("\n")
    moved = False
    i = 0
    while i < len(lines):
        openers, split = _openers_and_split(lines[i])
        if split is None:
            i += 1
            continue
        end = _bodies_end(lines, i + 1, openers)
        if end is None:
            return None
        rest = lines[i][split + 1:].strip()
        lines[i] = lines[i][:split].rstrip()
        if rest:
            lines.insert(end + 1, rest)
        moved = True
    return "\n".join(lines) if moved else None
