"""Code the import graph reaches only by name or not at all, as small miles-like trees.

Each tree reproduces, in our words, a miles idiom: a converter script launched with
``torchrun`` from an f-string path, a module the Megatron fork imports by module path, a
suite the profile does not know next to a ``tests/conftest.py``, a branch taken only on
Blackwell (compute capability 10+), and a changed file nothing imports.
"""

from __future__ import annotations

import pytest

from flow.workflows.targeted.config import load_profile
from flow.workflows.targeted.report import render_text
from flow.workflows.targeted.select import choose
from flow.workflows.targeted.trace import affected_tests
from tests.targeted.test_miles_idioms import CI, cuda

CFG = load_profile("miles")

LAUNCHER = ('import os\nfrom pathlib import Path\n'
            'repo_base_dir = Path(os.path.abspath(__file__)).resolve().parents[2]\n'
            'def convert(path):\n'
            '    cmd = (f"torchrun --nproc-per-node 8 "\n'
            '           f"{repo_base_dir}/tools/convert_weights.py "\n'
            '           f"--out {path}")\n'
            '    os.system(cmd)\n')


def run(repo, base: dict[str, str], head: dict[str, str | None]):
    first = repo.commit({**CI, **base})
    repo.commit(head)
    report = affected_tests(repo.path, first, config=CFG)
    return report, choose(report, CFG)


def test_script_launched_from_an_f_string_path_reaches_its_callers(repo):
    """``f"{repo_base_dir}/tools/x.py "`` names tools/x.py: a change there reaches the e2e
    test that calls the launcher, and the plan runs it."""
    base = {"tools/convert_weights.py": "print('convert')\n",
            "miles/launch.py": LAUNCHER,
            "tests/e2e/test_convert.py": cuda(body="from miles.launch import convert\n")}
    report, plan = run(repo, base, {"tools/convert_weights.py": "print('convert v2')\n"})
    assert (["tests/e2e/test_convert.py"], "files", ["/rerun-test tests/e2e/test_convert.py"],
            []) == ([t.path for t in report.tests], plan.mode, plan.comments, report.unimported)


def test_changed_file_nothing_imports_never_yields_nothing(repo):
    """A changed file no file imports or names is an entry point or loaded some other way:
    the plan falls back to labels and says so, never "no GPU run"."""
    base = {"miles/loaded_somehow.py": "X = 1\n", "tests/e2e/test_x.py": cuda()}
    report, plan = run(repo, base, {"miles/loaded_somehow.py": "X = 2\n"})
    assert (["miles/loaded_somehow.py"], "labels", ["run-ci-short"]) == (
        report.unimported, plan.mode, plan.labels)
    assert any("nothing imports or names it" in r for r in plan.reasons)


def test_module_the_fork_imports_by_path_needs_its_models_e2e_label(repo):
    """miles/utils/replay_base.py is imported by the Megatron fork: the plan adds
    run-ci-replay and names the outside importers, beyond the one unit test reached."""
    base = {"miles/utils/__init__.py": "", "miles/utils/replay_base.py": "R = 1\n",
            "tests/fast-gpu/test_replay_unit.py": cuda(body="import miles.utils.replay_base\n"),
            "tests/e2e/test_replay_e2e.py": cuda(labels='["replay"]')}
    report, plan = run(repo, base, {"miles/utils/replay_base.py": "R = 2\n"})
    assert (["miles/utils/replay_base.py"], ["run-ci-replay"]) == (
        [e.path for e in report.external], plan.labels)
    assert any("Megatron-LM fork" in r for r in plan.reasons)


def test_unknown_suite_is_reported_and_never_run_as_pytest(repo):
    """A registration on a suite the profile does not map is reported; its GPU file starts
    as python3 file.py (the backend's runner), so tests/conftest.py does not reach it."""
    base = {"tests/conftest.py": "import miles.lib\n",
            "tests/e2e/test_renamed.py": 'from tests.ci.ci_register import register_rocm_ci\n'
            'register_rocm_ci(est_time=1400, suite="stage-d-8-gpu-mi355", labels=["amd"])\n',
            "tests/fast/test_cpu.py": "def test_x(): pass\n"}
    report, plan = run(repo, base, {"tests/conftest.py": "import miles.lib  # fixture\n"})
    assert ([("stage-d-8-gpu-mi355", "python", ["tests/e2e/test_renamed.py"])],
            ["tests/fast/test_cpu.py"]) == (
        [(u.suite, u.runner, u.paths) for u in report.unknown_suites],
        sorted({t.path for t in report.tests}))
    assert "suite stage-d-8-gpu-mi355 is not in the profile (rocm; started as python)" \
        in render_text(report, plan)


def test_reached_test_on_an_unknown_suite_is_named_in_the_judgement(repo):
    """When the change reaches a file of an unknown suite, the plan says so for a person."""
    base = {"tests/e2e/test_renamed.py": 'import miles.lib\n'
            'from tests.ci.ci_register import register_rocm_ci\n'
            'register_rocm_ci(est_time=1400, suite="stage-d-8-gpu-mi355", labels=["amd"])\n'}
    _, plan = run(repo, base, {"miles/lib.py": "X = 2\n"})
    assert any("suite stage-d-8-gpu-mi355 is not in the profile" in j for j in plan.judgement)


def test_blackwell_only_branch_is_said_to_run_nowhere_on_the_pr(repo):
    """Changed lines under ``if major >= 10`` run only on Blackwell: the plan says no run it
    starts executes them and no PR suite has Blackwell runners."""
    lib = ("import torch\n"
           "def scales():\n"
           "    major, _ = torch.cuda.get_device_capability()\n"
           "    if major >= 10:\n"
           "        return 'mx'\n"
           "    return 'fp32'\n")
    base = {"miles/lib.py": lib, "tests/e2e/test_lib.py": cuda(body="import miles.lib\n")}
    report, plan = run(repo, base, {"miles/lib.py": lib.replace("'mx'", "'mxfp8'")})
    assert ["miles/lib.py"] == report.blackwell_only
    assert any("run only on Blackwell" in j and "no PR suite has Blackwell runners" in j
               for j in plan.judgement)


def test_hopper_lines_are_not_blackwell_only(repo):
    """A change outside the capability branch is ordinary code: no Blackwell line."""
    lib = "import torch\ndef f(major):\n    if major >= 10:\n        return 1\n    return 2\n"
    base = {"miles/lib.py": lib, "tests/e2e/test_lib.py": cuda(body="import miles.lib\n")}
    report, _ = run(repo, base, {"miles/lib.py": lib.replace("return 2", "return 3")})
    assert [] == report.blackwell_only


def test_a_file_the_plans_labels_run_is_not_posted_too(repo):
    """When the plan adds a label (here a workflow file's run-ci-short), a reached file that
    label already runs gets no /rerun-test comment as well."""
    base = {"tests/e2e/test_short.py": cuda(body="import miles.lib\n"),
            "tests/e2e/test_other.py": cuda(labels='["fsdp"]', body="import miles.lib\n"),
            ".github/workflows/pr-test.yml": "on: pull_request\n"}
    _, plan = run(repo, base, {"miles/lib.py": "X = 2\n",
                               ".github/workflows/pr-test.yml": "on: [pull_request]\n"})
    assert (["/rerun-test tests/e2e/test_other.py"], ["run-ci-short"]) == (
        plan.comments, plan.labels)
    assert any("tests/e2e/test_short.py" in j and "labels run them" in j
               for j in plan.judgement)


def test_report_counts_files_and_registrations_and_label_costs(repo):
    """The tests header counts files and registrations apart, and each label line shows
    what it starts (registrations and summed est_time)."""
    test = cuda(body="import miles.lib\n") + \
        'register_rocm_ci(est_time=90, suite="stage-c-4-gpu-mi350", labels=["amd"])\n'
    report, plan = run(repo, {"tests/e2e/test_two.py": test}, {"miles/lib.py": "X = 2\n"})
    text = render_text(report, plan)
    assert "## Tests reached (1 file(s), 2 registration(s))" in text
    assert "run-ci-amd  1 / 1  1 registration(s), est 90s" in text


def test_judgement_alternatives_become_answers():
    """A judgement naming broader labels (the hub fallback line) offers each as an answer
    that adds it; labels the plan already has, or never proposes, are not offered."""
    from flow.workflows.targeted.loop import alternatives
    from flow.workflows.targeted.select import Plan

    plan = Plan(mode="labels", comments=[], labels=["run-ci-short"], reasons=[],
                judgement=["61 test(s) lie behind the hub(s): the plan runs the fallback "
                           "run-ci-short; add run-ci-all or run-ci-image if the change alters "
                           "what every one of them does"])
    assert {"add run-ci-all": ["run-ci-all"], "add run-ci-image": ["run-ci-image"]} == \
        alternatives(plan, CFG)


def test_nothing_to_run_report_says_why_and_lists_untraced_files(repo):
    """With no fallback label to take, an untraced change ends nothing_to_run, and the final
    report carries the reason, the judgement (choose labels) and the untraced files."""
    from flow.workflows.targeted import loop

    bare = CFG.model_copy(update={"labels": CFG.labels.model_copy(update={"fallback": []})})
    first = repo.commit({**CI, "miles/loaded_somehow.py": "X = 1\n"})
    repo.commit({"miles/loaded_somehow.py": "X = 2\n"})
    report = affected_tests(repo.path, first, config=bare)
    plan = choose(report, bare)
    data = loop.TargetedData(repo="o/r", number=1, repo_dir=str(repo.path), base=first,
                             head_sha="0" * 40, plan=plan, untraced=loop.untraced(report))
    got = loop.final_report(data, "nothing_to_run", bare)
    assert ("nothing", ["miles/loaded_somehow.py: nothing imports or names it"]) == (
        plan.mode, got["untraced"])
    assert any("choose labels for miles/loaded_somehow.py" in j for j in got["judgement"])
    assert got["why"] and "judge by hand" in got["why"][0]


def test_model_definition_spec_names_the_plugin_module_it_loads(repo):
    """A model definition under scripts/models/ loads its plugin spec by dotted path
    (``--spec "miles_plugins.models.m7.m7" "get_spec"``): a change to a kernel the spec
    imports reaches the e2e test that names the model."""
    base = {"miles_plugins/__init__.py": "", "miles_plugins/models/__init__.py": "",
            "miles_plugins/models/m7/__init__.py": "",
            "miles_plugins/models/m7/m7.py": "from .kernel import k\ndef get_spec(): return k\n",
            "miles_plugins/models/m7/kernel.py": "k = 1\n",
            "scripts/models/m7-10B.sh": 'MODEL_ARGS=(\n   --spec "miles_plugins.models.m7.m7" '
                                       '"get_spec"\n)\n',
            "tests/e2e/test_m7.py": cuda(body='MODEL = "m7-10B"\n')}
    report, plan = run(repo, base, {"miles_plugins/models/m7/kernel.py": "k = 2\n"})
    assert (["tests/e2e/test_m7.py"], ["/rerun-test tests/e2e/test_m7.py"]) == (
        [t.path for t in report.tests], plan.comments)


def test_label_line_counts_tests_behind_hubs_apart_from_reached(repo):
    """Tests behind a hub join a label's coverage but are not counted as reached: the label
    line agrees with the tests list."""
    first = repo.commit({**CI, "miles/hub.py": "import miles.lib\n",
                         "tests/e2e/test_h1.py": cuda(body="import miles.hub\n"),
                         "tests/e2e/test_h2.py": cuda(body="import miles.hub\n")})
    repo.commit({"miles/lib.py": "X = 2\n"})
    report = affected_tests(repo.path, first, config=CFG, hub_limit=1)
    short = next(c for c in report.labels if c.label == "run-ci-short")
    assert ([], 2, 2) == ([t.path for t in report.tests], short.reached, short.behind)
    assert "run-ci-short  0 / 2  (+2 behind hubs or the depth bound)" in render_text(report)


INLINE = ("import torch\n"
          "def scales(x, major):\n"
          "    return (\n"
          "        mx(x)\n"
          "        if major >= 10\n"
          "        else per_tensor(x)\n"
          "    )\n"
          "def mx(x): return x\n"
          "def per_tensor(x): return x\n")


@pytest.mark.parametrize(("lib", "old", "new", "only"), [
    (INLINE, "        mx(x)\n", "        mx(x, block=32)\n", True),
    (INLINE, "        else per_tensor(x)\n", "        else per_tensor(x, 2)\n", False),
    # one line holds both branches: a line diff cannot say which one changed
    ("def f(x, major):\n    return mx(x) if major >= 10 else x\n", "mx(x)", "mx(x, 2)", False),
    # the else of the negation runs only on Blackwell
    ("def f(major):\n    if major < 10:\n        return 1\n    else:\n        return 2\n",
     "return 2", "return 4", True),
    ("def f(major):\n    if major < 10:\n        return 1\n    return 2\n",
     "return 1", "return 3", False),
])
def test_blackwell_branches_of_conditional_expressions_and_negations(repo, lib, old, new, only):
    """The Blackwell branch of a conditional expression spread over its own lines, and the
    ``else`` of ``major < 10``, are Blackwell-only; a one-line conditional expression and
    the non-Blackwell side are not."""
    base = {"miles/lib.py": lib, "tests/e2e/test_lib.py": cuda(body="import miles.lib\n")}
    report, _ = run(repo, base, {"miles/lib.py": lib.replace(old, new)})
    assert (["miles/lib.py"] if only else []) == report.blackwell_only


def test_nothing_names_the_profile_rule_that_says_no_gpu_run_is_needed(repo):
    """An example script nothing imports, under the miles profile's ``examples/**/*.py``
    rule (no labels): the plan of nothing says which rule it rests on, not only that no
    test reaches the change."""
    base = {"examples/demo/run_demo.py": "print(1)\n"}
    _, plan = run(repo, base, {"examples/demo/run_demo.py": "print(2)\n"})
    assert ("nothing", []) == (plan.mode, plan.undecided)
    assert plan.reasons[0].startswith("no GPU CI needed: no registered test reaches the change; "
                                      "the profile's rules say the untraced paths need no GPU "
                                      "run (examples/demo/run_demo.py: example code")


def test_a_file_past_the_depth_bound_that_a_plan_label_runs_is_not_posted_too(repo):
    """A test one step past the depth bound joins the files; when the plan's label (here
    the workflow file's run-ci-short) selects its registration, posting /rerun-test as well
    would run it twice."""
    chain = {"miles/b.py": "import miles.lib\n", "miles/c.py": "import miles.b\n",
             "miles/d.py": "import miles.c\n", "miles/e.py": "import miles.d\n"}
    base = {**chain, "tests/e2e/test_far.py": cuda(body="import miles.e\n"),
            "tests/e2e/test_near.py": cuda(labels='["fsdp"]', body="import miles.lib\n"),
            ".github/workflows/pr-test.yml": "on: pull_request\n"}
    report, plan = run(repo, base, {"miles/lib.py": "X = 2\n",
                                    ".github/workflows/pr-test.yml": "on: [pull_request]\n"})
    assert ["tests/e2e/test_far.py"] == [t for f in report.frontier for t in f.reaches]
    assert (["/rerun-test tests/e2e/test_near.py"], ["run-ci-short"]) == (
        plan.comments, plan.labels)


def test_narrower_labels_beside_a_scope_label_are_dropped(repo):
    """run-ci-image already selects every label but long/ft-short/ft-long: a run-ci-short
    beside it selects nothing more and would restart PR Test once more."""
    base = {"tests/e2e/test_short.py": cuda(body="import miles.lib\n"),
            "docker/Dockerfile": "FROM a\n", ".github/workflows/pr-test.yml": "on: x\n"}
    _, plan = run(repo, base, {"docker/Dockerfile": "FROM b\n",
                               ".github/workflows/pr-test.yml": "on: y\n"})
    assert ("labels", ["run-ci-image"]) == (plan.mode, plan.labels)
    assert any("run-ci-short (run-ci-image selects it)" in j for j in plan.judgement)
