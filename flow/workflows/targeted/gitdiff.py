"""The git adapter of the tracer: changed files since a merge base, and tracked files.

Every command is an argument list (no shell); ``base`` comes from a user or an agent, so it
is refused when it starts with ``-`` rather than passed where git would read an option.
"""

from __future__ import annotations

import re
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from flow.workflows.targeted.errors import GitError

Status = Literal["A", "M", "D", "R", "C", "T", "U", "X"]


class ChangedFile(BaseModel):
    """One changed path of ``git diff <base>...HEAD``; ``old_path`` is set for renames/copies.

    ``adds_only`` is True when the diff only adds lines there (no deletions), the seed's
    "the diff there only adds something new" case; None for binary files.
    """

    model_config = ConfigDict(extra="forbid")

    path: str
    status: Status
    old_path: str | None = None
    adds_only: bool | None = None


class GitReader(Protocol):
    """What the tracer needs from git; tests may pass a reader over a prepared repo."""

    def changed(self, repo_dir: Path, base: str, worktree: bool = False) -> list[ChangedFile]: ...

    def tracked(self, repo_dir: Path, worktree: bool = False) -> list[str]: ...

    def uncommitted(self, repo_dir: Path) -> list[str]: ...

    def changed_lines(self, repo_dir: Path, base: str, paths: list[str],
                      worktree: bool = False) -> dict[str, set[int]]: ...


def _git(repo_dir: Path, *args: str, hint: str = "") -> bytes:
    from flow.core import proc

    got = proc.capture(["git", "-C", str(repo_dir), *args], timeout=120)
    if got.timed_out or got.code == proc.NOT_FOUND:
        raise GitError(f"git {args[0]} failed in {repo_dir}: {got.problem}",
                       "check that git is installed and the directory is a repository")
    if not got.ok:
        if not hint and "no merge base" in got.stderr:
            hint = (f"the base shares no history with HEAD in {repo_dir}: fetch the PR's "
                    "base branch (git fetch origin main) or pass a commit of this branch's "
                    "history as --base")
        raise GitError(f"git {' '.join(args[:2])} failed in {repo_dir}: {got.problem}",
                       hint or "check --base names a revision that exists here (fetch it first)")
    return got.stdout


class Git:
    """The real git, run through the process runner."""

    def changed(self, repo_dir: Path, base: str, worktree: bool = False) -> list[ChangedFile]:
        """Changed files between the merge base of ``base`` and HEAD (with ``worktree``: and
        the work tree, untracked files included as added), renames detected.

        Raises GitError when ``base`` is refused or unknown, or has no merge base with HEAD.
        """
        if not base or base.startswith("-"):
            raise GitError(f"refusing base revision {base!r}",
                           "pass a revision name or SHA such as origin/main")
        if worktree:
            mb = _git(repo_dir, "merge-base", base, "HEAD", hint=(
                f"{base!r} shares no history with HEAD here: fetch it (git fetch origin) "
                "or pass a commit of this branch's history")).decode().strip()
            rng = [mb]
        else:
            rng = [f"{base}...HEAD"]
        status = _git(repo_dir, "diff", "--name-status", "-z", "-M", *rng, "--")
        numstat = _git(repo_dir, "diff", "--numstat", "-z", "-M", *rng, "--")
        rows = parse_name_status(status, parse_numstat(numstat))
        if worktree:
            seen = {r.path for r in rows}
            rows += [ChangedFile(path=p, status="A", adds_only=True)
                     for p in self._untracked(repo_dir) if p not in seen]
            rows.sort(key=lambda r: r.path)
        return rows

    def tracked(self, repo_dir: Path, worktree: bool = False) -> list[str]:
        """Every path git tracks (``git ls-files``); with ``worktree`` the untracked files
        that are not ignored too."""
        out = _git(repo_dir, "ls-files", "-z")
        paths = [rec[0] for rec in _records(out, lambda _: 0)]
        return paths + self._untracked(repo_dir) if worktree else paths

    def changed_lines(self, repo_dir: Path, base: str, paths: list[str],
                      worktree: bool = False) -> dict[str, set[int]]:
        """New-side line numbers each of ``paths`` changes since the merge base (a deletion
        counts as the line it follows). Raises GitError like ``changed``."""
        if not paths:
            return {}
        rng = [_git(repo_dir, "merge-base", base, "HEAD").decode().strip()] if worktree \
            else [f"{base}...HEAD"]
        out = _git(repo_dir, "diff", "-U0", "--no-color", "--no-ext-diff", *rng, "--", *paths)
        return parse_hunks(out)

    def uncommitted(self, repo_dir: Path) -> list[str]:
        """Paths with changes not committed: modified, staged or untracked (not ignored)."""
        out = _git(repo_dir, "status", "--porcelain", "-z", "--untracked-files=all")
        paths: list[str] = []
        skip = False
        for rec in out.decode("utf-8", "surrogateescape").split("\0"):
            if skip:  # the old path of a rename
                skip = False
                continue
            if len(rec) > 3:
                paths.append(rec[3:])
                skip = rec[0] in "RC"
        return sorted(set(paths))

    def _untracked(self, repo_dir: Path) -> list[str]:
        out = _git(repo_dir, "ls-files", "-z", "--others", "--exclude-standard")
        return [rec[0] for rec in _records(out, lambda _: 0)]


def _records(raw: bytes, tail: Callable[[str], int]) -> Iterator[list[str]]:
    """Split ``-z`` output into records: a head field and the ``tail(head)`` fields after it
    (git puts rename paths in fields of their own). A truncated last record is dropped."""
    parts = raw.decode("utf-8", errors="surrogateescape").split("\0")
    i = 0
    while i < len(parts):
        if not parts[i]:
            i += 1
            continue
        end = i + 1 + tail(parts[i])
        if end <= len(parts):
            yield parts[i:end]
        i = end


def parse_numstat(raw: bytes) -> dict[str, bool | None]:
    """Map each new path to "adds only" from ``git diff --numstat -z`` output."""
    out: dict[str, bool | None] = {}
    # A rename's head is "added\tdeleted\t": its old and new paths follow as two fields.
    for rec in _records(raw, lambda head: 2 if head.split("\t", 2)[2:] == [""] else 0):
        _, deleted, path = (rec[0].split("\t", 2) + ["", ""])[:3]
        out[path or rec[-1]] = None if deleted == "-" else deleted == "0"
    return out


_HUNK = re.compile(rb"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_FILE = re.compile(rb"^\+\+\+ b/(.*)$")


def parse_hunks(raw: bytes) -> dict[str, set[int]]:
    """``{path: new-side changed lines}`` from ``git diff -U0`` output."""
    out: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in raw.splitlines():
        m = _FILE.match(line)
        if m:
            current = out.setdefault(m.group(1).decode("utf-8", "surrogateescape"), set())
            continue
        h = _HUNK.match(line)
        if h and current is not None:
            start, count = int(h.group(1)), int(h.group(2) or b"1")
            current.update(range(start, start + count) if count else {start})
    return out


def parse_name_status(raw: bytes, adds: dict[str, bool | None]) -> list[ChangedFile]:
    """Parse ``git diff --name-status -z`` output into ChangedFile rows, sorted by path."""
    rows: list[ChangedFile] = []
    for rec in _records(raw, lambda code: 2 if code[0] in "RC" else 1):
        kind, path = rec[0][0], rec[-1]
        rows.append(ChangedFile(path=path, status=kind,  # type: ignore[arg-type]
                                old_path=rec[1] if len(rec) == 3 else None,
                                adds_only=adds.get(path)))
    return sorted(rows, key=lambda r: r.path)
