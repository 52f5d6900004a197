"""The refactor workflow's exception tree.

Every error carries the offending value as an attribute and a message that quotes it
and ends with how to mend it.
"""

from __future__ import annotations


class RefactorError(Exception):
    """Base of every error raised by ``flow.refactor``."""


class FieldConflictError(RefactorError):
    """A test path is listed in more than one non-core field's test list."""

    def __init__(self, path: str, fields: list[str]) -> None:
        self.path = path
        self.fields = fields
        super().__init__(
            f"test path {path!r} is listed in several field lists: {', '.join(fields)}; "
            "remove it from all but one of reference/<field>/test_list.txt"
        )


class CatalogueError(RefactorError):
    """The rule catalogue is malformed (bad JSON, duplicate id, unknown codemod)."""

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"rule catalogue {source}: {problem}")


class SourceSyntaxError(RefactorError):
    """A test file to assess does not parse as Python."""

    def __init__(self, path: str, line: int | None, detail: str) -> None:
        self.path = path
        self.line = line
        self.detail = detail
        super().__init__(
            f"{path}:{line or '?'}: cannot parse: {detail}; "
            "fix the syntax error before assessing the file"
        )


class JUnitError(RefactorError):
    """A JUnit XML report is missing or unreadable; never read as success."""

    def __init__(self, path: str, detail: str) -> None:
        self.path = path
        self.detail = detail
        super().__init__(
            f"JUnit report {path!r}: {detail}; "
            "rerun pytest with --junitxml and check its stderr"
        )
