"""Errors of the targeted-CI core; each quotes the bad value and says how to mend it."""

from __future__ import annotations

from flow.core.errors import OrchestratorError


class TargetedError(OrchestratorError):
    """Base of the targeted-CI errors."""

    code = "targeted"


class ConfigError(TargetedError):
    """A targeted-CI config (pyproject table or profile) is missing or invalid."""

    code = "targeted_config"


class GitError(TargetedError):
    """A git command the tracer needs failed (bad base revision, not a repository)."""

    code = "targeted_git"
