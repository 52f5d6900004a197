"""The git adapter of the tracer: changed files since a merge base, and tracked files.

Every command is an argument list (no shell); ``base`` comes from a user or an agent, so it
is refused when it starts with ``-`` rather than passed where git would read an option.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from flow.targeted.errors import GitError

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

    def changed(self, repo_dir: Path, base: str) -> list[ChangedFile]: ...

    def tracked(self, repo_dir: Path) -> list[str]: ...


def _git(repo_dir: Path, *args: str) -> bytes:
    from flow import proc

    got = proc.capture(["git", "-C", str(repo_dir), *args], timeout=120)
    if got.timed_out or got.code == proc.NOT_FOUND:
        raise GitError(f"git {args[0]} failed in {repo_dir}: {got.problem}",
                       "check that git is installed and the directory is a repository")
    if not got.ok:
        raise GitError(f"git {' '.join(args[:2])} failed in {repo_dir}: {got.problem}",
                       "check --base names a revision that exists here (fetch it first)")
    return got.stdout


class Git:
    """The real git, run through the process runner."""

    def changed(self, repo_dir: Path, base: str) -> list[ChangedFile]:
        """Changed files between the merge base of ``base`` and HEAD, renames detected.

        Raises GitError when ``base`` is refused or unknown.
        """
        if not base or base.startswith("-"):
            raise GitError(f"refusing base revision {base!r}",
                           "pass a revision name or SHA such as origin/main")
        rng = f"{base}...HEAD"
        status = _git(repo_dir, "diff", "--name-status", "-z", "-M", rng, "--")
        numstat = _git(repo_dir, "diff", "--numstat", "-z", "-M", rng, "--")
        return parse_name_status(status, parse_numstat(numstat))

    def tracked(self, repo_dir: Path) -> list[str]:
        """Every path git tracks at HEAD's working tree (``git ls-files``)."""
        out = _git(repo_dir, "ls-files", "-z")
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


def parse_name_status(raw: bytes, adds: dict[str, bool | None]) -> list[ChangedFile]:
    """Parse ``git diff --name-status -z`` output into ChangedFile rows, sorted by path."""
    rows: list[ChangedFile] = []
    for rec in _records(raw, lambda code: 2 if code[0] in "RC" else 1):
        kind, path = rec[0][0], rec[-1]
        rows.append(ChangedFile(path=path, status=kind,  # type: ignore[arg-type]
                                old_path=rec[1] if len(rec) == 3 else None,
                                adds_only=adds.get(path)))
    return sorted(rows, key=lambda r: r.path)
