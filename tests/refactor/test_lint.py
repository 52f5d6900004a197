"""The test linter: device-mechanism rules, each case a snippet and the codes it yields."""

from __future__ import annotations

from textwrap import dedent

import pytest

from flow.refactor.analysis import AnalystReport
from flow.refactor.assess import assess_source
from flow.refactor.lint import lint

from tests.refactor.conftest import SMALL, read

CASES: list[tuple[str, str, list[tuple[str, str, int]]]] = [
    ("setup-guard-rejected", """
        class TestCudaThing(TestCase):
            def setUp(self):
                if not torch.cuda.is_available():
                    self.skipTest("no cuda")

            def test_a(self):
                pass
        """, [("L001", "error", 2)]),
    ("device-class-test-without-device", """
        class TestFoo(TestCase):
            def test_a(self):
                pass

        instantiate_device_type_tests(TestFoo, globals())
        """, [("L002", "error", 2)]),
    ("plain-class-test-with-device", """
        class TestFoo(TestCase):
            def test_a(self, device):
                pass
        """, [("L003", "error", 2)]),
    ("restrictions-left", """
        class TestFoo(TestCase):
            @onlyCUDA
            @onlyNativeDeviceTypesAnd(["xpu"])
            def test_a(self, device):
                pass

        instantiate_device_type_tests(TestFoo, globals())
        """, [("L004", "error", 2), ("L005", "error", 3)]),
    ("hard-coded-device-and-gate", """
        class TestFoo(TestCase):
            def test_a(self, device):
                if torch.cuda.is_available():
                    x = torch.ones(1, device="cuda:0")

        instantiate_device_type_tests(TestFoo, globals())
        """, [("L007", "warning", 3), ("L006", "error", 4)]),
    ("redundant-under-only-for", """
        class TestFoo(TestCase):
            @onlyAccelerator
            def test_a(self, device):
                pass

        instantiate_device_type_tests(TestFoo, globals(), only_for="cuda")
        """, [("L008", "warning", 2)]),
    ("unknown-and-double-instantiation", """
        class TestFoo(TestCase):
            def test_a(self, device):
                pass

        instantiate_device_type_tests(TestFoo, globals())
        instantiate_device_type_tests(TestFoo, globals())
        instantiate_device_type_tests(TestGhost, globals())
        """, [("L010", "error", 6), ("L010", "error", 7)]),
    ("clean-device-specific", """
        class TestFoo(TestCase):
            def test_a(self, device):
                torch.cuda.synchronize(device)

        instantiate_device_type_tests(TestFoo, globals(), only_for="cuda")
        """, []),
]


@pytest.mark.parametrize(("name", "code", "expected"), CASES, ids=[c[0] for c in CASES])
def test_lint_case(name: str, code: str, expected: list[tuple[str, str, int]]) -> None:
    """The snippet yields exactly the expected (code, severity, line) findings."""
    findings = lint(assess_source(dedent(code).lstrip("\n"), "t.py"))
    assert expected == [(f.code, f.severity, f.line) for f in findings]


def test_device_specific_plan_needs_only_for() -> None:
    """With a plan, a device-specific class instantiated without only_for is an error (L009)."""
    code = "class TestFoo(TestCase):\n    def test_a(self, device): pass\ninstantiate_device_type_tests(TestFoo, globals())\n"
    plan = AnalystReport.model_validate(
        {"file": "t.py", "classifications": [{"test": "TestFoo.test_a", "strategy": "device_specific", "target_class": "TestFoo"}]}
    )
    assert [("L009", 1)] == [(f.code, f.line) for f in lint(assess_source(code, "t.py"), plan)]


def test_small_after_fixture_is_lint_clean(small_report: AnalystReport) -> None:
    """The refactored small fixture has no lint findings."""
    assert [] == lint(assess_source(read(SMALL / "small_ops_after.py"), "small_ops.py"), small_report)
