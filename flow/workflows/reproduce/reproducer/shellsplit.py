"""Split a shell block from an issue body into simple commands.

This is not a shell. It understands what reproducer blocks use: quotes, backslash
escapes, line continuations, comments, ``$(...)`` and backticks (kept literal),
``;``/``&&``/``||``/``&``/newline separators, pipelines (the first stage is kept, as it
is the program under test), redirections (dropped) and here-documents (kept as the
command's stdin, so ``python - <<EOF`` can become ``python -c "..."``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from flow.workflows.reproduce.errors import ReproducerParseError

_SEPARATORS = {"\n", ";", "&&", "||", "&"}
_REDIRECTS = {">", ">>", "<", "&>", ">&", "<&", "&>>", ">|"}
_OPERATOR_CHARS = "|&;<>"
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


@dataclass
class _Token:
    kind: str  # "word", "op" or "heredoc"
    value: str
    start: int
    end: int


@dataclass
class Command:
    """One simple command: its words, inline env prefix and the source text it came from."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    text: str = ""
    stdin: str | None = None
    piped: bool = False
    # The words as written (quotes and ``$`` kept), parallel to ``argv``, and the raw
    # right-hand sides of the inline assignments: a refined command re-rendered from them
    # keeps the original's shell semantics (``"$VAR"`` still expands).
    raw: list[str] = field(default_factory=list)
    raw_env: dict[str, str] = field(default_factory=dict)


def _read_quoted(text: str, i: int, quote: str) -> tuple[str, int]:
    """Return (value, index after the closing quote) for a quote opened at ``i``."""
    out: list[str] = []
    j = i + 1
    while j < len(text):
        c = text[j]
        if c == quote:
            return "".join(out), j + 1
        if quote == '"' and c == "\\" and j + 1 < len(text) and text[j + 1] in '"\\$`\n':
            if text[j + 1] != "\n":
                out.append(text[j + 1])
            j += 2
            continue
        out.append(c)
        j += 1
    raise ReproducerParseError(
        f"unclosed {quote} quote starting at offset {i}: {text[i:i + 40]!r}; "
        "close the quote in the reproducer command",
        text=text,
    )


def _read_balanced(text: str, i: int) -> int:
    """Index after the ``)`` matching the ``(`` at ``i`` (quotes inside are skipped)."""
    depth, j = 0, i
    while j < len(text):
        c = text[j]
        if c in "'\"":
            _, j = _read_quoted(text, j, c)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    raise ReproducerParseError(
        f"unclosed $( at offset {i}: {text[i:i + 40]!r}; close the command substitution",
        text=text,
    )


def _read_heredoc(text: str, i: int, strip_tabs: bool) -> tuple[str, int, int]:
    """Read the delimiter after ``<<`` at ``i``.

    Returns (body, index of the newline ending the body, index just after the delimiter
    word on the opening line: the rest of that line still belongs to the command).
    """
    j = i
    while j < len(text) and text[j] in " \t":
        j += 1
    m = re.match(r"""(['"]?)([A-Za-z0-9_\-]+)\1""", text[j:])
    if not m:
        raise ReproducerParseError(
            f"here-document without a delimiter at offset {i}; write it as <<'EOF'", text=text
        )
    delim = m.group(2)
    rest_of_line_end = text.find("\n", j + m.end())
    if rest_of_line_end < 0:
        raise ReproducerParseError(f"here-document <<{delim} has no body", text=text)
    lines: list[str] = []
    pos = rest_of_line_end + 1
    while pos <= len(text):
        nl = text.find("\n", pos)
        line = text[pos:] if nl < 0 else text[pos:nl]
        check = line.lstrip("\t") if strip_tabs else line
        if check.strip() == delim:
            end = len(text) if nl < 0 else nl
            return "\n".join(lines) + "\n", end, j + m.end()
        lines.append(check)
        if nl < 0:
            break
        pos = nl + 1
    raise ReproducerParseError(
        f"here-document <<{delim} is never closed; end it with a line holding only {delim}",
        text=text,
    )


def tokenize(text: str) -> list[_Token]:
    """Turn shell text into words and operators. Raises ReproducerParseError on bad quoting."""
    tokens: list[_Token] = []
    pending_heredoc: tuple[str, int] | None = None  # (body, index where body ends)
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] == "\n":
            i += 2
            continue
        if c in " \t\r":
            i += 1
            continue
        if c == "\n":
            tokens.append(_Token("op", "\n", i, i + 1))
            if pending_heredoc is not None:
                i = pending_heredoc[1]
                pending_heredoc = None
                continue
            i += 1
            continue
        if c == "#":
            while i < n and text[i] != "\n":
                i += 1
            continue
        if text.startswith("<<", i) and not text.startswith("<<<", i):
            strip = text.startswith("<<-", i)
            start = i
            body, body_end, after_delim = _read_heredoc(text, i + (3 if strip else 2), strip)
            tokens.append(_Token("heredoc", body, start, after_delim))
            pending_heredoc = (body, body_end)
            i = after_delim
            continue
        if c in _OPERATOR_CHARS:
            for op in ("&&", "||", "&>>", "&>", ">>", ">&", "<&", ">|", ";", "|", "&", ">", "<"):
                if text.startswith(op, i):
                    tokens.append(_Token("op", op, i, i + len(op)))
                    i += len(op)
                    break
            continue
        start, out = i, []
        while i < n and text[i] not in " \t\r\n" and text[i] not in _OPERATOR_CHARS:
            c = text[i]
            if c in "'\"":
                value, i = _read_quoted(text, i, c)
                out.append(value)
            elif c == "\\" and i + 1 < n:
                if text[i + 1] != "\n":
                    out.append(text[i + 1])
                i += 2
            elif text.startswith("$(", i):
                end = _read_balanced(text, i + 1)
                out.append(text[i:end])
                i = end
            elif c == "`":
                end = text.find("`", i + 1)
                if end < 0:
                    raise ReproducerParseError(f"unclosed backtick at offset {i}", text=text)
                out.append(text[i:end + 1])
                i = end + 1
            else:
                out.append(c)
                i += 1
        word = "".join(out)
        if word.isdigit() and i < n and text[i] in "<>":
            continue  # a file-descriptor number of a redirection: drop with it
        tokens.append(_Token("word", word, start, i))
    return tokens


def split_commands(text: str) -> list[Command]:
    """Split shell text into simple commands, in order. Never returns empty commands."""
    tokens = tokenize(text)
    groups: list[list[_Token]] = [[]]
    for tok in tokens:
        if tok.kind == "op" and tok.value in _SEPARATORS:
            groups.append([])
        else:
            groups[-1].append(tok)
    commands: list[Command] = []
    for group in groups:
        if not group:
            continue
        cmd = Command(argv=[], text=text[group[0].start:group[-1].end].strip())
        skip_next = in_later_stage = False
        for tok in group:
            if skip_next:
                skip_next = False
                continue
            if tok.kind == "heredoc":
                cmd.stdin = tok.value
            elif tok.kind == "op" and tok.value in _REDIRECTS:
                skip_next = True
            elif tok.kind == "op" and tok.value == "|":
                cmd.piped = in_later_stage = True
            elif in_later_stage:
                continue
            elif not cmd.argv and _ASSIGNMENT.match(tok.value):
                name, _, value = tok.value.partition("=")
                cmd.env[name] = value
                cmd.raw_env[name] = text[tok.start:tok.end].partition("=")[2]
            else:
                cmd.argv.append(tok.value)
                cmd.raw.append(text[tok.start:tok.end])
        commands.append(cmd)
    return commands
