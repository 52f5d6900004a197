"""What counts as a secret and how it is kept out of sight (the seeds' "secrets never reach
output, state or logs", ``docs/security.md``).

The names: ``GITHUB_TOKEN``, ``GH_TOKEN`` and every setting matching ``*TOKEN*``,
``*SECRET*``, ``*PASSWORD*``, ``*PASSWD*``, ``*PASSPHRASE*``, ``*_PASS``, ``*KEY*``
(``ANTHROPIC_API_KEY``, ``AWS_ACCESS_KEY_ID``) or ``*CREDENTIAL*`` (case-insensitive), plus
the patterns in ``ORCHESTRATOR_SECRET_ENV``; ``ORCHESTRATOR_PASS_ENV`` (comma-separated names
or patterns) names the ones a child may be let see, e.g. ``ORCHESTRATOR_PASS_ENV=GPG_KEY``.
The runner (``flow.core.proc``) keeps them out of children's environments and masks the
let-through ones in logs.

``redact`` masks two kinds of secret in text, each replaced by ``***``:

- by value: the values of the secret settings of this process's environment (at least
  ``MASK_MIN`` characters; a setting that names a place, ``*_FILE``, ``*_PATH``, ``*_DIR``,
  or whose value is an absolute path that exists, holds no secret), as they are, stripped,
  as ``repr`` and JSON quote them, and every value ``remember`` was given (a token read from
  ``ORCHESTRATOR_GITHUB_TOKEN_FILE``); each as a whole word (``value_pattern``);
- by shape (``RULES``, whatever the environment): private-key blocks, GitHub tokens, AWS
  access key ids and secret keys, ``Authorization`` headers, bearer tokens, URL userinfo,
  ``NAME=value`` where the name ends in a secret word.

The door every JSON object leaves by is ``flow.core.jsonio.dumps`` (``needs_mask``, then
``redact_tree``): what the program prints or writes (stdout, state, audit log, verdicts,
reports, the cached spec, MCP answers) is masked there; text files, person-readable text and
children's logs pass ``redact`` / ``redact_bytes`` (docs/security.md lists every door). Standard
library only; the patterns are compiled once, and a JSON document is walked only when a
quick scan of its bytes finds something to mask.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

SECRETS_ENV = "ORCHESTRATOR_SECRET_ENV"
PASS_ENV = "ORCHESTRATOR_PASS_ENV"
SECRET_PATTERNS = ("GITHUB_TOKEN", "GH_TOKEN", "*TOKEN*", "*SECRET*", "*PASSWORD*", "*PASSWD*",
                   "*PASSPHRASE*", "*_PASS", "*KEY*", "*CREDENTIAL*")
PLACE_SUFFIXES = ("_FILE", "_PATH", "_DIR", "_DIRS", "_SOCK", "_HOME")
MASK_MIN = 8  # a shorter secret value would mask ordinary words
MASK = "***"  # what a secret is shown as (here and in the runner's logs)

_KEY_KINDS = r"(?:[A-Z0-9]{1,12} ){0,3}"
_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "APKA",
                 "AROA", "ASCA")
_SECRET_WORD = (r"(?:password|passwd|passphrase|secret|token|api_?key|access_?key|secret_?key"
                r"|private_?key|client_?secret|credentials?|auth_?token)")

_EQ_WORDS = ("password", "passwd", "passphrase", "secret", "token", "apikey", "api_key",
             "accesskey", "access_key", "secretkey", "secret_key", "privatekey", "private_key",
             "credential", "credentials", "authtoken", "auth_token")


def _any(*marks: str, lower: bool = False) -> Any:
    """A rule's quick test: one of ``marks`` is in the text (its lower-cased copy)."""
    both = {str: marks, bytes: tuple(m.encode() for m in marks)}
    return lambda text, low: any(m in (low if lower else text)
                                 for m in both[str if isinstance(text, str) else bytes])


def _url_mark(text: Any, low: Any) -> bool:
    return ("://" if isinstance(text, str) else b"://") in text and (
        "@" if isinstance(text, str) else b"@") in text


def _assign_mark(text: Any, low: Any) -> bool:
    eq, words = ("=", _EQ_WORDS) if isinstance(text, str) else (
        b"=", tuple(w.encode() for w in _EQ_WORDS))
    at = low.find(eq)
    while at >= 0:
        if low[max(0, at - 20):at].endswith(words):
            return True
        at = low.find(eq, at + 1)
    return False


# (name, quick test, pattern): the shapes ``redact`` masks whatever the environment holds;
# docs/security.md lists them. Each keeps its context (a header's name, a URL's user) in its
# one named group and masks the secret itself. A rule's pattern runs only on text that passes
# its quick test: literals any match holds (none holds a character JSON escapes, so the test
# holds for a serialized JSON document too). Patterns tolerate JSON escaping (``\"``,
# ``\n``), so text that is a JSON document is masked in place as well.
RULES = (
    ("private key block", _any("PRIVATE KEY"),
     r"-----BEGIN (?P<pem>" + _KEY_KINDS + r"PRIVATE KEY(?: BLOCK)?)-----"
     r"(?:(?s:.*?)-----END (?P=pem)-----|[A-Za-z0-9+/=\s:,.|\\-]*)"),
    ("PuTTY private key", _any("Private-Lines"),
     r"(?P<putty>Private-Lines:\s*\d+)(?:[\s|]+[A-Za-z0-9+/=]{4,}(?![^\s|]))+"),
    ("Authorization header", _any("authorization", lower=True),
     r"(?P<auth>(?i:(?:proxy-)?authorization)\\?[\"']?\s*[:=]\s*\\?[\"']?"
     r"(?:(?i:bearer|basic|token|digest|bot|negotiate|ntlm)\s+)?)[^\s\"'\\,;|]+"),
    ("bearer or token credential", _any("bearer ", "token ", lower=True),
     r"(?P<bearer>(?<![A-Za-z])(?i:bearer|token) +)[A-Za-z0-9._~+/=-]{16,}"),
    ("GitHub token", _any("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
     r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{20,255})"),
    ("AWS access key id (and a secret key after it)", _any(*_AWS_PREFIXES),
     r"(?<![A-Z0-9])(?:" + "|".join(_AWS_PREFIXES) + r")[A-Z0-9]{16}(?![A-Z0-9])"
     r"(?:[\s,:;=\"'|\\]{1,20}[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=]))?"),
    ("AWS secret access key", _any("aws_secret", "awssecret", "secret_access", "secretaccess",
                                   lower=True),
     r"(?P<aws>(?i:aws_?secret_?(?:access_?)?key|secret_?access_?key)"
     r"\\?[\"']?\s*[:=]\s*\\?[\"']?)[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"),
    ("URL userinfo", _url_mark,
     r"(?P<url>(?<![A-Za-z0-9+.-])[A-Za-z][A-Za-z0-9+.-]{0,30}://"
     r"[^\s/:@?#\"'<>|\\]*:)[^\s/@?#\"'<>|\\]+(?=@)"),
    ("NAME=value of a secret name", _assign_mark,
     r"(?P<assign>(?i:" + _SECRET_WORD + r")=\\?[\"']?)[^\s\"'\\&;,|<>()\[\]{}]{6,}"),
)
_COMPILED = tuple((mark, re.compile(pattern)) for _, mark, pattern in RULES)


def _marked(data: Any) -> bool:
    """Whether ``data`` (str or bytes) passes a rule's quick test; False: no rule matches."""
    low = data.lower()
    return any(mark(data, low) for mark, _ in _COMPILED)


_EXTRA: set[str] = set()


def remember(value: str) -> None:
    """Mask ``value`` from now on in this process, as a secret setting's value is (a token
    read from a file rather than the environment)."""
    if len(value.strip()) >= MASK_MIN:
        _EXTRA.add(value.strip())


def secret_patterns(value: str | None) -> list[str]:
    """The name patterns of a comma-separated setting (``ORCHESTRATOR_SECRET_ENV``)."""
    return [p.strip() for p in (value or "").split(",") if p.strip()]


def is_secret(name: str, deny: Iterable[str] = ()) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, p.upper()) for p in (*SECRET_PATTERNS, *deny))


def secret_names(env: Mapping[str, str]) -> list[str]:
    """The names in ``env`` that are secrets (``is_secret``, ``ORCHESTRATOR_SECRET_ENV`` read
    from this process) with a value long enough to mask. ``redact`` masks their values in
    what is read back; in a child's scrubbed environment they are the ones let through
    (``allow``, ``ORCHESTRATOR_PASS_ENV``), which its log must not keep either."""
    deny = secret_patterns(os.environ.get(SECRETS_ENV))
    return sorted(k for k, v in env.items() if is_secret(k, deny) and len(v) >= MASK_MIN)


def redact(text: str, env: Mapping[str, str] | None = None) -> str:
    """``text`` with the secret values of ``env`` (default: this process's environment) and
    every secret shape (``RULES``) replaced by ``***``."""
    return _mask(text, _values(env))


def redact_tree(obj: Any, env: Mapping[str, str] | None = None) -> Any:
    """``obj`` (JSON-like: dicts, lists, strings) with every string, keys too, ``redact``-ed."""
    values = _values(env)

    def walk(o: Any) -> Any:
        if isinstance(o, str):
            return _mask(o, values)
        if isinstance(o, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in o.items()}
        if isinstance(o, (list, tuple)):
            return [walk(v) for v in o]
        return o
    return walk(obj)


def needs_mask(data: bytes, env: Mapping[str, str] | None = None) -> bool:
    """Whether serialized JSON ``data`` may hold a secret: a rule's mark or a secret value
    (also as JSON escapes it). False means it holds none."""
    if _marked(data):
        return True
    return any(v in data for v in _value_bytes(env))


def secret_values(env: Mapping[str, str] | None = None) -> list[str]:
    """The secret values ``redact`` masks (every form), for a byte-stream masker."""
    return list(_values(env))


def redact_bytes(data: bytes) -> bytes:
    """``data`` (a child's output, any encoding) with every secret shape (``RULES``) masked;
    bytes that are not UTF-8 pass through as they are."""
    if not _marked(data):
        return data
    return _mask(data.decode("utf-8", "surrogateescape"), ()).encode("utf-8", "surrogateescape")


def masker(env: Mapping[str, str] | None = None, cache: int = 65536) -> Any:
    """``redact`` for a long-lived reader (the dashboard): the secret values of ``env``
    (default: this process's, as it is now) are found once, and each distinct text is
    masked once (an LRU of ``cache`` texts)."""
    from functools import lru_cache

    values = _values(env)

    @lru_cache(maxsize=cache)
    def mask(text: str) -> str:
        return _mask(text, values)
    return mask


class MaskedLines:
    """A text stream that writes whole lines to ``stream`` ``redact``-ed: a server's stderr
    (``serve``, ``mcp``), where libraries it does not own (uvicorn, the MCP SDK, Python's
    last-resort log handler and traceback printer) write what they write. The text of a
    write is held up to its last newline (a secret written in pieces is masked whole, and a
    log record or traceback written at once is masked as one text), and a private key block
    until its END line (up to ``HOLD_MAX`` characters); ``flush`` writes the held rest,
    masked, too. ``writelines`` and the binary ``buffer`` (bytes decoded incrementally with
    the stream's encoding) go through the same held text, in the order they were written."""

    HOLD_MAX = 65536  # the most text held for a key block whose END has not come yet

    def __init__(self, stream: Any) -> None:
        import threading

        self.stream = stream
        self._held = ""
        self._decoder: Any = None  # bytes written to ``buffer``: made on the first
        self._lock = threading.Lock()  # the servers write from their worker threads too

    def write(self, text: str) -> int:
        with self._lock:
            self._hold(text)
        return len(text)

    def write_bytes(self, data: bytes | bytearray | memoryview) -> int:
        """``buffer.write``: decoded with the stream's encoding (a character split between
        writes waits for its rest), then held and masked as text is."""
        import codecs

        with self._lock:
            if self._decoder is None:
                encoding = getattr(self.stream, "encoding", None) or "utf-8"
                self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
            self._hold(self._decoder.decode(bytes(data)))
        return len(data)

    def _hold(self, text: str) -> None:
        self._held += text
        cut = self._held.rfind("\n") + 1
        begin = self._held.rfind("-----BEGIN ", 0, cut)
        if begin >= 0 and "PRIVATE KEY" in self._held[begin:begin + 80] and \
                "-----END " not in self._held[begin:] and len(self._held) < self.HOLD_MAX:
            cut = self._held.rfind("\n", 0, begin) + 1  # the block's lines go out together
        if cut:
            done, self._held = self._held[:cut], self._held[cut:]
            self.stream.write(redact(done))

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with self._lock:
            if self._held:
                self.stream.write(redact(self._held))
                self._held = ""
            self.stream.flush()

    @property
    def buffer(self) -> _MaskedBuffer:
        """The binary side (``sys.stderr.buffer.write(b"...")``), masked like the text."""
        return _MaskedBuffer(self)

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding...: the stream's own
        return getattr(self.stream, name)


class _MaskedBuffer:
    """``MaskedLines.buffer``: every write goes through ``MaskedLines.write_bytes``."""

    def __init__(self, owner: MaskedLines) -> None:
        self.owner = owner

    def write(self, data: bytes | bytearray | memoryview) -> int:
        return self.owner.write_bytes(data)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.owner.flush()

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, ...: the stream's buffer's own
        return getattr(self.owner.stream.buffer, name)


def mask_stderr() -> None:
    """From now on this process's ``sys.stderr`` is masked (``MaskedLines``): called by a
    server before the libraries it runs set up their logging, so their handlers write
    through it."""
    import sys

    if not isinstance(sys.stderr, MaskedLines):
        sys.stderr = MaskedLines(sys.stderr)


# -- the values ------------------------------------------------------------------------------

_memo: dict[tuple[tuple[str, str], ...], tuple[list[str], list[bytes]]] = {}


def _secret_items(env: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    deny = secret_patterns(os.environ.get(SECRETS_ENV))
    names = _name_regex(tuple(deny))
    return tuple(sorted((k, v) for k, v in env.items()
                        if len(v) >= MASK_MIN and names.fullmatch(k.upper())))


_names_memo: dict[tuple[str, ...], re.Pattern[str]] = {}


def _name_regex(deny: tuple[str, ...]) -> re.Pattern[str]:
    found = _names_memo.get(deny)
    if found is None:
        found = re.compile("|".join(fnmatch.translate(p.upper())
                                    for p in (*SECRET_PATTERNS, *deny)))
        _names_memo[deny] = found
    return found


def _forms(env: Mapping[str, str] | None) -> tuple[list[str], list[bytes]]:
    items = _secret_items(os.environ if env is None else env)
    items += tuple(("", v) for v in sorted(_EXTRA))
    found = _memo.get(items)
    if found is not None:
        return found
    forms: set[str] = set()
    for name, value in items:
        if name and (name.upper().endswith(PLACE_SUFFIXES) or _is_place(value)):
            continue
        forms.update(f for f in (value, value.strip(), repr(value)[1:-1], *_json_forms(value))
                     if len(f) >= MASK_MIN)
    texts = sorted(forms, key=len, reverse=True)
    found = (texts, [t.encode("utf-8", "surrogatepass") for t in texts])
    if len(_memo) > 64:
        _memo.clear()
    _memo[items] = found
    return found


def _json_forms(value: str) -> tuple[str, ...]:
    """``value`` as a JSON string spells it (quotes, backslashes, control characters and, with
    ASCII output, the rest escaped); nothing when it needs no escape (the usual case, which
    imports no ``json``)."""
    if value.isascii() and value.isprintable() and '"' not in value and "\\" not in value:
        return ()
    import json

    return json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1]


def _is_place(value: str) -> bool:
    """An absolute path that exists names where a secret is kept, not the secret."""
    return value.startswith("/") and "\n" not in value and os.path.exists(value)


def _values(env: Mapping[str, str] | None) -> list[str]:
    return _forms(env)[0]


def _value_bytes(env: Mapping[str, str] | None) -> list[bytes]:
    return _forms(env)[1]


# -- masking ---------------------------------------------------------------------------------

def _keep(match: re.Match[str]) -> str:
    """A rule's match masked: its named group (the context) kept, the secret ``***``; a
    private-key block keeps its BEGIN and END lines."""
    groups = match.groupdict()
    kind = groups.get("pem")
    if kind is not None:
        end = f"-----END {kind}-----"
        return f"-----BEGIN {kind}-----{MASK}{end if match.group(0).endswith(end) else ''}"
    kept = next((v for v in groups.values() if v is not None), "")
    return kept + MASK


def value_pattern(values: Iterable[Any]) -> Any:
    """One compiled pattern of secret ``values`` (all str or all bytes; longest first), each
    a whole word: a value that begins (ends) with a letter or digit does not match right
    after (before) one, so ``PGPASSWORD=postgres`` masks ``postgres`` but not the scheme of
    ``postgresql://``. None for no values."""
    values = sorted(set(values), key=len, reverse=True)
    if not values:
        return None
    is_text = isinstance(values[0], str)

    def part(value: Any) -> str:
        spelled = value if is_text else value.decode("latin-1")  # one character per byte
        core = re.escape(spelled)
        if spelled[:1].isascii() and spelled[:1].isalnum():
            core = "(?<![A-Za-z0-9])" + core
        if spelled[-1:].isascii() and spelled[-1:].isalnum():
            core += "(?![A-Za-z0-9])"
        return core
    source = "|".join(part(v) for v in values)
    return re.compile(source if is_text else source.encode("latin-1"))


_patterns: dict[tuple[Any, ...], Any] = {}


def _mask(text: str, values: Iterable[str]) -> str:
    present = tuple(v for v in values if v in text)
    if present:
        pattern = _patterns.get(present)
        if pattern is None:
            if len(_patterns) > 256:
                _patterns.clear()
            pattern = _patterns[present] = value_pattern(present)
        text = pattern.sub(MASK, text)
    low = text.lower()
    for mark, pattern in _COMPILED:
        if mark(text, low):
            text = pattern.sub(_keep, text)
    return text
