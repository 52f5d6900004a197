"""Path helpers shared by the tracer: glob matching with ``**`` and module naming.

``fnmatch`` lets ``*`` cross ``/``, which would make ``docker/*.py`` match
``docker/sub/x.py``; the allowlist needs the shell meaning, so we translate globs here.
"""

from __future__ import annotations

import functools
import posixpath
import re


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")  # zero or more whole directories
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "{" and "}" in pattern[i:]:  # {a,b}: one of the alternatives
            end = pattern.index("}", i)
            alts = pattern[i + 1:end].split(",")
            out.append("(?:" + "|".join(_glob_regex(a).pattern[:-2] for a in alts) + ")")
            i = end + 1
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        else:
            out.append(re.escape(ch))
        i += 1
    return re.compile("".join(out) + r"\Z")


def glob_match(path: str, pattern: str) -> bool:
    """True when the repo-relative POSIX ``path`` matches ``pattern``.

    ``*`` and ``?`` stay within one path segment, ``**`` spans directories, ``{a,b}`` is
    either alternative, and a pattern ending in ``/`` matches everything below that
    directory. Never raises.
    """
    if pattern.endswith("/"):
        pattern += "**"
    return _glob_regex(pattern).match(path) is not None


def any_match(path: str, patterns: list[str] | tuple[str, ...]) -> bool:
    """True when ``path`` matches at least one of ``patterns``."""
    return any(glob_match(path, p) for p in patterns)


def module_name(path: str, roots: list[str] | tuple[str, ...]) -> str | None:
    """The dotted module name of a ``.py`` file under one of ``roots``, else None.

    ``pkg/__init__.py`` names the package ``pkg``; ``"."`` is the repository root.
    """
    if not path.endswith(".py"):
        return None
    for root in roots:
        root = root.strip("/")
        if root in ("", "."):
            rel = path
        elif path.startswith(root + "/"):
            rel = path[len(root) + 1:]
        else:
            continue
        stem = rel[:-3]
        if stem.endswith("/__init__"):
            stem = stem[: -len("/__init__")]
        elif stem == "__init__":
            return None
        if "-" in stem or " " in stem:
            return None  # not importable under this root
        return stem.replace("/", ".")
    return None


def norm(path: str) -> str:
    """Normalise a repo-relative path (``./a/../b`` -> ``b``); '' when it leaves the repo."""
    out = posixpath.normpath(path)
    if out.startswith("../") or out == ".." or out.startswith("/"):
        return ""
    return "" if out == "." else out
