"""Mechanical rules: libcst codemods keep formatting and comments (cases as data)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from textwrap import dedent

import pytest

from flow.workflows.refactor.codemods import (
    CodemodResult, decorate_info, only_accelerator, remove_only_native,
)

from tests import forkserver
from tests.refactor.conftest import LARGE, SMALL, read

Codemod = Callable[[str], CodemodResult]


def _di(code: str) -> CodemodResult:
    return decorate_info(code, {("TestFoo", "test_a"): "TestFooDevice", ("TestBar", "*"): "TestBarDevice"})


# (id, codemod, before, after): LibCST's assertCodemod style, one case per entry.
CASES: list[tuple[str, Codemod, str, str]] = [
    ("onlycuda-multiline-import", only_accelerator, """
        from torch.testing._internal.common_device_type import (
            dtypes,
            onlyCUDA,
        )

        class T:
            # keep me
            @onlyCUDA  # trailing note
            def test_a(self, device):
                pass
        """, """
        from torch.testing._internal.common_device_type import (
            dtypes,
            onlyAccelerator,
        )

        class T:
            # keep me
            @onlyAccelerator  # trailing note
            def test_a(self, device):
                pass
        """),
    ("onlyon-list-arg", only_accelerator, """
        from torch.testing._internal.common_device_type import onlyOn, skipXPU

        @onlyOn(["cuda", "xpu"])
        @skipXPU
        def test_a(self, device): ...
        """, """
        from torch.testing._internal.common_device_type import onlyAccelerator, skipXPU

        @onlyAccelerator
        @skipXPU
        def test_a(self, device): ...
        """),
    ("onlycuda-still-used-keeps-import", only_accelerator, """
        from torch.testing._internal.common_device_type import onlyCUDA

        @onlyCUDA
        def test_a(self, device): ...

        ALIAS = onlyCUDA
        """, """
        from torch.testing._internal.common_device_type import onlyAccelerator, onlyCUDA

        @onlyAccelerator
        def test_a(self, device): ...

        ALIAS = onlyCUDA
        """),
    ("onlycuda-no-import-adds-one", only_accelerator, """
        import torch

        @onlyCUDA
        def test_a(self, device): ...
        """, """
        import torch
        from torch.testing._internal.common_device_type import onlyAccelerator

        @onlyAccelerator
        def test_a(self, device): ...
        """),
    ("onlycuda-and-onlyon-on-one-test-collapse", only_accelerator, """
        from torch.testing._internal.common_device_type import onlyCUDA, onlyOn

        @onlyCUDA
        @onlyOn("cuda")
        def test_a(self, device): ...
        """, """
        from torch.testing._internal.common_device_type import onlyAccelerator

        @onlyAccelerator
        def test_a(self, device): ...
        """),
    ("onlycuda-attribute-form-gets-an-import", only_accelerator, """
        import torch.testing._internal.common_device_type as cdt

        @cdt.onlyCUDA
        def test_a(self, device): ...
        """, """
        import torch.testing._internal.common_device_type as cdt
        from torch.testing._internal.common_device_type import onlyAccelerator

        @onlyAccelerator
        def test_a(self, device): ...
        """),
    ("onlycuda-nothing-to-do", only_accelerator, """
        @onlyAccelerator
        def test_a(self, device): ...
        """, """
        @onlyAccelerator
        def test_a(self, device): ...
        """),
    # The comment above the decorator is the test's; the one on the decorator's line only said
    # why that decorator was there ("breaks on the lazy backend"), so it goes with it.
    ("remove-native-keeps-comment-drops-its-own", remove_only_native, """
        from torch.testing._internal.common_device_type import dtypes, onlyNativeDeviceTypes

        # the CPU result is exact
        @onlyNativeDeviceTypes  # breaks on the lazy backend
        @dtypes(torch.float)
        def test_a(self, device, dtype): ...

        @onlyNativeDeviceTypes  # breaks on the lazy backend
        def test_b(self, device): ...
        """, """
        from torch.testing._internal.common_device_type import dtypes

        # the CPU result is exact
        @dtypes(torch.float)
        def test_a(self, device, dtype): ...

        def test_b(self, device): ...
        """),
    ("remove-native-and-last-decorator", remove_only_native, """
        from torch.testing._internal.common_device_type import onlyNativeDeviceTypesAnd, skipXPU

        @skipXPU
        @onlyNativeDeviceTypesAnd(["xpu"])
        def test_a(self, device): ...
        """, """
        from torch.testing._internal.common_device_type import skipXPU

        @skipXPU
        def test_a(self, device): ...
        """),
    ("remove-native-only-decorator-removes-import-line", remove_only_native, """
        import torch
        from torch.testing._internal.common_device_type import onlyNativeDeviceTypes

        class T:
            @onlyNativeDeviceTypes
            def test_a(self, device):
                pass
        """, """
        import torch

        class T:
            def test_a(self, device):
                pass
        """),
    ("decorate-info-positional-keeps-quotes", _di, """
        skips = (
            DecorateInfo(unittest.skip("x"), 'TestFoo', 'test_a'),  # why
            DecorateInfo(unittest.skip("x"), "TestFoo", "test_b"),
        )
        """, """
        skips = (
            DecorateInfo(unittest.skip("x"), 'TestFooDevice', 'test_a'),  # why
            DecorateInfo(unittest.skip("x"), "TestFoo", "test_b"),
        )
        """),
    ("decorate-info-keywords-and-class-wide", _di, """
        d = DecorateInfo(unittest.expectedFailure, cls_name="TestBar", test_name="test_z", device_type="cpu")
        e = DecorateInfo(unittest.expectedFailure, "TestBar")
        """, """
        d = DecorateInfo(unittest.expectedFailure, cls_name="TestBarDevice", test_name="test_z", device_type="cpu")
        e = DecorateInfo(unittest.expectedFailure, "TestBarDevice")
        """),
]


@pytest.mark.parametrize(("name", "codemod", "before", "after"), CASES, ids=[c[0] for c in CASES])
def test_codemod_case(name: str, codemod: Codemod, before: str, after: str) -> None:
    """The codemod turns `before` into exactly `after`."""
    assert dedent(after).lstrip("\n") == codemod(dedent(before).lstrip("\n")).code


def test_changes_carry_rule_and_input_line() -> None:
    """Each edit is reported with its rule id and the line it applied to."""
    result = only_accelerator(read(SMALL / "small_ops_before.py"))
    assert [("TR001", 36), ("TR001", 41)] == [(c.rule_id, c.line) for c in result.changes]


@pytest.mark.torch
def test_codemodded_large_fixture_still_collects_and_runs(tmp_path: Path) -> None:
    """After both decorator codemods the large fixture runs for real under torch with every test passing or skipping."""
    pytest.importorskip("torch")
    code = remove_only_native(only_accelerator(read(LARGE / "large_ops_before.py")).code).code
    target = tmp_path / "test_large_ops.py"
    target.write_text(code, encoding="utf-8")
    proc = subprocess.run([forkserver.python("torch"), "-m", "pytest", str(target), "-q", "-p", "no:cacheprovider"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600, check=False)
    assert (0, "") == (proc.returncode, "" if " passed" in proc.stdout else proc.stdout[-2000:])
