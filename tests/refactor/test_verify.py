"""Phase 5: each verify check on the small fixture, plus the real collect-only confirmation."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.assess import assess_source
from flow.workflows.refactor.collect import base_test, collect_tests, compare_collected
from flow.workflows.refactor.fields import FIELD_AGNOSTIC_CHECKS
from flow.workflows.refactor.verify import VerifyInput, verify

from tests import forkserver
from tests.refactor.conftest import SMALL, read

BEFORE = read(SMALL / "small_ops_before.py")
AFTER = read(SMALL / "small_ops_after.py")


def _run(after: str, report: AnalystReport, **extra: object) -> list[tuple[str, str, str, int]]:
    inp = VerifyInput(path="small_ops.py", before=BEFORE, after=after, plan=report, **extra)  # type: ignore[arg-type]
    return [(f.check, f.code, f.severity, f.line) for f in verify(inp).findings]


def test_clean_refactor_passes_every_check(small_report: AnalystReport) -> None:
    """The small fixture's refactored file passes all core checks with no finding."""
    report = verify(VerifyInput(path="small_ops.py", before=BEFORE, after=AFTER, plan=small_report))
    assert ([], True) == (report.findings, report.passed)


# (id, old text, new text, expected findings): each a one-edit regression of AFTER.
MUTATIONS = [
    ("syntax", "class TestSmallUtils(TestCase):", "class TestSmallUtils(TestCase)", [("syntax", "V101", "error", 60)]),
    ("test-dropped", "    def test_add(self, device):\n", "    def test_add_renamed(self, device):\n",
     [("test_count", "V201", "error", 26), ("test_count", "V202", "warning", 27)]),
    ("agnostic-with-only-for", "instantiate_device_type_tests(TestSmallOpsDevice, globals())",
     'instantiate_device_type_tests(TestSmallOpsDevice, globals(), only_for="cpu")',
     [("class_structure", "V303", "error", 26), ("lint", "L008", "warning", 37), ("lint", "L008", "warning", 42)]),
    ("onlycuda-left", "    @onlyAccelerator\n    def test_to_accelerator",
     "    @onlyCUDA\n    def test_to_accelerator",
     [("stale_patterns", "V601", "error", 37), ("import_audit", "V702", "error", 37), ("lint", "L004", "error", 37)]),
    ("hard-coded-cuda", "y = torch.ones(2).to(device)", 'y = torch.ones(2).to("cuda")',
     [("lint", "L006", "error", 39)]),  # one finding for one placement (not V602 as well)
    ("blacklist-skip-dropped", "    @onlyAccelerator\n    @skipXPU\n", "    @onlyAccelerator\n",
     [("stale_patterns", "V604", "error", 42), ("import_audit", "V701", "warning", 5)]),
    ("setup-guard-device-specific", "class TestSmallCudnn(TestCase):\n    def test_cudnn_flag(self, device):",
     "class TestSmallCudnn(TestCase):\n    def setUp(self):\n        if not torch.cuda.is_available():\n"
     "            self.skipTest('x')\n\n    def test_cudnn_flag(self, device):", [("lint", "L001", "warning", 71)]),
]


@pytest.mark.parametrize(("name", "old", "new", "expected"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_mutation_is_reported(small_report: AnalystReport, name: str, old: str, new: str,
                              expected: list[tuple[str, str, str, int]]) -> None:
    """Each regression of the refactored file yields exactly its findings, with file and line."""
    assert old in AFTER, f"mutation {name!r} does not apply to the fixture"
    assert expected == _run(AFTER.replace(old, new, 1), small_report)


def test_decorate_info_external_refs_and_sentinels(small_report: AnalystReport) -> None:
    """Stale DecorateInfo entries, references to removed classes and stale sentinels are errors."""
    extra = {
        "decorate_info_files": {"cmi.py": read(SMALL / "common_methods_invocations.py").replace("TestSmallUtils", "TestSmallGone")},
        "external_files": {"test/other.py": "x = 1\nfrom small_ops import TestSmallGoneCPU\n"},
        "sentinel_names": {"dynamo_skips": ["TestSmallOpsCPU.test_add_cpu", "TestUnrelated.test_x"]},
    }
    before = BEFORE.replace("TestSmallUtils", "TestSmallGone")
    inp = VerifyInput(path="small_ops.py", before=before, after=AFTER, plan=None, **extra)  # type: ignore[arg-type]
    expected = [("decorate_info", "V402", "cmi.py", 11), ("decorate_info", "V401", "cmi.py", 13), ("external_refs", "V501", "test/other.py", 2)]
    assert expected == [
        (f.check, f.code, f.file, f.line) for f in verify(inp).findings if f.check in ("decorate_info", "external_refs")
    ]
    got = _run(AFTER, small_report, **{k: v for k, v in extra.items() if k != "external_files"})
    assert [("decorate_info", "V402", "error", 11), ("external_refs", "V502", "error", 0)] == got


def test_field_agnostic_checks_only(small_report: AnalystReport) -> None:
    """A non-core profile runs only the field-agnostic checks."""
    inp = VerifyInput(path="small_ops.py", before=BEFORE, after=AFTER, plan=small_report, checks=FIELD_AGNOSTIC_CHECKS)
    assert list(FIELD_AGNOSTIC_CHECKS) == [c.name for c in verify(inp).checks]


def test_lint_errors_feed_the_hard_gate(small_report: AnalystReport) -> None:
    """lint_errors() returns only error-severity lint findings."""
    report = verify(VerifyInput(path="small_ops.py", before=BEFORE, after=BEFORE, plan=small_report))
    assert {"L004", "L005", "L006", "L012"} == {f.code for f in report.lint_errors()}  # L012: the CUDA-gated plain-class tests


@pytest.mark.parametrize(
    ("method", "expected"),
    [("test_mul_dtypes_cpu_float32", "test_mul_dtypes"), ("test_add_cpu", "test_add"), ("test_pad_lengths_n_1", "test_pad_lengths"), ("test_zzz", None)],
)
def test_base_test_mapping(method: str, expected: str | None) -> None:
    """Collected variant names map back to the original test (longest name wins)."""
    assert expected == base_test(method, {"test_add", "test_mul_dtypes", "test_mul", "test_pad_lengths"})


@pytest.mark.torch
def test_real_collect_only_confirms_the_count(tmp_path: Path, small_report: AnalystReport) -> None:
    """pytest --collect-only on before and after loses nothing but the device-specific (CUDA-only) test."""
    pytest.importorskip("torch")
    for name in ("before", "after"):
        shutil.copy(SMALL / f"small_ops_{name}.py", tmp_path / f"test_small_{name}.py")
    before = collect_tests(tmp_path / "test_small_before.py", tmp_path)
    after = collect_tests(tmp_path / "test_small_after.py", tmp_path)
    assessment = assess_source(BEFORE, "small_ops.py")
    assert (12, 11, []) == (len(before.node_ids), len(after.node_ids), compare_collected(before, after, assessment, small_report, "small_ops.py"))
    broken = after.model_copy(update={"node_ids": [n for n in after.node_ids if "test_add" not in n]})
    assert ["V203"] == [f.code for f in compare_collected(before, broken, assessment, small_report, "small_ops.py")]


def test_phase1_assessment_reuse_gives_the_same_report(small_report: AnalystReport) -> None:
    """Handing verify phase 1's assessment (no re-parse of before) changes no finding."""
    inp = VerifyInput(path="small_ops.py", before=BEFORE, after=BEFORE, plan=small_report)
    reused = inp.model_copy(update={"before_assessment": assess_source(BEFORE, "small_ops.py")})
    assert verify(inp).findings == verify(reused).findings


# (id, before, after, expected (code, severity, line)): pyflakes on the whole refactored file.
IMPORT_CASES = [
    ("future-exempt", "", "from __future__ import annotations\n", []),
    ("unused-name", "", "from m import used, unused as alias\nused()\n", [("V701", "warning", 1)]),
    ("mentioned-only-in-comment", "", "import os\n# os is handy\n", [("V701", "warning", 1)]),
    ("decorator-not-imported", "", "class T:\n    @onlyAccelerator\n    def test_a(self, device): pass\n",
     [("V702", "error", 2)]),
    ("decorator-bound-by-assignment", "",
     "onlyAccelerator = lambda f: f\nclass T:\n    @onlyAccelerator\n    def test_a(self, device): pass\n", []),
    ("star-import-hides-missing", "", "from m import *\nclass T:\n    @onlyAccelerator\n    def test_a(self, device): pass\n", []),
    # The real-file regression: a still-used `import random` removed by an edit.
    ("removed-still-used-import", "import random\nx = random.randint(1, 5)\n", "x = random.randint(1, 5)\n",
     [("V702", "error", 1)]),
    # Code that only runs on CUDA is checked too: nothing is executed.
    ("undefined-in-cuda-only-branch", "",
     "import torch\nif torch.cuda.is_available():\n    y = torch.ones(2).to(cuda_device)\n", [("V702", "error", 3)]),
    ("duplicate-import", "", "import os\nimport os\nos.getcwd()\n", [("V703", "warning", 2)]),
    # What the original already had is the file's, not the refactor's: a warning that says so.
    ("pre-existing-undefined", "print(missing)\n", "print(missing)\n", [("V702", "warning", 1)]),
]


@pytest.mark.parametrize(("name", "before", "after", "expected"), IMPORT_CASES, ids=[c[0] for c in IMPORT_CASES])
def test_import_audit_case(name: str, before: str, after: str, expected: list[tuple[str, str, int]]) -> None:
    """pyflakes flags undefined names, unused imports and redefinitions the refactor introduced."""
    report = verify(VerifyInput(path="m.py", before=before, after=after, checks=("import_audit",)))
    assert expected == [(f.code, f.severity, f.line) for f in report.findings]


def test_an_unused_import_the_original_already_had_says_so() -> None:
    """An unused import in the original and in the result is the file's: the warning says so; one
    the refactor left unused does not."""
    before = "import os\nimport sys\nsys.exit\n"
    after = "import os\nimport sys\n"
    report = verify(VerifyInput(path="m.py", before=before, after=after, checks=("import_audit",)))
    assert [("V701", "'os' imported but unused (already so in the original)"),
            ("V701", "'sys' imported but unused; remove it")] == [(f.code, f.message) for f in report.findings]


def test_device_type_comparison_is_no_v602(small_report: AnalystReport) -> None:
    """A device-kind comparison in a device-agnostic test is no hard-coded device (V602/L006)."""
    old = "y = torch.ones(2).to(device)"
    assert [] == _run(AFTER.replace(old, 'y = torch.ones(2).to(device) if self.device_type == "cuda" else None', 1),
                      small_report)


class _Ctx:
    """The few flow-context members the collect-only helpers use, over a real folder."""

    def __init__(self, flow: Path, file: Path, repo: Path) -> None:
        from types import SimpleNamespace

        import os

        self.dir = flow
        self.settings = {**os.environ, "ORCHESTRATOR_PYTHON": forkserver.python("torch")}
        self.data = SimpleNamespace(file=str(file), repo=str(repo), test_python=None, notes=[])

    def path(self, name: str) -> Path:
        return self.dir / name

    def job(self, key: str, argv: list[str], *, log_name: str, timeout: float,
            cwd: str | None = None, env: dict[str, str] | None = None) -> object:
        """The engine's job, run in the foreground: the same command and result."""
        from flow.core import proc

        return proc.run(argv, log=self.path(log_name), cwd=cwd, env=env, timeout=timeout)

    def write_json(self, name: str, obj: object) -> Path:
        import json

        self.path(name).parent.mkdir(parents=True, exist_ok=True)
        self.path(name).write_text(json.dumps(obj))
        return self.path(name)


def test_original_with_sibling_import_collects_once_and_is_cached(tmp_path: Path) -> None:
    """The original (a flow-folder copy) imports its sibling module as in place, and is collected once per content."""
    from flow.workflows.refactor.fixloop import _original_collected

    folder = tmp_path / "repo" / "test" / "nn" / "attention"
    folder.mkdir(parents=True)
    (folder / "_fa_common.py").write_text("class Mixin:\n    def test_from_mixin(self):\n        pass\n")
    source = "import unittest\nfrom _fa_common import Mixin\n\n\nclass TestFA(Mixin, unittest.TestCase):\n    def test_a(self):\n        pass\n"
    (folder / "test_fa.py").write_text(source)
    flow = tmp_path / "flow"
    (flow / "original").mkdir(parents=True)
    (flow / "original" / "test_fa.py").write_text(source)
    ctx = _Ctx(flow, folder / "test_fa.py", tmp_path / "repo")
    first = _original_collected(ctx)
    cached = list((flow / "collect_cache").iterdir())
    (flow / "original" / "test_fa.py").write_text(source)  # same content: the cache answers
    again = _original_collected(ctx)
    assert (2, 1, first.node_ids) == (len(first.node_ids), len(cached), again.node_ids)


def test_collect_only_not_run_is_skipped_with_the_reason(tmp_path: Path, small_report: AnalystReport) -> None:
    """While other checks fail, collect_only is listed as skipped with why, never as a pass."""
    from flow.workflows.refactor.fixloop import _with_collect

    failing = verify(VerifyInput(path="small_ops.py", before=BEFORE, after=BEFORE, plan=small_report))
    ctx = _Ctx(tmp_path, tmp_path / "t.py", tmp_path)
    check = _with_collect(ctx, small_report, failing).checks[-1]
    assert ("collect_only", True, "not run while other checks report errors (it runs once they pass)") == (
        check.name, check.skipped is not None, check.skipped)


def test_a_device_type_skip_dropped_by_a_move_to_a_plain_class_is_no_lost_skip() -> None:
    """A test moved from a device class into a plain (GENERIC) one rightly drops @skipMeta (it reads
    self.device_type); the same drop inside a device class stays V604."""
    from flow.workflows.refactor.analysis import AnalystReport

    before = ("from torch.testing._internal.common_device_type import instantiate_device_type_tests, skipMeta\n"
              "from torch.testing._internal.common_utils import TestCase\n\n\n"
              "class TestPack(TestCase):\n    @skipMeta\n    def test_a(self, device):\n        pass\n\n"
              "    @skipMeta\n    def test_b(self, device):\n        pass\n\n\n"
              "instantiate_device_type_tests(TestPack, globals())\n")
    after = ("from torch.testing._internal.common_device_type import instantiate_device_type_tests, skipMeta\n"
             "from torch.testing._internal.common_utils import TestCase\n\n\n"
             "class TestPack(TestCase):\n    def test_b(self, device):\n        pass\n\n\n"
             "class TestPackGeneric(TestCase):\n    def test_a(self):\n        pass\n\n\n"
             "instantiate_device_type_tests(TestPack, globals())\n")
    plan = AnalystReport.model_validate({"file": "m.py", "classifications": [
        {"test": "TestPack.test_a", "strategy": "cpu_only", "target_class": "TestPackGeneric"},
        {"test": "TestPack.test_b", "strategy": "device_agnostic", "target_class": "TestPack"}]})
    report = verify(VerifyInput(path="m.py", before=before, after=after, plan=plan, checks=("stale_patterns",)))
    assert [("V604", "blacklist skip @skipMeta was removed from TestPack.test_b; KEEP blacklist skips")] == [
        (f.code, f.message) for f in report.findings]
