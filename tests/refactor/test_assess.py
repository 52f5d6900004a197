"""Phase 1: what the ast assessment reads from PyTorch-style test files."""

from __future__ import annotations

import pytest

from flow.workflows.refactor.assess import Assessment, assess_source
from flow.workflows.refactor.errors import SourceSyntaxError

from tests.refactor.conftest import LARGE, read


def _test(a: Assessment, test_id: str):
    cls, name = test_id.split(".")
    info = a.class_named(cls)
    assert info is not None
    return next(t for t in info.tests if t.name == name)


def test_classes_bases_ranges_and_tests(small_before: Assessment) -> None:
    """Every top-level class is listed with bases, line range and tests in file order."""
    summary = [(c.name, c.bases, c.start, c.end, [t.name for t in c.tests]) for c in small_before.classes]
    assert [
        ("TestSmallOps", ["TestCase"], 25, 54, ["test_add", "test_mul_dtypes", "test_to_accelerator", "test_pinned_copy", "test_native_only", "test_clamp_logic"]),
        ("TestSmallUtils", ["TestCase"], 60, 73, ["test_pad_lengths", "test_cuda_roundtrip", "test_cudnn_flag"]),
    ] == summary


@pytest.mark.parametrize(
    ("test_id", "decorators", "takes_device", "literals", "gates"),
    [
        ("TestSmallOps.test_add", [], True, [], []),
        ("TestSmallOps.test_mul_dtypes", ["dtypes"], True, [], []),
        ("TestSmallOps.test_to_accelerator", ["onlyCUDA"], True, ["cuda"], []),  # the assertEqual on y.device.type places nothing
        ("TestSmallOps.test_pinned_copy", ["onlyOn", "skipXPU"], True, [], []),
        ("TestSmallOps.test_native_only", ["onlyNativeDeviceTypes", "skipCUDAIf"], True, [], []),
        ("TestSmallUtils.test_pad_lengths", ["parametrize"], False, [], []),
        ("TestSmallUtils.test_cuda_roundtrip", ["unittest.skipIf"], False, [".cuda()"], ["torch.cuda.is_available()"]),
        ("TestSmallUtils.test_cudnn_flag", ["unittest.skipIf"], False, [], ["TEST_CUDNN"]),
    ],
)
def test_per_test_facts(small_before: Assessment, test_id: str, decorators: list[str], takes_device: bool,
                        literals: list[str], gates: list[str]) -> None:
    """Decorators, the device parameter, hard-coded devices and gates are read per test."""
    t = _test(small_before, test_id)
    actual = ([d.name for d in t.decorators], t.takes_device, [lit.value for lit in t.device_literals], [g.text for g in t.gates])
    assert (decorators, takes_device, literals, gates) == actual


def test_instantiations_with_only_for() -> None:
    """instantiate_* calls are found with their target, line and only_for / except_for."""
    text = (
        "class A: pass\nclass B: pass\n"
        "instantiate_device_type_tests(A, globals(), except_for=['meta'])\n"
        "if True:\n    instantiate_device_type_tests(B, globals(), only_for=('cuda', 'xpu'))\n"
        "@instantiate_parametrized_tests\nclass C: pass\n"
    )
    a = assess_source(text, "t.py")
    actual = [(i.kind, i.target, i.line, i.only_for, i.except_for) for i in a.instantiations]
    assert [
        ("device_type", "A", 3, None, ["meta"]),
        ("device_type", "B", 5, ["cuda", "xpu"], None),
        ("parametrized", "C", 6, None, None),
    ] == actual


def test_setup_guard_is_recorded() -> None:
    """A setUp that checks CUDA availability is recorded on its class."""
    a = assess_source(read(LARGE / "large_ops_before.py"), "large_ops.py")
    guards = {c.name: c.setup_guard_line for c in a.classes if c.setup_guard_line is not None}
    assert {"TestLargeCudaOnly": 146} == guards


def test_single_coder_with_one_range_per_class(small_before: Assessment) -> None:
    """The seed's single coder gets one line range per class."""
    ranges = [(r.class_name, r.start, r.end) for r in small_before.coder_ranges]
    assert (1, [("TestSmallOps", 25, 54), ("TestSmallUtils", 60, 73)]) == (small_before.coder_count, ranges)


def test_assessment_round_trips_through_json(small_before: Assessment) -> None:
    """assessment.json reloads into an equal model."""
    assert small_before == Assessment.model_validate_json(small_before.model_dump_json())


def test_syntax_error_names_file_and_line() -> None:
    """Unparsable input raises SourceSyntaxError with path and line, never a bare SyntaxError."""
    with pytest.raises(SourceSyntaxError) as info:
        assess_source("class A:\n    def f(:\n", "bad.py")
    assert ("bad.py", 2) == (info.value.path, info.value.line)
