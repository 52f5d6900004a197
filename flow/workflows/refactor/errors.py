"""The refactor workflow's exception tree, part of ``flow.core.errors.OrchestratorError``'s.

A step that raises one of these is reported as ``status: error`` with its code, a message
quoting the offending value and a hint saying how to mend it (exit 2), and the flow's state
is left as it was so ``--resume`` retries the step once the cause is mended. Every error also
keeps the offending value as an attribute for callers of the pure core.
"""

from __future__ import annotations

from flow.core.errors import OrchestratorError


class RefactorError(OrchestratorError):
    """Base of every error raised by ``flow.workflows.refactor``."""

    code = "refactor"


class FieldConflictError(RefactorError):
    """A test path is listed in more than one non-core field's test list."""

    code = "field_conflict"

    def __init__(self, path: str, fields: list[str]) -> None:
        self.path = path
        self.fields = fields
        super().__init__(f"test path {path!r} is listed in several field lists: {', '.join(fields)}",
                         "remove it from all but one of reference/<field>/test_list.txt")


class CatalogueError(RefactorError):
    """The rule catalogue is malformed (bad JSON, duplicate id, unknown codemod)."""

    code = "bad_catalogue"

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"rule catalogue {source}: {problem}",
                         "fix reference/refactor/rules.json against flow/refactor/rules.py")


class SourceSyntaxError(RefactorError):
    """A test file to assess does not parse as Python."""

    code = "bad_source"

    def __init__(self, path: str, line: int | None, detail: str) -> None:
        self.path = path
        self.line = line
        self.detail = detail
        super().__init__(f"{path}:{line or '?'}: cannot parse: {detail}",
                         "fix the syntax error in the file, then run the same command with --resume")


class JUnitError(RefactorError):
    """A JUnit XML report is missing or unreadable; never read as success."""

    code = "no_test_report"

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(f"JUnit report {path!r}: {detail}",
                         "run pytest on the file by hand with --junitxml, mend what its stderr "
                         "shows, then --resume")


class CollectError(RefactorError):
    """``pytest --collect-only`` failed (exit code not 0 or 5, or a timeout); never read as zero tests."""

    code = "collect_failed"

    def __init__(self, file: str, detail: str) -> None:
        self.file = file
        self.detail = detail
        super().__init__(f"pytest --collect-only {file!r}: {detail}",
                         "run it by hand to see the import error")
