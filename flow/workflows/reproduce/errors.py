"""The exception tree of the reproduce core, a branch of ``flow.core.errors.OrchestratorError``.

Every message quotes the bad value and ends with how to mend it; each class carries a
``code`` and a default ``hint``, so one that escapes a step reaches the user as
``status: error`` (exit 2) with both, never as exit 1 "bug". The steps turn the ones that
describe the environment (a marker that is not there, an artifact that will not download)
into CANNOT_VERIFY blockers themselves; what is left to escape is bad input (a profile
edited into an invalid one between two calls).
"""
from __future__ import annotations

from flow.core.errors import OrchestratorError


class ReproduceError(OrchestratorError):
    """Base of every error raised by ``flow.workflows.reproduce``."""

    code = "reproduce"
    default_hint = "see the message; fix the input it names and run again"

    def __init__(self, message: str, hint: str = "", **details: str) -> None:
        super().__init__(message, hint or self.default_hint, **details)


class ReproducerParseError(ReproduceError):
    """The reproducer text cannot be split into commands (e.g. an unclosed quote)."""

    code = "reproducer_unparsable"
    default_hint = "close the open quote, backtick or here-doc in the reproducer and run again"

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message)
        self.text = text  # not in details: the whole block would be printed with the error


class SkipMarkerNotFound(ReproduceError):
    """The target test, or an XPU skip decorator on it, is not in the source."""

    code = "skip_marker_not_found"
    default_hint = "give the node id of the test as file.py::Class::test"

    def __init__(self, message: str, *, target: str) -> None:
        super().__init__(message, target=target)
        self.target = target


class InTreeImportTrap(ReproduceError):
    """A chosen working directory would import the package from a source tree."""

    code = "in_tree_import"
    default_hint = "give the test by an absolute path, or run it from outside the source tree"

    def __init__(self, message: str, *, cwd: str, shadow: str) -> None:
        super().__init__(message, cwd=cwd, shadow=shadow)
        self.cwd = cwd
        self.shadow = shadow


class ProfileError(ReproduceError):
    """A reproduce profile is missing or does not validate."""

    code = "bad_profile"
    default_hint = "pass --profile local or --profile pytorch-xpu, or fix the profile file named"

    def __init__(self, message: str, *, profile: str) -> None:
        super().__init__(message, profile=profile)
        self.profile = profile


class ArtifactError(ReproduceError):
    """An artifact could not be downloaded or holds no wheel."""

    code = "artifact"
    default_hint = "check the run id and build_env of the artifact URL, or retry later"

    def __init__(self, message: str, *, url: str, blocker: str) -> None:
        super().__init__(message, url=url, blocker=blocker)
        self.url = url
        self.blocker = blocker


class UnresolvedNodeId(ReproduceError):
    """A bare ``Class::test`` node id is defined in no single file of the tree."""

    code = "unresolved_node_id"
    default_hint = "give the reproducer as path/test_file.py::Class::test"

    def __init__(self, message: str, *, node_id: str) -> None:
        super().__init__(message, node_id=node_id)
        self.node_id = node_id
