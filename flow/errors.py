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
        out: dict[str, Any] = {"code": self.code, "message": self.message, "hint": self.hint}
        out.update(self.details)
        return out


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
