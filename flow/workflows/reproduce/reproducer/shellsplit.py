"""Split a shell block from an issue body into the commands bash would run, in order
(seed: Stage 1 "Reproducer forms": the setup steps and the reproduce step of a block).

The block is parsed with bash's grammar (tree-sitter-bash through py-tree-sitter, imported
only when a block is split), so what counts as one command is what the shell sees:

- ``&&`` lists and newline/``;`` sequences are split into their commands (a setup script
  that stops at the first failure runs them the same way);
- an ``||`` list stays one unit (``pip install x || pip install y`` must not stop at the
  first failure); its first command gives the words, as a pipeline's first stage does
  (the program under test), and the unit's text is the whole list;
- a command followed by ``&`` is a *background* unit: its text keeps the ``&`` (so a setup
  script starts it and goes on) and it is never the reproduce step;
- subshells, ``{ ...; }`` groups, ``if``/``for``/``while``/``case`` blocks, ``!`` negations,
  ``[ ... ]`` tests and function definitions are *compound* units, taken whole: their words
  are ``bash -c TEXT`` and ``inner`` holds the simple commands inside them;
- redirections are dropped from the words (and from nothing else: the text keeps them);
  a here-document or here-string is the command's stdin, so ``python - <<EOF`` can become
  ``python -c "..."``; ``$(...)``, backticks and ``$VAR`` stay literal in the words.

A block bash could not parse (an unclosed quote, ``$(``, or here-document, stray syntax)
raises ``ReproducerParseError`` saying where; the text is never guessed at.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from flow.workflows.reproduce.errors import ReproducerParseError

# Statements taken whole: the shell runs each as one unit.
_COMPOUND = frozenset({
    "subshell", "compound_statement", "if_statement", "for_statement",
    "c_style_for_statement", "while_statement", "case_statement", "function_definition",
    "negated_command", "test_command",
})
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "E": "\x1b",
           "f": "\f", "v": "\v", "\\": "\\", "'": "'", '"': '"', "?": "?"}


@dataclass
class Command:
    """One unit of a block: its words, inline env prefix and the source text it came from."""

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
    background: bool = False   # followed by ``&``: the shell does not wait for it
    compound: bool = False     # a subshell/group/if/for/... taken whole (argv: bash -c TEXT)
    inner: list[Command] = field(default_factory=list)  # a compound unit's simple commands


@lru_cache(maxsize=1)
def _parser() -> Any:
    """The bash parser, built on first use (py-tree-sitter and the grammar load only here)."""
    import tree_sitter_bash
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_bash.language()))


class _Source:
    """The block as bytes (tree-sitter's offsets are byte offsets) with text helpers;
    ``parsed`` is what the parser reads: the same bytes, or a copy of the same length whose
    extra here-document openers are blanks (``heredoc.one_opener_per_line``)."""

    def __init__(self, text: str, parsed: bytes | None = None,
                 tangled: list[tuple[int, int]] | None = None) -> None:
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.parsed = self.data if parsed is None else parsed
        self.tangled = tangled or []  # byte ranges run whole (``heredoc.one_opener_per_line``)

    def parsed_span(self, start: int, end: int) -> str:
        return self.parsed[start:end].decode("utf-8", "replace")

    def of(self, node: Any) -> str:
        return self.span(node.start_byte, node.end_byte)

    def span(self, start: int, end: int) -> str:
        return self.data[start:end].decode("utf-8", "replace")

    def offset(self, byte: int) -> int:
        """Character offset of a byte offset (for messages)."""
        return len(self.data[:byte].decode("utf-8", "replace"))


def _unescape_bare(text: str) -> str:
    """An unquoted word's value: ``\\x`` is ``x``, a backslash-newline is nothing."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _unescape_double(text: str) -> str:
    """The inside of ``"..."``: a backslash escapes only ``" \\ $ ` newline``."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text) and text[i + 1] in '"\\$`\n':
            if text[i + 1] != "\n":
                out.append(text[i + 1])
            i += 2
            continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _unescape_ansi_c(text: str) -> str:
    """The inside of ``$'...'`` (the common escapes, ``\\xHH`` and octal ``\\NNN``). A NUL
    (``\\0``, ``\\x00``) ends the string there, as in bash, whose words are C strings: no
    NUL ever reaches a program's arguments."""
    value = _ansi_c_escapes(text)
    return value.split("\0", 1)[0]


def _ansi_c_escapes(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if c != "\\" or i + 1 >= len(text):
            out.append(c)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt in _ANSI_C:
            out.append(_ANSI_C[nxt])
            i += 2
        elif nxt == "x" and i + 2 < len(text) and text[i + 2] in "0123456789abcdefABCDEF":
            j = i + 2
            while j < len(text) and j < i + 4 and text[j] in "0123456789abcdefABCDEF":
                j += 1
            out.append(chr(int(text[i + 2:j], 16)))
            i = j
        elif nxt in "01234567":
            j = i + 1
            while j < len(text) and j < i + 4 and text[j] in "01234567":
                j += 1
            out.append(chr(int(text[i + 1:j], 8)))
            i = j
        else:
            out.append(c + nxt)
            i += 2
    return "".join(out)


def _value(node: Any, src: _Source) -> str:
    """A word's value after quote removal (expansions and substitutions kept as written)."""
    text, kind = src.of(node), node.type
    if kind == "string" and len(text) >= 2:
        return _unescape_double(text[1:-1])
    if kind == "translated_string" and len(text) >= 3:
        return _unescape_double(text[2:-1])
    if kind == "raw_string" and len(text) >= 2:
        return text[1:-1]
    if kind == "ansi_c_string" and len(text) >= 3:
        return _unescape_ansi_c(text[2:-1])
    if kind == "word":
        return _unescape_bare(text)
    if kind == "command_name" and node.named_child_count == 1:
        return _value(node.named_children[0], src)
    if kind == "concatenation":
        out, pos = [], node.start_byte
        for child in node.children:
            if child.start_byte > pos:
                out.append(_unescape_bare(src.span(pos, child.start_byte)))
            out.append(_value(child, src))
            pos = child.end_byte
        if node.end_byte > pos:
            out.append(_unescape_bare(src.span(pos, node.end_byte)))
        return "".join(out)
    return text


def _assignment(node: Any, src: _Source) -> tuple[str, str, str]:
    """(name, value, value as written) of a ``variable_assignment``."""
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    if value is None:
        return (src.of(name) if name is not None else src.of(node).split("=", 1)[0]), "", ""
    return src.of(name), _value(value, src), src.of(value)


def _heredoc_body(redirect: Any, src: _Source) -> str:
    """The lines between a here-document's opening line and its delimiter line (``<<-``:
    leading tabs stripped), as the command reads them on stdin."""
    end = next((c for c in redirect.children if c.type == "heredoc_end"), None)
    body = next((c for c in redirect.children if c.type == "heredoc_body"), None)
    if end is None:
        return ""
    data = src.parsed  # the kept body sits here (it may be elsewhere in the block)
    stop = data.rfind(b"\n", 0, end.start_byte) + 1
    if body is not None:
        start = data.rfind(b"\n", 0, body.start_byte) + 1
    else:
        start = stop
    text = data[start:stop].decode("utf-8", "replace")
    if any(c.type == "<<-" for c in redirect.children):
        text = "".join(line.lstrip("\t") for line in text.splitlines(keepends=True))
    return text


def _herestring(redirect: Any, src: _Source) -> str:
    words = [c for c in redirect.named_children]
    return (_value(words[-1], src) if words else "") + "\n"


def _simple(node: Any, src: _Source, text: str) -> Command:
    """A ``command`` / ``declaration_command`` / ``unset_command`` / assignment-only node."""
    cmd = Command(argv=[], text=text)
    if node.type in {"variable_assignment", "variable_assignments"}:
        for assign in ([node] if node.type == "variable_assignment" else node.named_children):
            if assign.type == "variable_assignment":
                name, value, raw = _assignment(assign, src)
                cmd.env[name], cmd.raw_env[name] = value, raw
        return cmd
    if node.type in {"declaration_command", "unset_command"}:
        keyword = node.children[0]
        cmd.argv.append(src.of(keyword))
        cmd.raw.append(src.of(keyword))
        for child in node.named_children:
            if child.type == "comment":
                continue
            if child.type == "variable_assignment":
                name, value, _raw = _assignment(child, src)
                cmd.argv.append(f"{name}={value}")
            else:
                cmd.argv.append(_value(child, src))
            cmd.raw.append(src.of(child))
        return cmd
    for child in node.named_children:
        if child.type == "variable_assignment" and not cmd.argv:
            name, value, raw = _assignment(child, src)
            cmd.env[name], cmd.raw_env[name] = value, raw
        elif child.type == "herestring_redirect":
            cmd.stdin = _herestring(child, src)
        elif child.type in _REDIRECTS or child.type == "comment":
            continue
        else:
            cmd.argv.append(_value(child, src))
            cmd.raw.append(src.of(child))
    return cmd


def _gap_words(node: Any, src: _Source) -> list[str]:
    """Words in the text between a redirected statement's parts that no node covers."""
    words: list[str] = []
    parts = [c for c in node.children if c.type != "comment"]
    for left, right in zip(parts, parts[1:]):
        if right.start_byte > left.end_byte:
            words += src.parsed_span(left.end_byte, right.start_byte).split()
    return words


def _simples_in(node: Any, src: _Source) -> list[Command]:
    """Every simple command inside ``node`` (a compound unit's ``inner``)."""
    found: list[Command] = []
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in {"command", "declaration_command", "unset_command"}:
            found.append(_simple(current, src, src.of(current)))
        stack.extend(reversed(current.named_children))
    return found


def _compound(node: Any, src: _Source, text: str) -> Command:
    import shlex

    return Command(argv=["bash", "-c", text], raw=["bash", "-c", shlex.quote(text)],
                   text=text, compound=True, inner=_simples_in(node, src))


def _unit(node: Any, src: _Source, text: str) -> Command:
    """One unit for ``node`` taken whole: a simple command's words, the first command of a
    pipeline or ``||`` list (``piped`` for a pipeline), or a compound unit."""
    kind = node.type
    if kind == "redirected_statement":
        body = node.child_by_field_name("body")
        if body is None:
            return _compound(node, src, text)
        cmd = _unit(body, src, text)
        if not cmd.compound:
            # the grammar leaves a word standing between a command and its here-document
            # out of the tree (``python - <<EOF`` loses the ``-``): the shell reads it as an
            # argument, so it is one
            for word in _gap_words(node, src):
                cmd.argv.append(_unescape_bare(word))
                cmd.raw.append(word)
        for child in node.named_children:
            if child.type == "heredoc_redirect":
                cmd.stdin = _heredoc_body(child, src)
                if any(c.type == "pipeline" for c in child.named_children):
                    cmd.piped = True
            elif child.type == "herestring_redirect":
                cmd.stdin = _herestring(child, src)
        return cmd
    if kind == "pipeline":
        first = node.named_children[0]
        cmd = _unit(first, src, text)
        cmd.piped = True
        return cmd
    if kind == "list":
        first = node.named_children[0]
        while first.type == "list":  # a long ``||`` chain nests to the left: walk, not recurse
            first = first.named_children[0]
        return _unit(first, src, text)
    if kind in {"command", "declaration_command", "unset_command", "variable_assignment",
                "variable_assignments"}:
        return _simple(node, src, text)
    return _compound(node, src, text)


def _emit(node: Any, src: _Source, out: list[Command], background: bool) -> None:
    """Append the units ``node`` runs as: ``&&`` lists split, everything else whole. An
    ``&&`` list nests to the left, one level per command: it is walked with a stack, so
    thousands of ``&&``-joined commands split as a few do."""
    if background:
        cmd = _unit(node, src, f"{src.of(node).strip()} &")
        cmd.background = True
        out.append(cmd)
        return
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "list":
            ops = [c.type for c in current.children if not c.is_named]
            if ops == ["&&"]:
                stack += [current.named_children[-1], current.named_children[0]]
                continue
        if current.type == "redirected_statement":
            heredoc = next((c for c in current.named_children
                            if c.type == "heredoc_redirect"), None)
            if heredoc is not None and _split_heredoc_list(current, heredoc, src, out):
                continue
        out.append(_unit(current, src, src.of(current).strip()))


def _split_heredoc_list(node: Any, heredoc: Any, src: _Source, out: list[Command]) -> bool:
    """``cat <<EOF > f && python f`` (the grammar hangs the rest of the line under the
    here-document): emit the first command with its body, then the rest, when the line
    goes on with ``&&`` or ``;``. False when there is nothing to split."""
    ops = [c for c in heredoc.children if c.type in {"&&", ";"}]
    if not ops:
        return False
    rest = [c for c in heredoc.named_children if c.start_byte > ops[0].start_byte
            and c.type not in {"heredoc_body", "heredoc_end", "heredoc_start", "file_redirect"}]
    end = next((c for c in heredoc.children if c.type == "heredoc_end"), None)
    first_line = src.span(node.start_byte, ops[0].start_byte).rstrip()
    line_end = src.data.find(b"\n", ops[0].start_byte)
    body_and_end = src.span(line_end, end.end_byte) if end is not None and line_end >= 0 else ""
    cmd = _unit(node.child_by_field_name("body") or node, src, first_line + body_and_end)
    if not cmd.compound:
        for word in _gap_words(node, src):  # as in ``_unit``: a word the grammar left out
            cmd.argv.append(_unescape_bare(word))
            cmd.raw.append(word)
    cmd.stdin = _heredoc_body(heredoc, src)
    out.append(cmd)
    for statement in rest:
        _emit(statement, src, out, False)
    return True


def _problem(root: Any, src: _Source) -> str | None:
    """What bash would stop at in the block (None when it parses), and how to mend it."""
    stack = [root]
    first: Any = None
    while stack:
        node = stack.pop()
        if not node.has_error and not node.is_missing:
            continue
        if node.is_missing:
            parent = node.parent
            where = parent.start_byte if parent is not None else node.start_byte
            snippet = src.span(where, where + 40)
            kind = node.type
            if kind in {'"', "'", "`"}:
                return (f"unclosed {kind} quote starting at offset {src.offset(where)}: "
                        f"{snippet!r}; close the quote in the reproducer command")
            if kind == ")" and parent is not None and parent.type == "command_substitution":
                return (f"unclosed $( at offset {src.offset(where)}: {snippet!r}; "
                        "close the command substitution")
            if kind == "heredoc_end":
                start = next((c for c in parent.children if c.type == "heredoc_start"), None)
                delim = src.of(start).strip("'\"") if start is not None else "EOF"
                line = src.text[:src.offset(parent.start_byte)].count("\n") + 1
                return (f"here-document <<{delim} opened on line {line} is never closed; "
                        f"end it with a line holding only {delim}")
            return (f"{kind!r} missing at offset {src.offset(node.start_byte)}: {snippet!r}; "
                    "complete the shell syntax")
        if node.type == "ERROR" and first is None:
            first = node
        stack.extend(reversed(node.children))
    if first is None:
        return None
    inner = first
    while inner.child_count and inner.children[0].type == "ERROR":
        inner = inner.children[0]
    text = src.of(inner).lstrip()
    lead = text[:1]
    offset = src.offset(inner.start_byte) + (len(src.of(inner)) - len(text))
    if lead in {'"', "'", "`"}:
        return (f"unclosed {lead} quote starting at offset {offset}: {text[:40]!r}; "
                "close the quote in the reproducer command")
    line = src.text[:offset].count("\n") + 1
    return (f"bash cannot parse the block at line {line} (offset {offset}): {text[:40]!r}; "
            "give the commands as a shell would run them (output lines belong outside the "
            "block, or after `$ ` prompts)")


def _rewritten(text: str) -> Iterator[_Source]:
    """The block as bash reads it, in the forms the grammar takes (tried in order while the
    grammar still refuses): here-documents reduced to one opener a line, the rest of a line
    after ``;`` moved below the bodies, both (``flow...reproducer.heredoc``)."""
    from flow.workflows.reproduce.reproducer.heredoc import heredoc_lines, one_opener_per_line

    single = one_opener_per_line(text)
    if single is not None:
        yield _Source(text, *single)
    moved = heredoc_lines(text)
    if moved is not None and moved != text:
        yield _Source(moved)
        single = one_opener_per_line(moved)
        if single is not None:
            yield _Source(moved, *single)


# Words bash reserves that can only close or continue a compound command: one standing as a
# command's name is a syntax error in bash, though the grammar takes it for a command.
_CLOSERS = frozenset({"then", "else", "elif", "fi", "do", "done", "esac", "}", "in", "]]"})


def _reserved_word(root: Any, src: _Source) -> str | None:
    """What bash stops at when a command is named by a bare closing keyword (``fi``
    alone), which the grammar lets through; None when no command is."""
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type == "command_name" and node.named_child_count == 1 and \
                node.named_children[0].type == "word":
            word = src.of(node)
            if word in _CLOSERS:
                line = src.text[:src.offset(node.start_byte)].count("\n") + 1
                return (f"bash cannot parse the block at line {line}: {word!r} closes a "
                        f"compound command that was never opened; remove it or open the "
                        "if/for/while/case/{ block it belongs to")
        stack.extend(reversed(node.children))
    return None


def split_commands(text: str) -> list[Command]:
    """Split shell text into the units bash runs, in order. Never returns empty commands.
    Raises ReproducerParseError when bash could not parse the text.

    The grammar refuses a here-document whose line goes on after a ``;`` (``cat <<EOF;
    python f.py``, ``cat <<A; cat <<B``), which bash runs: such a block is read as bash
    reads it, the rest of the line after the here-documents' bodies (``heredoc_lines``)."""
    if not text.strip():
        return []
    src = _Source(text)
    tree = _parser().parse(src.data)
    problem = _problem(tree.root_node, src)
    if problem is not None:
        for other in _rewritten(text):
            other_tree = _parser().parse(other.parsed)
            if _problem(other_tree.root_node, other) is None:
                src, tree, problem = other, other_tree, None
                break
    if problem is None:
        problem = _reserved_word(tree.root_node, src)
    if problem is not None:
        raise ReproducerParseError(problem, text=text)
    out: list[Command] = []
    children = tree.root_node.children
    covered = -1  # a statement that ends before this byte was run whole with a tangled range
    for i, node in enumerate(children):
        if not node.is_named or node.type == "comment" or node.start_byte < covered:
            continue
        tangle = next(((a, b) for a, b in src.tangled
                       if node.start_byte < b and a < node.end_byte), None)
        if tangle is not None:
            covered = max(node.end_byte, tangle[1])
            out.append(_compound(node, src, src.span(node.start_byte, covered).strip()))
            continue
        background = i + 1 < len(children) and children[i + 1].type == "&"
        _emit(node, src, out, background)
    return [c for c in out if c.argv or c.env]
