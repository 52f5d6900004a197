"""What labels really cost: a PR Test run a label starts also runs every always-on
registration (a CPU test declaring no labels), and a plan's total counts each
registration once. Real git repositories, the generic config."""

from __future__ import annotations

from flow.workflows.targeted.config import TargetedConfig
from flow.workflows.targeted.report import plan_total, render_text
from flow.workflows.targeted.select import choose
from flow.workflows.targeted.trace import affected_tests

from .conftest import cuda_test

LIB = {"pkg/__init__.py": "", "pkg/a.py": "A = 1\n", "pkg/b.py": "B = 1\n"}
CPU_ON = "import pkg.b\nregister_cpu_ci(est_time=40, suite='stage-a-cpu', labels=[])\n"


def trace(repo, files, head):
    base = repo.commit({**LIB, **files})
    repo.commit(head)
    report = affected_tests(repo.path, base, config=TargetedConfig())
    return report, choose(report, TargetedConfig())


def test_each_label_costs_its_tests_and_the_always_on_ones(repo):
    """run-ci-x selects one CUDA test (300 s); the two always-on CPU tests (80 s) run
    under it too: 3 registrations, 380 s, the always-on part named."""
    report, _ = trace(repo, {"tests/test_x.py": cuda_test("import pkg.a", labels=["x"], est=300),
                             "tests/test_on1.py": CPU_ON, "tests/test_on2.py": CPU_ON},
                      {"pkg/a.py": "A = 2\n"})
    cost = next(c for c in report.costs if c.label == "run-ci-x")
    assert (3, 380.0, 2, 80.0, ["tests/test_x.py@stage-b-2-gpu-h200"]) == (
        cost.registrations, cost.est_time, cost.always_on, cost.always_on_est, cost.keys)


def test_the_total_counts_a_registration_two_labels_share_once(repo):
    """Two labels selecting one shared test and one each: the total holds three labelled
    registrations and the always-on one once, plus the file run."""
    files = {"tests/test_xy.py": cuda_test("import pkg.a", labels=["x", "y"], est=100),
             "tests/test_x.py": cuda_test("import pkg.a", labels=["x"], est=200),
             "tests/test_y.py": cuda_test("import pkg.a", labels=["y"], est=400),
             "tests/test_on.py": CPU_ON}
    report, _ = trace(repo, files, {"pkg/a.py": "A = 2\n"})
    assert "est 740s: 4 registration(s) the labels start (1 always-on, counted once)" == \
        plan_total(report.costs, ["run-ci-x", "run-ci-y"], [], report.file_est, report.key_est)
    assert "est 940s: 4 registration(s) the labels start (1 always-on, counted once) + 1 " \
           "file run(s)" == plan_total(report.costs, ["run-ci-x", "run-ci-y"],
                                       ["tests/test_x.py"], report.file_est, report.key_est)


def test_a_file_whose_always_on_half_any_label_runs_gets_no_comment(repo):
    """The plan runs one file and adds run-ci-amd for a reached ROCm test. Another file is
    registered for CUDA under amd and for an always-on CPU suite: the label's PR Test run
    covers both registrations, so posting /rerun-test for it would run it twice."""
    both = ("import pkg.a\nregister_cpu_ci(est_time=30, suite='stage-a-cpu', labels=[])\n"
            + cuda_test(labels=["amd"]))
    rocm = "import pkg.a\nregister_rocm_ci(est_time=60, suite='stage-c-rocm', labels=['amd'])\n"
    files = {"tests/test_both.py": both, "tests/test_r.py": rocm,
             "tests/test_x.py": cuda_test("import pkg.a", labels=["x"])}
    report, plan = trace(repo, files, {"pkg/a.py": "A = 2\n"})
    assert ("files", ["run-ci-amd"], ["/rerun-test tests/test_x.py"]) == (
        plan.mode, plan.labels, plan.comments)
    assert any("tests/test_both.py" in j for j in plan.judgement)
    text = render_text(report, plan)
    assert "  total: est " in text
    assert "label: run-ci-amd  (starts 3 registration(s), est 150s, of which 1 always-on" in text
