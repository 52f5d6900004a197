"""The exception tree of the reproduce core.

Every message quotes the bad value and ends with how to mend it.
"""
from __future__ import annotations


class ReproduceError(Exception):
    """Base of every error raised by ``flow.reproduce``."""


class ReproducerParseError(ReproduceError):
    """The reproducer text cannot be split into commands (e.g. an unclosed quote)."""

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message)
        self.text = text


class SkipMarkerNotFound(ReproduceError):
    """The target test, or an XPU skip decorator on it, is not in the source."""

    def __init__(self, message: str, *, target: str) -> None:
        super().__init__(message)
        self.target = target


class InTreeImportTrap(ReproduceError):
    """A chosen working directory would import the package from a source tree."""

    def __init__(self, message: str, *, cwd: str, shadow: str) -> None:
        super().__init__(message)
        self.cwd = cwd
        self.shadow = shadow


class ProfileError(ReproduceError):
    """A reproduce profile is missing or does not validate."""

    def __init__(self, message: str, *, profile: str) -> None:
        super().__init__(message)
        self.profile = profile


class ArtifactError(ReproduceError):
    """An artifact could not be downloaded or holds no wheel."""

    def __init__(self, message: str, *, url: str, blocker: str) -> None:
        super().__init__(message)
        self.url = url
        self.blocker = blocker


class UnresolvedNodeId(ReproduceError):
    """A bare ``Class::test`` node id is defined in no single file of the tree."""

    def __init__(self, message: str, *, node_id: str) -> None:
        super().__init__(message)
        self.node_id = node_id
