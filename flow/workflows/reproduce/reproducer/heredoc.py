"""A here-document line that goes on after ``;``, read the way bash reads it (seed: Stage 1
"Reproducer forms": a shell block is split into the commands bash would run).

Bash reads ``cat <<EOF; python f.py`` as two commands: ``cat`` with the lines up to ``EOF``
on its stdin, then ``python f.py``. The grammar the splitter uses refuses that line, so
``heredoc_lines`` writes the same block the other way bash accepts it: the rest of the line
after the ``;`` moved below the bodies of the here-documents opened before it
(``cat <<EOF`` / body / ``EOF`` / ``python f.py``), repeated while a line still does so
(``cat <<A; cat <<B`` takes two passes). What runs, and in which order, does not change.

The grammar also refuses a line that opens more than one here-document (``cat <<A <<B``,
``cat <<A 3<<B``, ``cat <<A | cat <<B``), which bash accepts: ``one_opener_per_line`` gives
the parser a copy of the block of the same byte length in which such a line keeps one
opener (the last one on standard input of its first command: the body that command reads)
and the other openers and their bodies are blanks. Every other byte sits where it was, so
the commands' text is cut from the block as written, the kept body from the copy. When the
openers of one line belong to several commands (``cat <<A && cat <<B``, ``cat <<A &
cat <<B``), the parser cannot tell whose body is whose: every opener and body of that line
is blank in the copy, and the line with its bodies is one unit, run whole by ``bash -c``.
"""
from __future__ import annotations

import re

_DELIM = re.compile(r"""\s*(?:(['"])([^'"\n]+)\1|([A-Za-z0-9_.\-]+))""")
_CONTROL = ("||", "&&", "|", "&")


def _delimiter(found: re.Match[str]) -> str:
    return found.group(2) if found.group(2) is not None else found.group(3)


def _openers_and_split(line: str) -> tuple[list[tuple[str, bool]], int | None]:
    """The here-documents ``line`` opens before its first ``;`` that follows one
    ((delimiter, ``<<-``) in order), and that ``;``'s index (None when there is none)."""
    openers, split = _scan(line)
    return [(o.delim, o.dash) for o in openers if split is None or o.start < split], split


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


class _Opener:
    """One here-document opened on a line: its delimiter, ``<<-``, where its text is
    (``start`` includes a descriptor such as ``3``), whether it is on standard input and
    whether it belongs to the line's first command (before any ``|``, ``&&``, ``||``, ``&``)."""

    def __init__(self, delim: str, dash: bool, start: int, end: int, stdin: bool,
                 first: bool) -> None:
        self.delim, self.dash, self.start, self.end = delim, dash, start, end
        self.stdin, self.first = stdin, first


def _openers(line: str) -> list[_Opener]:
    """Every here-document ``line`` opens, in order."""
    return _scan(line)[0]


def _scan(line: str) -> tuple[list[_Opener], int | None]:
    """Every here-document ``line`` opens, in order, and the index of the first ``;`` (not
    ``;;``) that follows one (None when there is none). Quotes, backslashes and comments are
    followed; ``<<<`` (a here-string) opens nothing."""
    found: list[_Opener] = []
    split: int | None = None
    quote, i, first = "", 0, True
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
            match = _DELIM.match(line, i + (3 if dash else 2))
            if match:
                start = i
                while start > 0 and line[start - 1].isdigit():
                    start -= 1
                stdin = start == i or line[start:i] == "0"
                found.append(_Opener(_delimiter(match), dash, start, match.end(), stdin, first))
                i = match.end()
                continue
        elif c == ";" or (any(line.startswith(op, i) for op in _CONTROL)
                          and not (c == "&" and (line[i - 1:i] in (">", "<")
                                                 or line.startswith("&>", i)))):
            if c == ";" and split is None and found and not line.startswith(";;", i):
                split = i
            first = False  # ``2>&1`` and ``&>f`` are redirections, not a new command
        i += 1
    return found, split


def _blank(text: str) -> bytes:
    """``text``'s bytes as spaces, its line ends kept."""
    return b"\n".join(b" " * len(part.encode("utf-8", "surrogatepass"))
                      for part in text.split("\n"))


def one_opener_per_line(text: str) -> tuple[bytes, list[tuple[int, int]]] | None:
    """The bytes the parser reads for ``text``: each line that opens two or more
    here-documents keeps one opener (the last on standard input of the line's first command,
    else the first) with its body right below, the rest blanked, the same length in all;
    and the byte ranges (the line and its bodies) where the openers belong to more than one
    command (``cat <<A && cat <<B``): there every opener and body is blank, and the caller
    runs the range whole. None when no line opens more than one, or a body is never
    closed."""
    lines = text.split("\n")
    out: list[bytes] = []
    tangled: list[tuple[int, int]] = []
    i, changed, at_byte = 0, False, 0
    while i < len(lines):
        openers = _openers(lines[i])
        if len(openers) < 2:
            out.append(lines[i].encode("utf-8", "surrogatepass"))
            at_byte += len(out[-1]) + 1
            i += 1
            continue
        bodies: list[tuple[int, int]] = []  # (first body line, delimiter line) per opener
        at = i + 1
        for op in openers:
            start = at
            while at < len(lines) and (lines[at].lstrip("\t") if op.dash else lines[at]) \
                    != op.delim:
                at += 1
            if at >= len(lines):
                return None
            bodies.append((start, at))
            at += 1
        whole = not all(op.first for op in openers)  # several commands' bodies: run whole
        keep = None if whole else next((n for n in range(len(openers) - 1, -1, -1)
                                        if openers[n].stdin and openers[n].first), 0)
        line = lines[i]
        head = b""
        pos = 0
        for n, op in enumerate(openers):
            head += line[pos:op.start].encode("utf-8", "surrogatepass")
            text_of = line[op.start:op.end]
            head += text_of.encode("utf-8", "surrogatepass") if n == keep else _blank(text_of)
            pos = op.end
        head += line[pos:].encode("utf-8", "surrogatepass")
        others = [lines[a:b + 1] for n, (a, b) in enumerate(bodies) if n != keep]
        filler = sum(len(_blank("\n".join(part))) + 1 for part in others)
        out.append(head + b" " * filler)
        size = len(out[-1])
        if keep is not None:
            start, stop = bodies[keep]
            out.append("\n".join(lines[start:stop + 1]).encode("utf-8", "surrogatepass"))
            size += 1 + len(out[-1])
        else:
            tangled.append((at_byte, at_byte + size))
        at_byte += size + 1
        i = bodies[-1][1] + 1
        changed = True
    return (b"\n".join(out), tangled) if changed else None
