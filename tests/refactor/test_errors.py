"""The refactor errors are reportable OrchestratorErrors (code, message, hint), never exit-1 bugs."""

from __future__ import annotations

import pytest

from flow.core.errors import OrchestratorError
from flow.workflows.refactor.errors import (
    CatalogueError, CollectError, FieldConflictError, JUnitError, SourceSyntaxError,
)


@pytest.mark.parametrize(
    ("error", "code", "quoted"),
    [
        (FieldConflictError("test/x.py", ["distributed", "graph"]), "field_conflict", "test/x.py"),
        (CatalogueError("rules.json", "duplicate rule ids ['TR001']"), "bad_catalogue", "TR001"),
        (SourceSyntaxError("bad.py", 3, "invalid syntax"), "bad_source", "bad.py:3"),
        (JUnitError("out.xml", "malformed XML"), "no_test_report", "out.xml"),
        (CollectError("test_x.py", "exited 2"), "collect_failed", "test_x.py"),
    ],
)
def test_error_is_reportable(error: OrchestratorError, code: str, quoted: str) -> None:
    """Each error reports its own code, quotes the bad value and carries a hint (exit 2, not a bug)."""
    assert (True, code, True, True, 2) == (
        isinstance(error, OrchestratorError), error.to_json()["code"], quoted in error.message,
        bool(error.hint), error.exit_code)
