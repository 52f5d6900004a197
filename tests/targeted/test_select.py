"""choose(): the seed's step 2 on reports traced from synthetic repositories."""

from __future__ import annotations

from flow.workflows.targeted.config import HubNote, TargetedConfig, load_profile
from flow.workflows.targeted.report import LabelCount
from flow.workflows.targeted.select import choose, cover
from flow.workflows.targeted.trace import affected_tests

from .conftest import cuda_test

LIB = {"pkg/__init__.py": "", "pkg/a.py": "A = 1\n"}


def plan_for(repo, base_files, head_files, cfg=None, **kw):
    base = repo.commit(base_files)
    repo.commit(head_files)
    cfg = cfg or TargetedConfig()
    return choose(affected_tests(repo.path, base, config=cfg, **kw), cfg)


def test_few_files_post_one_comment_each(repo):
    """A few reached files and nothing broad: one exact /rerun-test comment per file."""
    plan = plan_for(repo, {**LIB, "tests/test_a.py": cuda_test("import pkg.a"),
                           "tests/test_b.py": cuda_test("import pkg.a")},
                    {"pkg/a.py": "A = 2\n"})
    assert ("files", ["/rerun-test tests/test_a.py", "/rerun-test tests/test_b.py"], []) == (
        plan.mode, plan.comments, plan.labels)


def test_nothing_reached_spends_nothing(repo):
    """A change reaching no actionable test proposes nothing."""
    plan = plan_for(repo, {**LIB, "docs.py": ""}, {"docs.py": "X = 1\n"})
    assert ("nothing", [], []) == (plan.mode, plan.comments, plan.labels)


def test_many_files_take_labels(repo):
    """More than max_files reached files switch to the label covering them."""
    files = {**LIB, **{f"tests/test_{i}.py": cuda_test("import pkg.a") for i in range(12)}}
    plan = plan_for(repo, files, {"pkg/a.py": "A = 2\n"})
    assert ("labels", ["run-ci-rollout"], []) == (plan.mode, plan.labels, plan.comments)


def _hub_tree(prefix: str) -> dict[str, str]:
    files = {"lib/__init__.py": "", "lib/arguments.py": "A = 1\n",
             f"{prefix}/__init__.py": "", f"{prefix}/run.py": "import lib.arguments\n",
             "tests/test_k8s.py": f"import {prefix.replace('/', '.')}.run\n"
                                  "register_cpu_ci(suite='stage-b-cpu', labels=['k8s'])\n"}
    for i in range(5):
        files[f"lib/l{i}.py"] = "import lib.arguments\n"
        files[f"tests/test_{i}.py"] = cuda_test(f"import lib.l{i}", labels=["e2e"])
    return files


def test_hub_touched_takes_labels(repo):
    """A changed hub on CI's path makes the change broad."""
    plan = plan_for(repo, _hub_tree("lib/launch"), {"lib/arguments.py": "A = 2\n"},
                    hub_limit=3)
    assert ("labels", ["hub lib/arguments.py met: changed (6 test(s) behind it)"],
            ["run-ci-e2e", "run-ci-k8s"]) == (plan.mode, plan.reasons, plan.labels)


def test_hub_off_ci_path_does_not_count(repo):
    """A hub noted as off CI's path (the Helm launcher) does not make the change broad."""
    cfg = TargetedConfig(hub_notes=[HubNote(path="**/helm_backend/**", note="helm",
                                            on_ci_path=False)])
    files = _hub_tree("lib/helm_backend")
    files["lib/helm_backend/run.py"] = "R = 1\n"
    for i in range(5):
        files[f"tests/test_h{i}.py"] = cuda_test("import lib.helm_backend.run")
    plan = plan_for(repo, files, {"lib/helm_backend/run.py": "R = 2\n"}, cfg, hub_limit=3)
    assert ("files", ["/rerun-test tests/test_k8s.py"]) == (plan.mode, plan.comments)


def test_frontier_tests_are_named_with_their_price_not_run(repo):
    """Tests past the depth bound are never run by themselves (the trace does not show
    they run the changed code): the judgement names them and their summed est_time."""
    files = {**LIB, "pkg/b.py": "import pkg.a\n", "pkg/c.py": "import pkg.b\n",
             "tests/test_far.py": cuda_test("import pkg.c", est=1900),
             "tests/test_near.py": cuda_test("import pkg.a")}
    plan = plan_for(repo, files, {"pkg/a.py": "A = 2\n"}, depth=1)
    assert ("files", ["/rerun-test tests/test_near.py"]) == (plan.mode, plan.comments)
    assert ["1 more test(s) lie past the depth bound 1 (est 1900s), not run: the trace does "
            "not show they run the changed code; re-run with a larger --depth if they "
            "matter: tests/test_far.py"] == [j for j in plan.judgement if "depth bound" in j]


def test_frontier_tests_run_when_nothing_within_the_bound_reaches_a_gpu(repo):
    """A change whose only GPU consumers lie one hop past the bound (a kernel reached
    through a model definition): they are its nearest evidence, so they run."""
    files = {**LIB, "pkg/b.py": "import pkg.a\n", "pkg/c.py": "import pkg.b\n",
             "tests/test_far.py": cuda_test("import pkg.c", est=1900)}
    plan = plan_for(repo, files, {"pkg/a.py": "A = 2\n"}, depth=1)
    assert ("files", ["/rerun-test tests/test_far.py"]) == (plan.mode, plan.comments)
    assert any("past the depth bound added, since no GPU test within it reaches the change"
               in j for j in plan.judgement)


def test_frontier_beyond_the_file_limit_is_judgement_not_labels(repo):
    """Past max_files, tests beyond the depth bound are named, not turned into labels."""
    files = {**LIB, "pkg/b.py": "import pkg.a\n", "pkg/c.py": "import pkg.b\n",
             "tests/test_near.py": cuda_test("import pkg.a"),
             **{f"tests/test_far{i}.py": cuda_test("import pkg.c") for i in range(3)}}
    plan = plan_for(repo, files, {"pkg/a.py": "A = 2\n"},
                    TargetedConfig(max_files=2), depth=1)
    assert ("files", ["/rerun-test tests/test_near.py"], True) == (
        plan.mode, plan.comments, any("past the depth bound" in j for j in plan.judgement))


def test_outside_trace_without_a_rule_asks_a_person(repo):
    """A changed Dockerfile the config names no label for: no empty labels plan; the
    reason says a person must judge."""
    plan = plan_for(repo, {**LIB, "Dockerfile": "FROM a\n"}, {"Dockerfile": "FROM b\n"})
    assert ("nothing", [], True, True) == (
        plan.mode, plan.labels, "judge by hand" in plan.reasons[0],
        "choose domain labels for Dockerfile: the config names none" in plan.judgement)


def test_outside_trace_takes_the_profile_rule_labels(repo):
    """The miles profile's path rules give the labels (docker/ -> run-ci-image), and a
    control-plane workflow needs no GPU run."""
    cfg = load_profile("miles")
    base = {"miles/__init__.py": "", "docker/Dockerfile": "FROM a\n",
            ".github/workflows/comment-ci-command.yml": "on: x\n"}
    plan = plan_for(repo, base, {"docker/Dockerfile": "FROM b\n"}, cfg)
    assert ("labels", ["run-ci-image"]) == (plan.mode, plan.labels)
    repo.commit({".github/workflows/comment-ci-command.yml": "on: y\n"})
    plan = choose(affected_tests(repo.path, "HEAD~1", config=cfg), cfg)
    assert ("nothing", True) == (plan.mode, "no GPU CI needed" in plan.reasons[0])


def test_entry_core_takes_labels(repo):
    """A changed file the training entry point imports directly runs on every training
    run: broad, labels."""
    cfg = load_profile("miles")
    files = {"train.py": "import miles.loop\n", "miles/__init__.py": "",
             "miles/loop.py": "X = 1\n",
             "tests/e2e/test_t.py": cuda_test("import miles.loop", labels=["megatron"])}
    plan = plan_for(repo, files, {"miles/loop.py": "X = 2\n"}, cfg)
    assert ("labels", ["run-ci-megatron"], True) == (
        plan.mode, plan.labels, any("on every training run" in r for r in plan.reasons))


def test_entry_fan_out_deep_file_keeps_files_mode(repo):
    """A file deep in train.py's static closure that one test names gets files mode; one
    no GPU test names takes its domain's label from the profile."""
    cfg = load_profile("miles")
    files = {"train.py": "import miles.loop\n", "miles/__init__.py": "",
             "miles/loop.py": "import miles.backends.fsdp_utils.kern\n",
             "miles/backends/__init__.py": "", "miles/backends/fsdp_utils/__init__.py": "",
             "miles/backends/fsdp_utils/kern.py": "K = 1\n",
             "tests/e2e/test_k.py": cuda_test("import miles.backends.fsdp_utils.kern",
                                              labels=["fsdp"])}
    plan = plan_for(repo, files, {"miles/backends/fsdp_utils/kern.py": "K = 2\n"}, cfg)
    assert ("files", ["/rerun-test tests/e2e/test_k.py"]) == (plan.mode, plan.comments)
    repo.commit({"tests/e2e/test_k.py": None})
    repo.commit({"miles/backends/fsdp_utils/kern.py": "K = 3\n"})
    plan = choose(affected_tests(repo.path, "HEAD~1", config=cfg), cfg)
    assert ("labels", ["run-ci-fsdp"]) == (plan.mode, plan.labels)


def test_blackwell_change_adds_run_on_blackwell(repo):
    """Blackwell-specific code takes the reached tests' labels plus run-on-blackwell."""
    files = {**LIB, "pkg/blackwell_kernels.py": "K = 1\n",
             "tests/test_k.py": cuda_test("import pkg.blackwell_kernels", labels=["kernel"])}
    plan = plan_for(repo, files, {"pkg/blackwell_kernels.py": "K = 2\n"})
    assert ("labels", ["run-ci-kernel", "run-on-blackwell"], []) == (
        plan.mode, plan.labels, plan.comments)


def test_nightly_only_keep_their_lines_under_labels(repo):
    """In label mode, nightly-only targets and unlabeled tests keep /rerun-test lines."""
    files = {**LIB, "Dockerfile": "",
             "tests/test_n.py": "import pkg.a\nregister_cuda_ci(est_time=1, suite='g', "
                                "labels=['rollout'], nightly=True)\n",
             "tests/test_u.py": "import pkg.a\nregister_cuda_ci(est_time=1, suite='g')\n",
             "tests/test_r.py": cuda_test("import pkg.a")}
    plan = plan_for(repo, files, {"pkg/a.py": "A = 2\n", "Dockerfile": "x"})
    assert (["run-ci-rollout"], ["/rerun-test tests/test_n.py",
                                 "/rerun-test tests/test_u.py"]) == (plan.labels,
                                                                     plan.comments)


def _lc(label: str, reached: list[str], every: int) -> LabelCount:
    return LabelCount(label=label, reached=len(reached), all=every, tests=reached)


COVER_CASES = [
    ("one label covering all beats two", ["a", "b"],
     [_lc("run-ci-x", ["a"], 1), _lc("run-ci-y", ["b"], 1), _lc("run-ci-z", ["a", "b"], 9)],
     ["run-ci-z"]),
    ("higher reached/all wins a tie in size", ["a"],
     [_lc("run-ci-big", ["a"], 20), _lc("run-ci-small", ["a"], 2)], ["run-ci-small"]),
    ("never-labels are not proposed", ["a"],
     [_lc("bypass-fastfail", ["a"], 1), _lc("run-ci-x", ["a"], 5)], ["run-ci-x"]),
    ("two labels when needed", ["a", "b"],
     [_lc("run-ci-x", ["a"], 2), _lc("run-ci-y", ["b"], 2)], ["run-ci-x", "run-ci-y"]),
]


def test_cover_cases():
    """The label cover is minimal, prefers high reached/all, and skips never-labels."""
    got = [cover(universe, labels, ["bypass-fastfail"]) for _, universe, labels, _ in
           COVER_CASES]
    assert [c[3] for c in COVER_CASES] == got


def test_greedy_cover_beyond_exact_limit():
    """Past the exact-search limit the cover is greedy and still covers everything."""
    labels = [_lc(f"run-ci-{i:02d}", [f"t{i}", f"t{i + 1}"], 2) for i in range(20)]
    universe = [f"t{i}" for i in range(21)]
    chosen = cover(universe, labels, [])
    covered = {t for c in labels if c.label in chosen for t in c.tests}
    assert (set(universe), True) == (covered, len(chosen) <= 11)


def test_the_text_plan_prices_every_file_it_posts(repo):
    """affected-tests' plan shows each /rerun-test file's est_time and a total that leaves
    unknown times out of the sum."""
    from flow.workflows.targeted.report import render_text

    files = {**LIB, "pkg/b.py": "import pkg.a\n",
             "tests/test_far.py": cuda_test("import pkg.b", est=1900),
             "tests/test_near.py": cuda_test("import pkg.a", est=300),
             "tests/test_bare.py": 'import pkg.a\nregister_cuda_ci(suite="stage-b-2-gpu-h200")\n'}
    repo.commit(files, "base")
    repo.commit({"pkg/a.py": "A = 2\n"}, "change")
    report = affected_tests(repo.path, "HEAD~1", 2, 40, TargetedConfig())
    text = render_text(report, choose(report, TargetedConfig()))
    assert ["  comment: /rerun-test tests/test_bare.py  (est unknown)",
            "  comment: /rerun-test tests/test_far.py  (est 1900s)",
            "  comment: /rerun-test tests/test_near.py  (est 300s)",
            "  files total: est 2200s of GPU time + 1 file(s) of unknown time"] == [
        line for line in text.splitlines() if line.startswith(("  comment:", "  files total"))]


