"""A pytest plugin: a failing test's name is printed the moment it fails, before the run's
summary, so a person watching a long run (or a CI log cut short) sees it without waiting for
the end. Under pytest-xdist the controller prints it, as each worker's report arrives."""

from __future__ import annotations

import pytest

_config: pytest.Config | None = None


def pytest_configure(config: pytest.Config) -> None:
    global _config
    _config = config


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """``FAILED NODEID`` on a line of its own (``(in its setup)`` for a failing fixture); the
    workers' own output is not shown, so only the process that prints writes it."""
    if not report.failed or _config is None or hasattr(_config, "workerinput"):
        return
    terminal = _config.pluginmanager.get_plugin("terminalreporter")
    if terminal is None:
        return
    where = "" if report.when == "call" else f" (in its {report.when})"
    terminal.ensure_newline()
    terminal.write_line(f"FAILED {report.nodeid}{where}", red=True, bold=True)
    terminal.flush()  # out now, even to a file or a pipe (a CI log)
