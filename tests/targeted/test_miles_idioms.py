"""Each real miles idiom behind a wrong plan, as a small fixture tree in our words.

The trees use the miles profile (reference/targeted/miles.toml): CPU suites run under
pytest, GPU suites as ``python3 file.py``; run-ci-amd selects ROCm registrations only.
"""

from __future__ import annotations

from flow.workflows.targeted.config import load_profile
from flow.workflows.targeted.select import choose
from flow.workflows.targeted.trace import affected_tests

CFG = load_profile("miles")
REG = "from tests.ci.ci_register import register_cuda_ci, register_cpu_ci, register_rocm_ci\n"
CI = {"tests/__init__.py": "", "tests/ci/__init__.py": "",
      "tests/ci/ci_register.py": "from tests.ci.labels import KNOWN\n"
                                 "def register_cuda_ci(*a, **k): pass\n"
                                 "def register_cpu_ci(*a, **k): pass\n"
                                 "def register_rocm_ci(*a, **k): pass\n",
      "tests/ci/labels.py": 'KNOWN = {"short": "Short smoke tests", '
                            '"qwen35": "Qwen3.5-35B-A3B MTP tests"}\n',
      "miles/__init__.py": "", "miles/lib.py": "X = 1\n"}


def cuda(labels: str = '["short"]', suite: str = "stage-b-2-gpu-h200", body: str = "") -> str:
    return f'{REG}{body}register_cuda_ci(est_time=60, suite="{suite}", labels={labels})\n'


def run(repo, base: dict[str, str], head: dict[str, str | None]):
    first = repo.commit({**CI, **base})
    repo.commit(head)
    report = affected_tests(repo.path, first, config=CFG)
    return report, choose(report, CFG)


def test_run_ci_amd_covers_only_the_rocm_copy(repo):
    """A file registered for CUDA and ROCm: the CUDA copy runs by file, run-ci-amd is added
    only for the ROCm copy, and the label's coverage names the ROCm suite alone."""
    test = cuda(body="import miles.lib\n") + \
        'register_rocm_ci(est_time=60, suite="stage-c-4-gpu-mi350", labels=["amd"])\n'
    report, plan = run(repo, {"tests/fast-gpu/test_hw.py": test}, {"miles/lib.py": "X = 2\n"})
    amd = next(c for c in report.labels if c.label == "run-ci-amd")
    assert ("files", ["/rerun-test tests/fast-gpu/test_hw.py"], ["run-ci-amd"],
            ["tests/fast-gpu/test_hw.py@stage-c-4-gpu-mi350"]) == (
        plan.mode, plan.comments, plan.labels, amd.tests)


def test_docs_only_change_needs_no_gpu_run(repo):
    """docs/ and *.md paths are on miles' no-GPU allowlist: no labels, a stated reason."""
    _, plan = run(repo, {"docs/a.md": "x\n", "README.md": "x\n", "docs/img.png": "x"},
                  {"docs/a.md": "y\n", "README.md": "y\n", "docs/img.png": "y"})
    assert ("nothing", [], True) == (plan.mode, plan.labels,
                                     plan.reasons[0].startswith("no GPU CI needed"))


def test_conftest_reaches_only_tests_pytest_runs(repo):
    """tests/conftest.py loads for CPU tests (pytest) and a GPU test calling pytest.main,
    never for a GPU test started as python3 file.py."""
    base = {"miles/mock_server.py": "S = 1\n",
            "tests/conftest.py": "from miles.mock_server import S\n",
            "tests/fast/test_cpu.py": "def test_x(): pass\n",
            "tests/e2e/test_script.py": cuda(),
            "tests/e2e/test_pytest.py": cuda(body="import pytest\n")
            + 'if __name__ == "__main__":\n    pytest.main([__file__])\n'}
    report, _ = run(repo, base, {"miles/mock_server.py": "S = 2\n"})
    assert ["tests/e2e/test_pytest.py", "tests/fast/test_cpu.py"] == sorted(
        {t.path for t in report.tests})


def test_docstrings_and_help_text_are_not_loads(repo):
    """A path named in a docstring or an argparse help text creates no edge."""
    base = {"tests/e2e/test_doc.py": '"""Exercises miles/lib.py indirectly."""\n' + cuda(),
            "miles/args.py": 'import argparse\np = argparse.ArgumentParser()\n'
                             'p.add_argument("--f", help="e.g. miles/lib.py:fn")\n',
            "tests/e2e/test_args.py": cuda(body="import miles.args\n")}
    report, _ = run(repo, base, {"miles/lib.py": "X = 2\n"})
    assert ([], ["miles/lib.py"]) == (report.tests, report.unimported)


def test_label_description_is_not_a_load(repo):
    """tests/ci/labels.py describing a label with a model's name does not load the model
    file; the tests that name the model do."""
    base = {"scripts/models/qwen3.5-35B-A3B.py": "N = 40\n",
            "tests/e2e/test_mtp.py": cuda('["qwen35"]', body='MODEL = "qwen3.5-35B-A3B"\n'),
            "tests/e2e/test_other.py": cuda()}  # imports the registry, not the model
    report, plan = run(repo, base, {"scripts/models/qwen3.5-35B-A3B.py": "N = 41\n"})
    assert (["tests/e2e/test_mtp.py"], [], "files") == (
        [t.path for t in report.tests], report.hubs, plan.mode)


def test_dotted_folders_resolve(repo):
    """A path under .github/ named in a test's string resolves (the dot is kept)."""
    base = {".github/scripts/check.py": "C = 1\n",
            "tests/ci/test/test_check.py":
                'CMD = "python .github/scripts/check.py --x"\ndef test_c(): pass\n'
                'from tests.ci.ci_register import register_cpu_ci\n'
                'register_cpu_ci(est_time=5, suite="stage-a-cpu")\n'}
    report, _ = run(repo, base, {".github/scripts/check.py": "C = 2\n"})
    assert ["tests/ci/test/test_check.py"] == [t.path for t in report.tests]


def test_conftest_sys_path_folder_is_followed(repo):
    """A conftest that puts an example folder (from its package's EXAMPLE_DIR) on sys.path
    makes the tests' bare imports of that folder's modules edges."""
    base = {"examples/my-ex/agent_fn.py": "A = 1\n",
            "tests/fast/examples/my_ex/__init__.py":
                "from pathlib import Path\n"
                'EXAMPLE_DIR = Path(__file__).resolve().parents[4] / "examples" / "my-ex"\n',
            "tests/fast/examples/my_ex/conftest.py":
                "import sys\nfrom . import EXAMPLE_DIR\nsys.path.insert(0, str(EXAMPLE_DIR))\n",
            "tests/fast/examples/my_ex/test_agent.py": "import agent_fn\ndef test(): pass\n"}
    report, _ = run(repo, base, {"examples/my-ex/agent_fn.py": "A = 2\n"})
    assert ["tests/fast/examples/my_ex/test_agent.py"] == [t.path for t in report.tests]


def test_positional_float_registration_is_read(repo):
    """register_cuda_ci(60.5, "suite", labels=[...]) is valid, as miles accepts it."""
    base = {"tests/e2e/test_pos.py": REG + "import miles.lib\n"
            'register_cuda_ci(60.5, "stage-b-2-gpu-h200", labels=["short"])\n'}
    report, plan = run(repo, base, {"miles/lib.py": "X = 2\n"})
    assert ([], [60.5], ["/rerun-test tests/e2e/test_pos.py"]) == (
        report.unreadable, [t.est_time for t in report.tests], plan.comments)


def test_top_level_test_files_are_not_ci_tests(repo):
    """tests/test_*.py at the top is outside miles' discovery roots: never unreadable."""
    base = {"tests/test_old.py": "import miles.lib\ndef test(): pass\n"}
    report, plan = run(repo, base, {"miles/lib.py": "X = 2\n"})
    assert ([], [], "nothing") == (report.tests, report.unreadable, plan.mode)


def test_hub_lists_the_tests_behind_it(repo):
    """A hub names the tests behind it; past the domain-label limit the plan is the
    fallback smoke label, never an empty label list."""
    base = {f"tests/e2e/test_{i}.py": cuda(f'["d{i}"]', body="import miles.lib\n")
            for i in range(6)}
    first = repo.commit({**CI, **base})
    repo.commit({"miles/lib.py": "X = 2\n"})
    report = affected_tests(repo.path, first, config=CFG, hub_limit=3)
    plan = choose(report, CFG)
    assert (6, "labels", ["run-ci-short"]) == (len(report.hubs[0].tests), plan.mode,
                                               plan.labels)


def test_registration_only_change_takes_the_labels_that_select_it(repo):
    """A test whose diff only re-enables its ROCm registration changed no code: no file
    run for its CUDA copy; run-ci-amd shows the ROCm suite now selects it."""
    test = (cuda(body="import miles.lib\n") + 'register_rocm_ci(\n    est_time=60,\n'
            '    suite="stage-c-4-gpu-mi350",\n    labels=["amd"],\n    disabled="flaky",\n)\n')
    report, plan = run(repo, {"tests/e2e/test_r.py": test},
                       {"tests/e2e/test_r.py": test.replace('    disabled="flaky",\n', "")})
    assert (["tests/e2e/test_r.py@stage-c-4-gpu-mi350"], [], "labels", ["run-ci-amd"]) == (
        report.registration_changes, report.tests, plan.mode, plan.labels)


LAUNCHER = ("from pathlib import Path\n"
            '_CONVERTER = Path("tools") / "make_ckpt.py"\n'
            "def launch(repo_base):\n"
            '    return f"python {repo_base}/{_CONVERTER} --out /tmp/ckpt"\n')


def test_a_script_launched_by_a_path_held_in_a_name_is_traced(repo):
    """command_utils builds the launch path from a module constant (a Path join); the one
    CUDA test running the launcher is planned, and train.py naming the script only in an
    error message is no edge: the script stays 'loaded some other way' nowhere."""
    base = {"miles/utils/__init__.py": "", "miles/utils/command_utils.py": LAUNCHER,
            "tools/make_ckpt.py": "print('converting')\n",
            "train.py": "import miles.lib\n"
                        "def main(ckpt):\n"
                        "    if ckpt is None:\n"
                        '        raise SystemExit("no checkpoint: run tools/make_ckpt.py first")\n',
            "tests/e2e/test_ckpt.py": cuda(body="from miles.utils.command_utils import launch\n"),
            "tests/e2e/test_other.py": cuda(body="import miles.lib\n")}
    report, plan = run(repo, base, {"tools/make_ckpt.py": "print('converting v2')\n"})
    assert ["/rerun-test tests/e2e/test_ckpt.py"] == plan.comments
    assert [] == [e.path for e in report.entry_loads]


def test_a_path_in_log_text_or_an_exception_is_never_an_edge(repo):
    """A module that only mentions a script in a log line or a raised error does not load
    it: a change to the script reaches no test through that module."""
    base = {"miles/utils/__init__.py": "",
            "miles/utils/notes.py": "import logging\nlogger = logging.getLogger(__name__)\n"
                                    "def warn_user():\n"
                                    '    logger.warning("old ckpt; see tools/make_ckpt.py")\n'
                                    '    raise ValueError(f"run {1} tools/make_ckpt.py again")\n',
            "tools/make_ckpt.py": "print('converting')\n",
            "tests/e2e/test_notes.py": cuda(body="import miles.utils.notes\n")}
    report, plan = run(repo, base, {"tools/make_ckpt.py": "print('converting v2')\n"})
    assert "/rerun-test tests/e2e/test_notes.py" not in plan.comments
    assert "tests/e2e/test_notes.py" not in {t.path for t in report.tests}
