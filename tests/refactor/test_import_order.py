"""Codemods keep the file passing PyTorch's import-order lint (usort with PyTorch's settings)."""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import pytest

from flow.workflows.refactor.codemods import decorator_rules
from flow.workflows.refactor.imports import usort_config

# (id, before, after): each `before` passes usort with PyTorch's settings, as real test files do.
CASES = [
    # The real-file regression: names sorted case-folded, an upper-case flag last in the list.
    ("insert-among-case-folded-names", """
        import unittest

        import torch
        from torch.testing._internal.common_device_type import (
            dtypes,
            instantiate_device_type_tests,
            onlyCUDA,
            skipMPS,
            TEST_WITH_ROCM,
        )
        from torch.testing._internal.common_utils import run_tests, TestCase


        class T(TestCase):
            @onlyCUDA
            def test_a(self, device):
                pass
        """, """
        import unittest

        import torch
        from torch.testing._internal.common_device_type import (
            dtypes,
            instantiate_device_type_tests,
            onlyAccelerator,
            skipMPS,
            TEST_WITH_ROCM,
        )
        from torch.testing._internal.common_utils import run_tests, TestCase


        class T(TestCase):
            @onlyAccelerator
            def test_a(self, device):
                pass
        """),
    # A name the file imports from common_device_type through another module gets a new
    # line, sorted into the first-party block rather than appended after the last import.
    ("new-import-line-sorted-into-its-block", """
        import random

        import torch
        from torch.testing._internal.common_cuda import TEST_CUDA
        from torch.testing._internal.common_utils import run_tests


        class T:
            @onlyCUDA
            def test_a(self, device):
                pass
        """, """
        import random

        import torch
        from torch.testing._internal.common_cuda import TEST_CUDA
        from torch.testing._internal.common_device_type import onlyAccelerator
        from torch.testing._internal.common_utils import run_tests


        class T:
            @onlyAccelerator
            def test_a(self, device):
                pass
        """),
    # Both rules at once: one name replaced, one removed, one added, the list re-sorted.
    ("both-rules-merge-into-one-import", """
        from torch.testing._internal.common_device_type import (
            onlyCUDA,
            onlyNativeDeviceTypes,
            skipXPU,
        )


        class T:
            @onlyNativeDeviceTypes
            def test_a(self, device):
                pass

            @onlyCUDA
            @skipXPU
            def test_b(self, device):
                pass
        """, """
        from torch.testing._internal.common_device_type import onlyAccelerator, skipXPU


        class T:
            def test_a(self, device):
                pass

            @onlyAccelerator
            @skipXPU
            def test_b(self, device):
                pass
        """),
]


def _usort_clean(code: str) -> bool:
    from usort import usort

    return usort(code.encode(), usort_config()).output.decode() == code


@pytest.mark.parametrize(("name", "before", "after"), CASES, ids=[c[0] for c in CASES])
def test_codemod_output_passes_usort(name: str, before: str, after: str) -> None:
    """A usort-clean file stays usort-clean after the decorator codemods, with exactly this output."""
    before, after = dedent(before).lstrip("\n"), dedent(after).lstrip("\n")
    assert _usort_clean(before), "the fixture must start usort-clean"
    result = decorator_rules(before, usort_config=usort_config()).code
    assert (after, True) == (result, _usort_clean(result))


def test_unsorted_file_keeps_its_own_order() -> None:
    """A file whose imports never passed usort is not reordered: only the new name is placed."""
    before = "import torch\nimport abc\nfrom torch.testing._internal.common_device_type import onlyCUDA\n\n\n@onlyCUDA\ndef test_a(device): ...\n"
    result = decorator_rules(before, usort_config=usort_config()).code
    assert result.startswith("import torch\nimport abc\nfrom torch.testing._internal.common_device_type import onlyAccelerator\n")


def test_checkout_usort_settings_are_used(tmp_path: Path) -> None:
    """The checkout's own [tool.usort] is found from the test file's folder."""
    (tmp_path / "pyproject.toml").write_text('[tool.usort.known]\nfirst_party = ["mylib"]\n')
    (tmp_path / "test").mkdir()
    config = usort_config(tmp_path / "test" / "test_x.py")
    assert ("first_party", None) == (config.known.get("mylib"), config.known.get("torch"))


def test_bundled_settings_are_pytorchs() -> None:
    """Outside a checkout the bundled copy of PyTorch's usort settings applies."""
    config = usort_config()
    assert ("first_party", "standard_library", True, False) == (
        config.known["torch"], config.known["typing_extensions"], config.preserve_inline_comments,
        config.collapse_blank_lines_in_category)
