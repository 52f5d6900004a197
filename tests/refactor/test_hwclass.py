"""Hardware classification: the plan's labels, the codemod, PyTorch's TEST_LINTER rules, the PR text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flow.workflows.refactor.analysis import AnalystReport, check_report
from flow.workflows.refactor.assess import assess_source
from flow.workflows.refactor.hwcodemod import label_classes
from flow.workflows.refactor.hwruns import HwRun, HwRunError, account, count_argv, hw_env, read_run
from flow.workflows.refactor.prtext import PrInput, class_rows, render_pr
from flow.workflows.refactor.testlinter import (
    builtin, line_length, max_line_length, read_messages, take_out_of_allowlist,
)
from tests import forkserver
from tests.refactor.conftest import FIXTURES, read

HW = FIXTURES / "hw"
POOL = HW / "checkout" / "test" / "test_pool_ops.py"


def _names(findings: list) -> list[tuple[int, str]]:
    return [(f.line, f.code) for f in findings]


def test_codemod_labels_every_test_class_base_included_plan_first() -> None:
    """Every class defining test_* gets a label, the base class too; the plan's label wins over inference."""
    code = label_classes(read(HW / "near_limit_before.py"),
                         {"TestEmbeddingLikeBase": "GENERIC", "TestEmbeddingLikeDevice": "CUDA"}).code
    assert [("TestEmbeddingLike", "GENERIC", 1), ("TestEmbeddingLikeBase", "GENERIC", 1),
            ("TestEmbeddingLikeDevice", "CUDA", 1)] == [(r.name, r.hw_classification, r.tests) for r in class_rows(code)]


def test_codemod_merges_the_import_and_wraps_it_within_the_line_length() -> None:
    """The enum joins the wrapped import in usort's case-folded order, one name a line, no line past 88."""
    code = label_classes(read(HW / "near_limit_before.py"), {}).code
    block = code.split("from torch.testing._internal.common_utils import (", 1)[1].split(")", 1)[0]
    assert (["HardwareClassification,", "instantiate_parametrized_tests,",
             "parametrize as parametrize_test,", "run_tests,", "skipIfTorchDynamo,"], True, 1) == (
        [line.strip() for line in block.strip().splitlines()], max(map(len, code.splitlines())) <= 88,
        code.count("import HardwareClassification") + code.count("HardwareClassification,"))


def test_codemod_keeps_the_docstring_first_and_a_blank_line_before_the_method() -> None:
    """The label goes after the docstring, and black's empty line separates it from the first def."""
    code = label_classes(read(HW / "near_limit_before.py"), {}).code
    lines = code.splitlines()
    at = lines.index('    """Embedding lookups that need no device."""')
    assert ["    hw_classification = HardwareClassification.GENERIC", ""] == lines[at + 1:at + 3]


def test_codemod_adds_an_import_line_when_the_file_has_none_and_is_idempotent() -> None:
    """Without a common_utils import a new line is added; a second run changes nothing."""
    text = "import unittest\n\n\nclass TestA(unittest.TestCase):\n    def test_x(self):\n        pass\n"
    once = label_classes(text, {})
    assert (True, [], once.code) == (
        "from torch.testing._internal.common_utils import HardwareClassification\n" in once.code,
        label_classes(once.code, {}).changes, label_classes(once.code, {}).code)


def test_a_compliant_file_is_left_alone_and_passes_the_builtin_rules() -> None:
    """An already-migrated file: no codemod edit, no TEST_LINTER message."""
    text = read(HW / "compliant.py")
    assert ([], []) == (label_classes(text, {}).changes, builtin(text, "test/test_done.py"))


def test_builtin_rules_flag_only_decorators_device_params_and_only_for() -> None:
    """@onlyCPU in an ACCELERATOR class, device in a GENERIC test, CUDA without only_for, a class without a label."""
    text = (
        "from torch.testing._internal.common_utils import HardwareClassification, TestCase\n"
        "class TestG(TestCase):\n"
        "    hw_classification = HardwareClassification.GENERIC\n"
        "    def test_g(self, device):\n        pass\n"
        "class TestA(TestCase):\n"
        "    hw_classification = HardwareClassification.ACCELERATOR\n"
        "    @onlyCPU\n"
        "    def test_a(self, device):\n        pass\n"
        "class TestC(TestCase):\n"
        "    hw_classification = HardwareClassification.CUDA\n"
        "    def test_c(self, device):\n        pass\n"
        "class TestNone(TestCase):\n"
        "    def test_n(self):\n        pass\n"
        "instantiate_device_type_tests(TestA, globals(), only_for='cuda')\n"
        "instantiate_device_type_tests(TestC, globals())\n")
    assert [(4, "TEST_LINTER[device_param]"), (9, "TEST_LINTER[decorator]"),
            (15, "TEST_LINTER[hw_classification]"), (18, "TEST_LINTER[only_for]"),
            (19, "TEST_LINTER[only_for]")] == _names(builtin(text, "test/test_x.py"))


def test_plan_labels_follow_the_strategies_and_a_contradiction_is_a_problem() -> None:
    """cpu_only/device_agnostic imply GENERIC/ACCELERATOR; a CUDA label on device-agnostic tests is refused."""
    report = AnalystReport.model_validate_json(read(HW / "pool_report.json"))
    before = assess_source(read(POOL), "test/test_pool_ops.py")
    bad = report.model_copy(update={"class_labels": [
        report.class_labels[0], report.class_labels[1].model_copy(update={"hw_classification": "CUDA"})]})
    assert ([], {"TestPoolOps": "GENERIC", "TestPoolOpsDeviceType": "ACCELERATOR"},
            ["class 'TestPoolOpsDeviceType' is labelled CUDA but its tests are device_agnostic; "
             "label it ACCELERATOR or change the strategy"]) == (
        check_report(report, before), report.labels(), check_report(bad, before))


def test_the_allowlist_edit_takes_the_file_out_and_keeps_the_format(tmp_path: Path) -> None:
    """The migrated file leaves test_linter_allowlist.json; the rest stays a two-space JSON list."""
    repo = tmp_path / "checkout"
    shutil.copytree(HW / "checkout", repo)
    path = repo / "tools/linter/adapters/test_linter_allowlist.json"
    assert (True, False, '[\n  "test/test_aaa_other.py",\n  "test/test_zzz_other.py"\n]\n') == (
        take_out_of_allowlist(repo, "test/test_pool_ops.py"),
        take_out_of_allowlist(repo, "test/test_pool_ops.py"), path.read_text())


def test_the_checkout_linter_is_run_by_its_command_line_and_its_lines_read(tmp_path: Path) -> None:
    """The checkout's script, run as `python test_linter.py FILE`, skips a listed file and reports it once out."""
    repo = tmp_path / "checkout"
    shutil.copytree(HW / "checkout", repo)
    file = repo / "test" / "test_pool_ops.py"
    file.write_text(label_classes(file.read_text(), {}).code)
    argv = [sys.executable, str(repo / "tools/linter/adapters/test_linter.py"), str(file)]
    listed = subprocess.run(argv, capture_output=True, text=True, cwd=repo, check=True).stdout
    take_out_of_allowlist(repo, "test/test_pool_ops.py")
    out = subprocess.run(argv, capture_output=True, text=True, cwd=repo, check=True).stdout
    found = read_messages(out, "test/test_pool_ops.py")
    assert ("", [(31, "TEST_LINTER[decorator]", "error")], True) == (
        listed, [(f.line, f.code, f.severity) for f in found],
        found[0].message.startswith("fixture linter: TestPoolOpsDeviceType.test_pool_cpu_layout uses @onlyCPU"))


def test_line_length_counts_only_changed_lines_against_the_checkouts_flake8(tmp_path: Path) -> None:
    """A long line the original had is not the refactor's; a new one past .flake8's limit is an E501 error."""
    (tmp_path / ".flake8").write_text("[flake8]\nmax-line-length = 40\n")
    before = "x = 1\n" + "y" * 50 + "\n"
    after = "x = 1\n" + "y" * 50 + "\n" + "z = '" + "a" * 45 + "'\n"
    assert (40, 120, [(3, "E501")]) == (max_line_length(tmp_path), max_line_length(tmp_path / "none"),
                                        _names(line_length(before, after, "t.py", 40)))


def test_hw_run_lines_are_read_and_every_test_must_be_accounted_for() -> None:
    """The runner's count line is read; runs that miss tests or see unclassified ones are problems; no line is an error."""
    line = "HW classification mode active (['GENERIC']): total=5, passed=2, unclassified=0, mismatched=3"
    generic = read_run("GENERIC", 0, "noise\n" + line + "\n..\nOK\n")
    accel = HwRun(label="ACCELERATOR", total=5, passed=3, unclassified=0, mismatched=2, code=0)
    with pytest.raises(HwRunError):
        read_run("CUDA", 2, "usage: error: unrecognized arguments: --hw-classification")
    assert ((5, 2), [], ["the labels' runs selected 2 of 5 tests"]) == (
        (generic.total, generic.passed), account([generic, accel]), account([generic]))


def test_pr_description_is_the_initiatives_form() -> None:
    """Title, tracking issue, label request, the class table, the test plan and what did not run."""
    lines = render_pr(PrInput(rel="test/nn/test_dropout.py", classes=class_rows(read(HW / "compliant.py")),
                              linter="the checkout's tools/linter/adapters/test_linter.py", linter_passed=True,
                              hw_counts={"GENERIC": 1, "ACCELERATOR": 2}, hw_passed=True, devices=["cpu"],
                              cuda_decoupled=True))
    wanted = ["### [Testcase Refactoring] Decouple test/nn/test_dropout.py from CUDA-specific",
              "Part of pytorch/pytorch#185590.", "Label request: `module: tests/graph`.",
              "| TestDoneGeneric | GENERIC | 1 |", "| TestDoneDevice | ACCELERATOR | 2 |",
              "python tools/linter/adapters/test_linter.py test/nn/test_dropout.py",
              "python test/nn/test_dropout.py --hw-classification GENERIC   # 1 test",
              "- `--hw-classification` runs: 3 tests as instantiated here (from the 3 test methods above), "
              "each in exactly one label's run, none unclassified."]
    assert ([], True) == ([w for w in wanted if w not in lines],
                          any(line.startswith("- Not run here: the ACCELERATOR classes' tests") for line in lines))


def _torch_with_enum() -> str:
    """The reason to skip when this interpreter's torch lacks HardwareClassification, else ''."""
    torch = pytest.importorskip("torch")
    from torch.testing._internal import common_utils

    if not hasattr(common_utils, "HardwareClassification"):
        return f"torch {torch.__version__} has no HardwareClassification (torch 2.14.1 and later have it)"
    return ""


def _run(argv: list[str], cwd: Path) -> tuple[int, str]:
    res = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, timeout=300, env=hw_env(os.environ))
    return res.returncode, res.stdout + res.stderr


@pytest.mark.torch
def test_one_counting_run_gives_each_labels_line_as_pytorchs_own_runner_does(tmp_path: Path) -> None:
    """On torch 2.14.1 the counting run (one interpreter, no test run) prints, for each label,
    the line `python FILE --hw-classification LABEL` prints, and the labels add up to the whole
    file; a label this torch lacks gets no line and is named; a class that extends unittest's
    TestCase makes it exit 1 with no count line, as run_tests() does; a file that never calls
    run_tests() is said to, never counted."""
    why = _torch_with_enum()
    if why:
        pytest.skip(why)
    file = tmp_path / "test_done.py"
    shutil.copy(HW / "compliant.py", file)
    labels = ["ACCELERATOR", "CPU", "GENERIC"]
    code, out = _run(count_argv(forkserver.python("torch"), file, [*labels, "NOSUCH"]), tmp_path)
    counted = {label: read_run(label, code, out) for label in labels}
    with pytest.raises(HwRunError):  # a label this torch lacks has no line; the others stand
        read_run("NOSUCH", code, out)
    upstream = {label: read_run(label, *_run([forkserver.python("torch"), str(file), "--hw-classification", label], tmp_path))
                for label in ("GENERIC", "ACCELERATOR")}
    assert ([("ACCELERATOR", 2, 0), ("CPU", 0, 0), ("GENERIC", 1, 0)], [], 3, True) == (
        [(r.label, r.passed, r.code) for r in counted.values()], account(list(counted.values())),
        counted["GENERIC"].total, "no such hw_classification in this torch: NOSUCH" in out)
    assert {k: r.model_dump() for k, r in upstream.items()} == {k: counted[k].model_dump() for k in upstream}

    plain = tmp_path / "test_plain.py"
    plain.write_text(file.read_text().replace("class TestDoneGeneric(TestCase)", "class TestDoneGeneric(unittest.TestCase)")
                     .replace("import torch\n", "import unittest\n\nimport torch\n", 1))
    refused = _run(count_argv(forkserver.python("torch"), plain, ["GENERIC"]), tmp_path)  # run_tests() exits 1 on it
    nomain = tmp_path / "test_nomain.py"
    nomain.write_text(file.read_text().split('if __name__ == "__main__":')[0])
    unmain = _run(count_argv(forkserver.python("torch"), nomain, ["GENERIC"]), tmp_path)
    assert ((1, False), 3, True) == ((refused[0], "HW classification mode" in refused[1]),
                                     unmain[0], "without calling run_tests()" in unmain[1])


def test_linter_output_keeps_severity_and_line_and_skips_logs() -> None:
    """The JSON reader skips log lines and keeps the linter's severity and line."""
    out = "log line\n" + json.dumps({"path": "p", "line": 7, "severity": "warning", "name": "[x]",
                                     "description": "d"}) + "\n"
    assert [(7, "TEST_LINTER[x]", "warning")] == [(f.line, f.code, f.severity) for f in read_messages(out, "p")]



def test_lint_flags_only_cpu_moves_plain_class_devices_and_device_apis() -> None:
    """@onlyCPU in a device class (L011), CUDA gates / hard-coded devices in a plain class (L012), and
    torch.cuda calls in widened tests (L014: an accelerator twin, or none) are errors."""
    from flow.workflows.refactor.lint import lint

    found = [(f.code, f.line) for f in lint(assess_source(read(HW / "device_idioms.py"), "t.py"))
             if f.code in ("L011", "L012", "L014")]
    messages = {f.code + str(f.line): f.message for f in lint(assess_source(read(HW / "device_idioms.py"), "t.py"))}
    assert ([("L012", 19), ("L012", 22), ("L011", 27), ("L014", 34), ("L014", 37)], True, True) == (
        sorted(found, key=lambda x: x[1]), "use torch.accelerator.synchronize" in messages["L01434"],
        "keep the test in a class of that device" in messages["L01437"])


def test_the_device_api_codemod_renames_same_call_apis_only_in_widened_tests() -> None:
    """torch.cuda.synchronize() becomes torch.accelerator.synchronize() under @onlyAccelerator; a
    device-specific API and tests that are not widened are left alone."""
    from flow.workflows.refactor.hwcodemod import rename_device_apis

    result = rename_device_apis(read(HW / "device_idioms.py"))
    assert ([("HW002", 34)], True, True) == (
        [(c.rule_id, c.line) for c in result.changes], "torch.accelerator.synchronize()" in result.code,
        "torch.cuda.get_device_capability()" in result.code)


STREAMS = '''
class TestSideStreamsDevice(TestCase):
    hw_classification = HardwareClassification.ACCELERATOR

    def test_overlap(self, device):
        side = torch.cuda.Stream()
        done = torch.cuda.Event(enable_timing=True)
        kept = torch.cuda.Stream(priority=-1)
        with torch.cuda.amp.autocast(dtype=torch.half):
            pass
        with autocast("cuda", enabled=False):
            pass
        spent = prof.key_averages()[0].self_cuda_time_total

    def helper(self):
        return torch.cuda.Stream()


class TestSideStreams(TestCase):
    def test_plain(self):
        side = torch.cuda.Stream()
'''


def test_the_device_api_codemod_rewrites_streams_events_autocast_and_time_totals_where_safe() -> None:
    """In a test run on every accelerator that has `device`: Stream/Event take the device,
    autocast names the device's type, the profiler's CUDA time becomes device time; a call with
    arguments the generic API lacks (priority=), a helper and a plain class's test are left;
    a second run changes nothing."""
    from flow.workflows.refactor.hwcodemod import rename_device_apis

    once = rename_device_apis(STREAMS)
    wanted = ["side = torch.Stream(device=device)", "done = torch.Event(device=device, enable_timing=True)",
              "kept = torch.cuda.Stream(priority=-1)",
              "with torch.autocast(device_type=torch.device(device).type, dtype=torch.half):",
              'with autocast(device_type=torch.device(device).type, enabled=False):',
              "spent = prof.key_averages()[0].self_device_time_total", "return torch.cuda.Stream()",
              "    def test_plain(self):\n        side = torch.cuda.Stream()"]
    assert ([w for w in wanted if w not in once.code], [6, 7, 9, 11, 13], []) == (
        [], [c.line for c in once.changes], rename_device_apis(once.code).changes)
