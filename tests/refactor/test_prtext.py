"""The PR description states what reviewers look for (seed phase 7): wider device coverage
with the except_for choice, a title that matches the change, no line about classes the file
does not have, nothing of the local disk, and counts in the right number."""

from __future__ import annotations

from flow.workflows.refactor.prchange import cuda_decoupled, label_only, wider_coverage
from flow.workflows.refactor.prtext import ClassRow, PrInput, class_rows, render_pr

HEAD = ("import torch\nfrom torch.testing._internal.common_device_type import (\n"
        "    instantiate_device_type_tests, onlyAccelerator, onlyCUDAAndPRIVATEUSE1, onlyCPU)\n"
        "from torch.testing._internal.common_utils import TestCase, run_tests\n")

NARROW = HEAD + '''

class TestScatter(TestCase):
    def test_scatter_add(self, device):
        torch.zeros(3, device=device).scatter_add_(0, torch.tensor([0], device=device), torch.ones(1, device=device))


class TestGather(TestCase):
    @onlyCUDAAndPRIVATEUSE1
    def test_gather_big(self, device):
        torch.arange(4, device=device).gather(0, torch.tensor([1], device=device))

    @onlyCPU
    def test_gather_cpu_only(self, device):
        torch.arange(4).gather(0, torch.tensor([1]))


instantiate_device_type_tests(TestScatter, globals(), only_for="cuda")
instantiate_device_type_tests(TestGather, globals())
'''

WIDE = HEAD.replace("from torch.testing._internal.common_utils import TestCase, run_tests",
                    "from torch.testing._internal.common_utils import HardwareClassification, TestCase, run_tests") + '''

class TestScatter(TestCase):
    hw_classification = HardwareClassification.ACCELERATOR

    def test_scatter_add(self, device):
        torch.zeros(3, device=device).scatter_add_(0, torch.tensor([0], device=device), torch.ones(1, device=device))


class TestGather(TestCase):
    hw_classification = HardwareClassification.ACCELERATOR

    @onlyAccelerator
    def test_gather_big(self, device):
        torch.arange(4, device=device).gather(0, torch.tensor([1], device=device))


class TestGatherCPU(TestCase):
    hw_classification = HardwareClassification.CPU

    def test_gather_cpu_only(self, device):
        torch.arange(4).gather(0, torch.tensor([1]))


instantiate_device_type_tests(TestScatter, globals())
instantiate_device_type_tests(TestGather, globals())
instantiate_device_type_tests(TestGatherCPU, globals(), only_for="cpu")
'''


def test_wider_coverage_names_only_for_removed_and_decorators_widened_not_tests_moved_to_one_device() -> None:
    """only_for='cuda' dropped and @onlyCUDAAndPRIVATEUSE1 -> @onlyAccelerator are wider; the
    @onlyCPU test moved to a CPU class is not."""
    assert ["`TestScatter`: `only_for='cuda'` removed, so its tests now run on every device type",
            "`@onlyCUDAAndPRIVATEUSE1` widened to `@onlyAccelerator` (every accelerator): `test_gather_big`"] == \
        wider_coverage(NARROW, WIDE)


def test_the_pr_states_the_wider_coverage_and_offers_except_for() -> None:
    text = "\n".join(render_pr(PrInput(rel="test/test_gather.py", coverage=wider_coverage(NARROW, WIDE),
                                       cuda_decoupled=cuda_decoupled(NARROW, WIDE),
                                       classes=[ClassRow(name="TestScatter", hw_classification="ACCELERATOR", tests=1)],
                                       hw_counts={"ACCELERATOR": 1}, hw_passed=True)))
    assert (True, True, True, True) == (
        "now run on every device type" in text, "`@onlyAccelerator`" in text, "`except_for=[...]`" in text,
        "Decouple test/test_gather.py from CUDA-specific" in text)


PAIR = HEAD.replace("onlyCPU)", "onlyCPU, onlyCUDA)") + '''

class TestSeedOps(TestCase):
    @onlyCUDA
    def test_matches_host(self, device):
        torch.ones(2, device=device)


class TestSeedGraphs(TestCase):
    @onlyCUDA
    def test_matches_host(self, device):
        torch.ones(2, device=device)


instantiate_device_type_tests(TestSeedOps, globals(), only_for=("cpu", "cuda"))
instantiate_device_type_tests(TestSeedGraphs, globals(), only_for=("cpu", "cuda"))
'''


def test_a_recurring_method_name_is_told_by_class_and_an_except_for_is_said() -> None:
    """Two classes with the same method: only the widened one is listed, as Class.test; an
    only_for replaced by an except_for says which device types still do not run the tests, and
    the PR then says it set that except_for instead of 'none was added here'."""
    after = PAIR.replace("only_for=(\"cpu\", \"cuda\"))\ninstantiate_device_type_tests(TestSeedGraphs",
                         "except_for=(\"mps\", \"xpu\"))\ninstantiate_device_type_tests(TestSeedGraphs")
    after = after.replace("class TestSeedOps(TestCase):\n    @onlyCUDA", "class TestSeedOps(TestCase):\n    @onlyAccelerator")
    after = after.replace("TestSeedGraphs, globals(), only_for=(\"cpu\", \"cuda\")", "TestSeedGraphs, globals(), only_for=\"cuda\"")
    coverage = wider_coverage(PAIR, after)
    text = "\n".join(render_pr(PrInput(rel="test/test_seed.py", coverage=coverage)))
    assert (["`TestSeedOps`: `only_for=['cpu', 'cuda']` removed, so its tests now run on every device type "
             "but those of `except_for=['mps', 'xpu']`",
             "`@onlyCUDA` widened to `@onlyAccelerator` (every accelerator): `TestSeedOps.test_matches_host`"],
            True, False) == (
        coverage, "this PR sets the `except_for` listed above" in text, "none was added here" in text)


def test_a_label_only_change_is_titled_as_labelling() -> None:
    """Adding hw_classification (and the enum to the import) is label-only; widening is not."""
    before = HEAD + "\n\nclass TestPlain(TestCase):\n    def test_a(self):\n        pass\n"
    after = before.replace("TestCase, run_tests", "HardwareClassification, TestCase, run_tests").replace(
        "class TestPlain(TestCase):\n", "class TestPlain(TestCase):\n    hw_classification = HardwareClassification.GENERIC\n\n")
    text = "\n".join(render_pr(PrInput(rel="test/test_plain.py", label_only=label_only(before, after))))
    assert (True, False, True, False) == (
        label_only(before, after), label_only(NARROW, WIDE),
        text.startswith("### [Testcase Refactoring] Label test/test_plain.py with hw_classification"),
        "Decouple" in text)


def test_no_accelerator_line_without_accelerator_classes_no_local_paths_and_right_plurals() -> None:
    """A file of GENERIC classes gets no 'not run here' line; absolute paths are shortened;
    one test is '1 test'."""
    generic = PrInput(rel="test/test_plain.py", classes=[ClassRow(name="TestPlain", hw_classification="GENERIC", tests=1)],
                      hw_counts={"GENERIC": 1}, hw_passed=True, devices=["cpu"],
                      linter="the checkout's tools/linter/adapters/test_linter.py (run by /home/me/venv/bin/python)",
                      local_tests="with /home/me/venv/bin/python (2.14.1 at /home/me/venv/lib/torch): cpu: 1 passed")
    accel = generic.model_copy(update={"classes": [ClassRow(name="TestDev", hw_classification="ACCELERATOR", tests=2)]})
    text, other = "\n".join(render_pr(generic)), "\n".join(render_pr(accel))
    assert (False, True, False, True, True) == (
        "Not run here" in text, "Not run here: the ACCELERATOR classes' tests" in other, "/home/me" in text,
        "--hw-classification GENERIC   # 1 test\n" in text, "1 test as instantiated here (from the 1 test method above)" in text)


def test_the_pr_says_which_failures_the_original_shares_and_which_were_not_checked() -> None:
    """Deferred failures are said in the PR description itself, by class and method: the ones
    the original fails the same way as failing before the change, the others as not fixed."""
    text = "\n".join(render_pr(PrInput(
        rel="test/test_keys.py", local_tests="cpu: 2 failed, 5 passed (torch 2.14.1)",
        preexisting=["test.test_keys.TestKeysCPU.test_wrong_device_cpu", "test.test_keys.TestKeysCPU.test_big_cpu"],
        deferred=["test.test_keys.TestKeysCPU.test_flaky_cpu"])))
    assert (True, True) == (
        "- Failing before this change too (the original file, run the same way, fails them): "
        "`TestKeysCPU.test_wrong_device_cpu`, `TestKeysCPU.test_big_cpu`." in text,
        "- Failing here and not fixed by this PR (deferred without a check against the original): "
        "`TestKeysCPU.test_flaky_cpu`." in text)


KETTLE = """
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests, onlyCPU, onlyCUDA
from torch.testing._internal.common_utils import TestCase


class TestKettle(TestCase):
    @onlyCPU
    def test_boil(self, device):
        pass

    @dtypes(torch.float32, torch.float64)
    def test_heat(self, device, dtype):
        pass

    @onlyCUDA
    def test_whistle(self, device):
        pass


class TestKettlePlain(TestCase):
    def test_lid(self):
        pass


instantiate_device_type_tests(TestKettle, globals())
"""

KETTLE_AFTER = """
import torch
from torch.testing._internal.common_device_type import dtypes, instantiate_device_type_tests, onlyAccelerator
from torch.testing._internal.common_utils import HardwareClassification, TestCase


class TestKettle(TestCase):
    hw_classification = HardwareClassification.GENERIC

    def test_boil(self):
        pass


class TestKettleDevice(TestCase):
    hw_classification = HardwareClassification.ACCELERATOR

    @dtypes(torch.float32, torch.float64)
    def test_heat(self, device, dtype):
        pass

    @onlyAccelerator
    def test_whistle(self, device):
        pass

    def test_lid(self, device):
        pass


instantiate_device_type_tests(TestKettleDevice, globals())
"""


def _kettle_pr(before: str, after: str, **kw: object) -> str:
    from flow.workflows.refactor.prtext import MovedRow
    from flow.workflows.refactor.testids import moved_tests

    labels = {c.name: c.hw_classification for c in class_rows(after)}
    moved = [MovedRow(test=m.fn, old_class=m.old_class, new_class=m.new_class, old_ids=list(m.old_ids),
                      new_ids=list(m.new_ids), label=labels.get(m.new_class), old_pattern=m.old_pattern,
                      new_pattern=m.new_pattern) for m in moved_tests(before, after)]
    return "\n".join(render_pr(PrInput(rel="test/test_kettle.py", classes=class_rows(after), moved=moved,
                                       cuda_decoupled=cuda_decoupled(before, after), **kw)))  # type: ignore[arg-type]


def test_the_pr_lists_each_moved_test_with_its_old_and_new_ids() -> None:
    """device -> plain (the CPU id of an @onlyCPU test), device -> another device class (a
    @dtypes test as a glob, the @onlyCUDA test's CUDA id), plain -> device; a test that stays
    is not listed."""
    text = _kettle_pr(KETTLE, KETTLE_AFTER)
    rows = [line for line in text.splitlines() if line.startswith("| `test_")]
    assert ["| `test_boil` | `TestKettleCPU.test_boil_cpu` | `TestKettle.test_boil` (GENERIC) |",
            "| `test_heat` | `TestKettleCPU.test_heat_*cpu*`, `TestKettleCUDA.test_heat_*cuda*` | "
            "`TestKettleDeviceCPU.test_heat_*cpu*`, `TestKettleDeviceCUDA.test_heat_*cuda*` (ACCELERATOR) |",
            "| `test_whistle` | `TestKettleCUDA.test_whistle_cuda` | `TestKettleDeviceCUDA.test_whistle_cuda` (ACCELERATOR) |",
            "| `test_lid` | `TestKettlePlain.test_lid` | `TestKettleDeviceCPU.test_lid_cpu`, "
            "`TestKettleDeviceCUDA.test_lid_cuda` (ACCELERATOR) |"] == rows
    assert "Tests that change class (4): their test ids change" in text


def test_the_title_says_what_the_change_does() -> None:
    """CUDA-specific only when a CUDA-only marker went (@onlyCUDA widened); a class made GENERIC
    and tests moved otherwise; label-only stays label-only."""
    no_cuda_before = KETTLE.replace("    @onlyCUDA\n    def test_whistle(self, device):\n        pass\n\n", "")
    no_cuda_after = KETTLE_AFTER.replace("    @onlyAccelerator\n    def test_whistle(self, device):\n        pass\n\n", "")
    assert ["### [Testcase Refactoring] Decouple test/test_kettle.py from CUDA-specific and make TestKettle "
            "GENERIC and move 3 tests to ACCELERATOR TestKettleDevice",
            "### [Testcase Refactoring] Make TestKettle GENERIC and move 2 tests to ACCELERATOR TestKettleDevice "
            "in test/test_kettle.py",
            "### [Testcase Refactoring] Label test/test_kettle.py with hw_classification"] == [
        _kettle_pr(KETTLE, KETTLE_AFTER).splitlines()[0], _kettle_pr(no_cuda_before, no_cuda_after).splitlines()[0],
        "\n".join(render_pr(PrInput(rel="test/test_kettle.py", label_only=True))).splitlines()[0]]


def test_no_path_of_this_machine_reaches_the_pr_text_even_with_spaces() -> None:
    """The checkout, the interpreter and the flow folder, one path with a space: a path in the
    checkout becomes relative, the interpreter is `python`, and no other absolute path is left."""
    local = {"/srv/my pytorch": "the checkout", "/srv/my pytorch/.venv/bin/python": "python",
             "/home/me/ws/refactor/core/test_kettle": "the flow folder"}
    text = _kettle_pr(KETTLE, KETTLE_AFTER, local=local, linter="the checkout's tools/linter/adapters/test_linter.py",
                      hw_note="ran /srv/my pytorch/.venv/bin/python /srv/my pytorch/test/test_kettle.py",
                      local_tests="cpu: 3 passed (log /home/me/ws/refactor/core/test_kettle/logs/a.log)")
    assert ("/srv" in text, "my pytorch" in text, "/home" in text, "ran python test/test_kettle.py" in text,
            "(log logs/a.log)" in text) == (False, False, False, True, True), text


def test_many_moved_tests_are_one_row_per_pair_of_classes() -> None:
    """Past 25 moved tests the table has one row per pair of classes, with every test named and
    the ids as a pattern."""
    many = "".join(f"    def test_n{i}(self, device):\n        pass\n\n" for i in range(30))
    before = f"class TestAbacus(TestCase):\n{many}\ninstantiate_device_type_tests(TestAbacus, globals())\n"
    after = ("class TestAbacusDevice(TestCase):\n    hw_classification = HardwareClassification.ACCELERATOR\n\n"
             f"{many}\ninstantiate_device_type_tests(TestAbacusDevice, globals())\n")
    rows = [line for line in _kettle_pr(before, after).splitlines() if line.startswith("| 30 tests")]
    assert 1 == len(rows) and rows[0].endswith(
        "| `TestAbacusCPU.<test>_cpu, TestAbacusCUDA.<test>_cuda` | "
        "`TestAbacusDeviceCPU.<test>_cpu, TestAbacusDeviceCUDA.<test>_cuda` (ACCELERATOR) |"), rows
