"""The test linter: device-mechanism rules, each case a snippet and the codes it yields."""

from __future__ import annotations

from textwrap import dedent

import pytest

from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.assess import assess_source
from flow.workflows.refactor.lint import lint

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
    # A decorated test: the finding (and the excerpt the coder sees) is the `def` line.
    ("device-class-decorated-test-without-device-points-at-def", """
        class TestFoo(TestCase):
            @dtypes(torch.float)
            def test_a(self):
                pass

        instantiate_device_type_tests(TestFoo, globals())
        """, [("L002", "error", 3)]),
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


# PyTorch idioms that name a device without placing anything on it (written after the shapes
# seen in test/nn/test_dropout.py, test_embedding.py, test_pooling.py, test_convolution.py):
# each must yield no L006 in a device-instantiated class, while its placing twin must.
DEVICE_CLASS = """
class TestThing(TestCase):
    def test_a(self, device):
{body}

instantiate_device_type_tests(TestThing, globals())
"""

IDIOMS: list[tuple[str, str, list[tuple[str, int]]]] = [
    ("device-type-equality", 'if self.device_type == "cuda" or self.device_type == "cpu":\n    x = x.half()', []),
    ("device-type-membership", 'if self.device_type in ("cuda", "xpu"):\n    tol = 1e-3', []),
    ("device-type-not-equal", 'if self.device_type != "cpu":\n    tol = 1e-2', []),
    ("device-dot-type", 'if out.device.type == "cuda":\n    torch.cuda.synchronize()', []),
    ("torch-device-type", 'self.skipTest("slow") if torch.device(device).type == "mps" else None', []),
    ("string-membership-in-device", 'if "cuda" in device:\n    pass', []),
    ("startswith", 'if device.startswith("cuda"):\n    pass', []),
    ("assert-device-kind", 'self.assertEqual(out.device.type, "cuda")', []),
    ("dict-keyed-by-device-type", 'tol = {"cpu": 1e-5, "cuda": 1e-3}[self.device_type]', []),
    ("branch-guarded-cuda-call", 'if self.device_type == "cuda":\n    y = x.cuda()', []),
    ("only-for-selector", 'helper(only_for="cuda", except_for=("mps",))', []),
    # The placing twins: the device really is hard-coded.
    ("placing-kwarg", 'x = torch.ones(3, device="cuda")', [("L006", 3)]),
    ("placing-to", 'x = torch.ones(3).to("cuda:0")', [("L006", 3)]),
    ("placing-torch-device", 'd = torch.device("cuda")', [("L006", 3)]),
    ("placing-cuda-call", "x = torch.ones(3).cuda()", [("L006", 3)]),
    ("placing-chained-cuda-call", "x = (\n    torch.ones(3)\n    .float()\n    .cuda()\n)", [("L006", 6)]),
    # An availability flag is a gate (warning), never itself a hard-coded device; what it
    # guards still runs on CUDA whatever the instantiated device, so stays an error.
    ("test-cuda-flag-alone", 'if TEST_CUDA:\n    tol = 1e-3', [("L007", 3)]),
    ("test-cuda-flag-guard", 'if TEST_CUDA:\n    x = x.to("cuda")', [("L007", 3), ("L006", 4)]),
    ("is-available-guard", 'if torch.cuda.is_available():\n    x = x.cuda()', [("L007", 3), ("L006", 4)]),
]


@pytest.mark.parametrize(("name", "body", "expected"), IDIOMS, ids=[i[0] for i in IDIOMS])
def test_device_idiom(name: str, body: str, expected: list[tuple[str, int]]) -> None:
    """A device comparison, selector or guarded branch is no L006; a real placement is."""
    code = DEVICE_CLASS.format(body="\n".join("        " + line for line in body.splitlines())).lstrip("\n")
    assert expected == [(f.code, f.line) for f in lint(assess_source(code, "t.py"))]


# Negative twins of the positive CASES above: the idiomatic form of each, lint-clean.
NEGATIVES: list[tuple[str, str]] = [
    ("L001-device-specific-via-only-for", """
        class TestCudaThing(TestCase):
            def test_a(self, device):
                pass

        instantiate_device_type_tests(TestCudaThing, globals(), only_for="cuda")
        """),
    ("L002-L003-device-param-matches-mechanism", """
        class TestFoo(TestCase):
            def test_a(self, device):
                pass

        class TestFooCPU(TestCase):
            def test_b(self):
                pass

        instantiate_device_type_tests(TestFoo, globals())
        """),
    ("L004-L005-only-accelerator-and-blacklist-skips", """
        class TestFoo(TestCase):
            @onlyAccelerator
            @skipMPS
            @skipCUDAIf(True, "why")
            def test_a(self, device):
                pass

        instantiate_device_type_tests(TestFoo, globals())
        """),
    ("L008-only-accelerator-without-only-for", """
        class TestFoo(TestCase):
            @onlyAccelerator
            def test_a(self, device):
                pass

        instantiate_device_type_tests(TestFoo, globals())
        """),
    ("L010-one-instantiation-each-kind", """
        class TestFoo(TestCase):
            def test_a(self, device):
                pass

        class TestBar(TestCase):
            def test_b(self):
                pass

        instantiate_device_type_tests(TestFoo, globals())
        instantiate_parametrized_tests(TestBar)
        """),
    # A CUDA-gated test in a plain class is no longer clean: L012 (tests/refactor/test_hwclass.py).
]


@pytest.mark.parametrize(("name", "code"), NEGATIVES, ids=[n[0] for n in NEGATIVES])
def test_negative_case_is_clean(name: str, code: str) -> None:
    """The idiomatic form of each rule's positive case yields no finding."""
    assert [] == lint(assess_source(dedent(code).lstrip("\n"), "t.py"))


def test_l009_negative_device_specific_with_only_for() -> None:
    """A device-specific class instantiated with only_for satisfies L009."""
    code = ('class TestFoo(TestCase):\n    def test_a(self, device): pass\n'
            'instantiate_device_type_tests(TestFoo, globals(), only_for="cuda")\n')
    plan = AnalystReport.model_validate(
        {"file": "t.py", "classifications": [{"test": "TestFoo.test_a", "strategy": "device_specific", "target_class": "TestFoo"}]}
    )
    assert [] == lint(assess_source(code, "t.py"), plan)


def test_a_test_taking_devices_takes_device() -> None:
    """`devices` (what @deviceCountAtLeast passes) satisfies TEST_LINTER's device parameter: no L002."""
    code = """
        class TestTwo(TestCase):
            @deviceCountAtLeast(2)
            def test_pair(self, devices):
                pass


        instantiate_device_type_tests(TestTwo, globals(), only_for="cuda")
    """
    assert [] == [f.code for f in lint(assess_source(dedent(code).lstrip("\n"), "t.py")) if f.code in ("L002", "L003")]
