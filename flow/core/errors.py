"""The exception tree. Every error the CLI reports carries a code, a message and a hint.

Messages quote the offending value; hints say how to mend it. Exit codes follow the harness
contract: 2 bad input or usage, 3 busy, 4 state cannot be loaded, 1 a bug.
"""

from __future__ import annotations

from typing import Any


class OrchestratorError(Exception):
    """Base of every error the orchestrator reports as ``status: error``."""

    code = "error"
    exit_code = 2

    def __init__(self, message: str, hint: str = "", *, code: str | None = None,
                 **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        if code is not None:
            self.code = code
        self.details = details

    def to_json(self) -> dict[str, Any]:
        """The error as JSON, secrets masked (``flow.core.redact``): a message may quote a
        library's exception text, which may quote a token."""
        from flow.core.redact import redact_tree

        out: dict[str, Any] = {"code": self.code, "message": self.message, "hint": self.hint}
        out.update(self.details)
        return dict(redact_tree(out))


class UsageError(OrchestratorError):
    """The command line is wrong (unknown flag, missing argument, bad combination)."""

    code = "usage"


class FeedRejected(OrchestratorError):
    """A feed was refused; the state is untouched."""

    code = "feed_rejected"


class AnswerRejected(OrchestratorError):
    """An ``--answer`` did not match the open question; the state is untouched."""

    code = "answer_rejected"


class FlowNotFound(OrchestratorError):
    """No flow with that id (or for that file) exists in the workspace."""

    code = "flow_not_found"


class NotBuilt(OrchestratorError):
    """The workflow asked for is not available in this installation."""

    code = "not_built"


class WorkflowInputError(OrchestratorError):
    """A workflow refused its inputs (bad file, unknown profile, ...)."""

    code = "bad_input"


class Busy(OrchestratorError):
    """Another caller holds the flow's lock."""

    code = "busy"
    exit_code = 3


class StateLoadError(OrchestratorError):
    """``flow_state.json`` could not be loaded; it is kept as it is for inspection."""

    code = "state_unloadable"
    exit_code = 4


class WorkflowBug(OrchestratorError):
    """A workflow broke its own contract (bad trigger, over-asked attempts)."""

    code = "bug"
    exit_code = 1


class SettingError(OrchestratorError):
    """An environment setting holds a value this orchestrator cannot use (exit 2)."""

    code = "bad_setting"

    def __init__(self, name: str, value: str, expected: str) -> None:
        super().__init__(f"{name}={value!r} is not {expected}",
                         f"unset {name} for the default, or export a valid value, then re-run",
                         setting=name)


# errno name -> (code, what it means, how to mend it). Faults of the machine, not bugs.
_FAULTS: dict[str, tuple[str, str, str]] = {
    "ENOSPC": ("disk_full", "the disk is full",
               "free space on the workspace's filesystem, then run the same command again"),
    "EDQUOT": ("disk_full", "the disk quota is exceeded",
               "free space (or raise the quota), then run the same command again"),
    "EROFS": ("read_only", "the workspace's filesystem is read-only",
              "point --workspace (or ORCHESTRATOR_WORKSPACE) at a writable folder, or remount"),
    "EFBIG": ("file_too_large", "a file grew past the allowed file size (ulimit -f)",
              "raise the file-size limit (ulimit -f unlimited) and run the command again"),
    "EACCES": ("permission_denied", "permission was denied",
               "give this user write access to the workspace, or pick another --workspace"),
    "EPERM": ("permission_denied", "the operation was not permitted",
              "give this user write access to the workspace, or pick another --workspace"),
    "ENOTDIR": ("workspace_not_a_folder", "a path that must be a folder is not one",
                "the workspace (or a folder in it) is a file: move it away or pick another "
                "--workspace"),
    "EEXIST": ("workspace_not_a_folder", "a path that must be a folder is a file",
               "the workspace (or a folder in it) is a file: move it away or pick another "
               "--workspace"),
    "EISDIR": ("workspace_not_a_file", "a path that must be a file is a folder",
               "move the folder away, then run the command again"),
    "ELOOP": ("unsafe_path", "a workspace file is a symbolic link",
              "the orchestrator never follows links in its workspace: remove the link"),
    "EMFILE": ("too_many_open_files", "the process ran out of file descriptors",
               "raise the limit (ulimit -n) and run the command again"),
    "EIO": ("io_error", "the disk reported an input/output error",
            "check the disk (dmesg), then run the command again"),
}


class EnvironmentFault(OrchestratorError):
    """The machine refused a file operation (full disk, read-only, limits): exit 4, no bug."""

    code = "environment"
    exit_code = 4


def environment_fault(exc: OSError) -> OrchestratorError | None:
    """The error to report for ``exc``, or None when it is no known fault of the machine."""
    import errno

    name = errno.errorcode.get(exc.errno or 0, "")
    if name not in _FAULTS:
        return None
    code, what, hint = _FAULTS[name]
    # an int filename is a descriptor (os.fstat, os.write), which names nothing to a reader
    where = f" at {exc.filename!r}" if isinstance(exc.filename, (str, bytes)) else ""
    return EnvironmentFault(f"{what}{where}: {exc.strerror or exc}", hint, code=code,
                            errno=name)
