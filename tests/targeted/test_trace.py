"""affected_tests on synthetic git repositories: one case per section of the seed's step 1."""

from __future__ import annotations

import orjson
import pytest

from flow.workflows.targeted.config import TargetedConfig, load_profile
from flow.workflows.targeted.errors import GitError
from flow.workflows.targeted.report import AffectedReport, render_text
from flow.workflows.targeted.trace import affected_tests

from .conftest import cuda_test

LIB = {"pkg/__init__.py": "", "pkg/a.py": "A = 1\n", "pkg/b.py": "from pkg import a\n"}


def trace(repo, base, **kw) -> AffectedReport:
    kw.setdefault("config", TargetedConfig())
    return affected_tests(repo.path, base, **kw)


def test_reached_test_row_has_every_field(repo):
    """A reached test lists backend, suite, labels, hardware, nightly, est_time, disabled
    and the changed file it was first reached from."""
    base = repo.commit({**LIB, "tests/test_x.py":
                        "import pkg.b\nregister_cuda_ci(est_time=90, suite='stage-c', "
                        "labels=['rollout'], hardware=['hopper'], num_gpus=2)\n"})
    repo.commit({"pkg/a.py": "A = 2\n"})
    row = trace(repo, base).tests[0].model_dump()
    assert {"path": "tests/test_x.py", "backend": "cuda", "suite": "stage-c",
            "labels": ["rollout"], "hardware": ["hopper"], "nightly": False, "est_time": 90,
            "disabled": None, "num_gpus": 2, "runner": "pytest", "on_pr": True, "hop": 2,
            "reached_from": "pkg/a.py", "via": "pkg/b.py", "why": None} == row


def test_rerun_lines_only_for_actionable_registrations(repo):
    """Enabled CUDA and labeled CPU tests get /rerun-test lines; unlabeled CPU, disabled and
    ROCm-only tests do not."""
    reg = {"cuda": "register_cuda_ci(est_time=1, suite='g', labels=['x'])",
           "cpu_labeled": "register_cpu_ci(suite='stage-b-cpu', labels=['k8s'])",
           "cpu_plain": "register_cpu_ci(suite='stage-b-cpu')",
           "disabled": "register_cuda_ci(est_time=1, suite='g', disabled='see #1')",
           "rocm": "register_rocm_ci(est_time=1, suite='r')"}
    base = repo.commit({**LIB, **{f"tests/test_{k}.py": f"import pkg.a\n{v}\n"
                                  for k, v in reg.items()}})
    repo.commit({"pkg/a.py": "A = 2\n"})
    assert ["/rerun-test tests/test_cpu_labeled.py",
            "/rerun-test tests/test_cuda.py"] == trace(repo, base).rerun


def test_labels_report_reached_over_all(repo):
    """A label counts the reached tests it selects over all regular tests it selects."""
    files = {**LIB, "pkg/c.py": "C = 1\n"}
    for i in range(4):
        files[f"tests/test_r{i}.py"] = cuda_test("import pkg.a" if i < 2 else "import pkg.c")
    files["tests/test_n.py"] = "import pkg.c\nregister_cuda_ci(est_time=1, suite='g', " \
                               "labels=['rollout'], nightly=True)\n"
    base = repo.commit(files)
    repo.commit({"pkg/a.py": "A = 2\n"})
    got = [(c.label, c.reached, c.all) for c in trace(repo, base).labels]
    assert [("run-ci-rollout", 2, 4)] == got


def test_nightly_only_targets_listed_apart(repo):
    """A reached test whose registrations are all nightly keeps its line and no label."""
    base = repo.commit({**LIB, "tests/test_n.py": "import pkg.a\nregister_cuda_ci("
                        "est_time=1, suite='g', labels=['long'], nightly=True)\n"})
    repo.commit({"pkg/a.py": "A = 2\n"})
    report = trace(repo, base)
    assert ([("tests/test_n.py", "/rerun-test tests/test_n.py")], [],
            ["/rerun-test tests/test_n.py"]) == (
        [(n.path, n.rerun) for n in report.nightly_only], report.labels, report.rerun)


def test_rename_reaches_importers_of_both_paths(repo):
    """A renamed module reaches importers of the new path and stale importers of the old."""
    base = repo.commit({**LIB, "tests/test_new.py": cuda_test("import pkg.a"),
                        "tests/test_stale.py": cuda_test("import pkg.a")})
    repo.move("pkg/a.py", "pkg/renamed.py")
    repo.commit({"tests/test_new.py": cuda_test("import pkg.renamed")})
    report = trace(repo, base)
    renamed = [c for c in report.changed if c.status == "R"]
    assert ([("pkg/renamed.py", "pkg/a.py")], ["tests/test_new.py", "tests/test_stale.py"]) \
        == ([(c.path, c.old_path) for c in renamed], sorted({t.path for t in report.tests}))


def test_deleted_module_reaches_stale_importers(repo):
    """A deleted module still imported somewhere reaches that importer's tests."""
    base = repo.commit({**LIB, "tests/test_x.py": cuda_test("import pkg.b")})
    repo.commit({"pkg/a.py": None})
    report = trace(repo, base)
    assert (["tests/test_x.py"], [], [("pkg/a.py", "D")]) == (
        [t.path for t in report.tests], report.unimported,
        [(c.path, c.status) for c in report.changed])


def test_changed_conftest_reaches_tests_below(repo):
    """A changed conftest.py reaches every registered test below its directory only."""
    base = repo.commit({"tests/gpu/conftest.py": "X = 1\n",
                        "tests/gpu/deep/test_a.py": cuda_test(),
                        "tests/gpu/test_b.py": cuda_test(),
                        "tests/cpu/test_c.py": cuda_test()})
    repo.commit({"tests/gpu/conftest.py": "X = 2\n"})
    assert ["tests/gpu/deep/test_a.py", "tests/gpu/test_b.py"] == [
        t.path for t in trace(repo, base).tests]


def test_changed_model_definition_reaches_tests_naming_it(repo):
    """A changed scripts/models/ file reaches tests naming the model or a variant of it."""
    base = repo.commit({"scripts/models/glm4-9B.sh": "A=1\n",
                        "tests/test_lora.py": cuda_test(extra="M = 'GLM4-9B_lora'\n"),
                        "tests/test_other.py": cuda_test(extra="M = 'glm4-90B'\n")})
    repo.commit({"scripts/models/glm4-9B.sh": "A=2\n"})
    report = trace(repo, base)
    assert (["tests/test_lora.py"], []) == ([t.path for t in report.tests],
                                            report.outside_trace)


def test_unreadable_registration_reported_not_fatal(repo):
    """A reached or changed test file with a broken declaration is listed with its reason
    and the trace still reports the readable ones."""
    base = repo.commit({**LIB, "tests/test_ok.py": cuda_test("import pkg.a"),
                        "tests/test_bad.py": "import pkg.a\nregister_cuda_ci(est_time=T, "
                                             "suite='g')\n",
                        "tests/test_broken.py": "import pkg.a\ndef (:\n"})
    repo.commit({"pkg/a.py": "A = 2\n", "tests/test_broken.py": "import pkg.a\ndef (:\n  \n"})
    report = trace(repo, base)
    got = [(u.path, u.reason.split(":")[0]) for u in report.unreadable]
    assert ([("tests/test_bad.py", "invalid declaration"),
             ("tests/test_broken.py", "syntax error")], ["tests/test_ok.py"]) == (
        got, [t.path for t in report.tests])


def test_miles_allowlist_outside_trace(repo):
    """With the miles profile, non-Python files and Python outside the allowlist are
    listed outside the trace; allowlisted Python is not."""
    base = repo.commit({"docker/build.py": "", "tools/x.py": "", "tools/sub/y.py": "",
                        "setup.py": "", "Dockerfile": "", "miles/a.py": "",
                        ".github/scripts/ci.py": "", ".github/workflows/pr.yml": ""})
    repo.commit({p: "# changed\n" for p in ["docker/build.py", "tools/x.py", "tools/sub/y.py",
                                            "setup.py", "Dockerfile", "miles/a.py",
                                            ".github/scripts/ci.py",
                                            ".github/workflows/pr.yml"]})
    report = trace(repo, base, config=load_profile("miles"))
    assert [(".github/workflows/pr.yml", "non-Python file"), ("Dockerfile", "non-Python file"),
            ("setup.py", "Python outside the allowlist"),
            ("tools/sub/y.py", "Python outside the allowlist")] == [
        (o.path, o.reason) for o in report.outside_trace]


def test_entry_point_loads_and_unimported(repo):
    """Changed files train.py loads are listed with it; train.py itself, which nothing
    imports, is listed as unimported too."""
    base = repo.commit({"train.py": "import miles.loop\n", "miles/__init__.py": "",
                        "miles/loop.py": "from miles import util\n", "miles/util.py": "",
                        "miles/orphan.py": ""})
    repo.commit({"train.py": "import miles.loop  # x\n", "miles/util.py": "U = 1\n",
                 "miles/orphan.py": "O = 1\n"})
    report = trace(repo, base, config=load_profile("miles"))
    assert ([("miles/util.py", ["train.py"]), ("train.py", ["train.py"])],
            ["miles/orphan.py", "train.py"]) == (
        [(e.path, e.entry_points) for e in report.entry_loads], report.unimported)


def _wide_tree(n_tests: int) -> dict[str, str]:
    # miles' shape: a shared arguments module that every launcher path imports, a chain of
    # helpers, and one test per launcher.
    files = {"lib/__init__.py": "", "lib/base.py": "B = 1\n",
             "lib/flags.py": "from lib import base\n",
             "lib/arguments.py": "from lib import flags\n",
             "lib/chain0.py": "C = 0\n"}
    for i in range(1, 6):
        files[f"lib/chain{i}.py"] = f"from lib import chain{i - 1}\n"
    files["tests/test_chain.py"] = cuda_test("import lib.chain5", labels=["chain"])
    for i in range(n_tests):
        files[f"lib/launch{i}.py"] = "import lib.arguments\n"
        files[f"tests/test_l{i}.py"] = cuda_test(f"import lib.launch{i}", labels=["e2e"])
    files["lib/helm_backend/run.py"] = "import lib.arguments\n"
    return files


def test_hub_touched_is_not_followed(repo):
    """A changed file reaching more than hub_limit CUDA tests is a hub met 'changed' and its
    importers are not followed."""
    base = repo.commit(_wide_tree(45))
    repo.commit({"lib/arguments.py": "from lib import flags\nX = 1\n"})
    report = trace(repo, base, hub_limit=40)
    assert ([("lib/arguments.py", 45, "changed", True)], []) == (
        [(h.path, h.reach, h.met, h.adds_only) for h in report.hubs], report.tests)


def test_hub_met_at_a_hop(repo):
    """A hub reached from a changed file records the hop and the file it came from."""
    base = repo.commit(_wide_tree(45))
    repo.commit({"lib/base.py": "B = 2\n"})
    report = trace(repo, base, hub_limit=40)
    assert [("lib/flags.py", "hop 1 from lib/base.py")] == [
        (h.path, h.met) for h in report.hubs]


def test_below_hub_limit_is_followed(repo):
    """With a hub limit above the reach, the same file is followed to its tests."""
    base = repo.commit(_wide_tree(45))
    repo.commit({"lib/arguments.py": "from lib import flags\nX = 1\n"})
    report = trace(repo, base, hub_limit=100)
    assert ([], 45) == (report.hubs, len(report.rerun))


@pytest.mark.parametrize("depth,reached,frontier", [
    (3, [], [("lib/chain4.py", "lib/chain3.py", ["tests/test_chain.py"])]),
    (6, ["tests/test_chain.py"], []),
])
def test_depth_bound_leaves_importers(repo, depth, reached, frontier):
    """Importers past the depth bound are listed with the tests they lead to; a larger
    depth reaches them."""
    base = repo.commit(_wide_tree(2))
    repo.commit({"lib/chain0.py": "C = 1\n"})
    report = trace(repo, base, depth=depth)
    assert (reached, frontier) == ([t.path for t in report.tests],
                                   [(f.importer, f.imports, f.reaches)
                                    for f in report.frontier])


def test_report_json_round_trip_and_text(repo):
    """The JSON form validates back to the same report and the text names every section."""
    base = repo.commit(_wide_tree(3))
    repo.commit({"lib/chain0.py": "C = 1\n", "README.md": "x\n"})
    report = trace(repo, base)
    again = AffectedReport.model_validate(orjson.loads(orjson.dumps(report.model_dump(
        mode="json"))))
    text = render_text(report)
    titles = ["Profile: defaults", "Tests reached", "Labels", "Nightly-only", "Hubs",
              "depth bound", "outside the import trace, by kind", "entry points load",
              "nothing imports or names", "registration cannot be read"]
    assert (report, [True] * len(titles)) == (again, [t in text for t in titles])


def test_text_puts_the_plan_first_and_one_short_line_per_test(repo):
    """The text starts with the profile, then the plan; each test is one short line with
    its path, backend/hardware and est_time; docs are grouped, not listed one per line."""
    from flow.workflows.targeted.config import load_profile
    from flow.workflows.targeted.select import choose

    cfg = load_profile("miles")
    base = repo.commit({**LIB, "tests/e2e/test_x.py": cuda_test("import pkg.b", est=90),
                        **{f"docs/p{i}.md": "x\n" for i in range(6)}})
    repo.commit({"pkg/a.py": "A = 2\n", **{f"docs/p{i}.md": "y\n" for i in range(6)}})
    report = trace(repo, base, config=cfg)
    lines = render_text(report, choose(report, cfg)).splitlines()
    test_line = next(x for x in lines if x.startswith("tests/e2e/test_x.py"))
    docs = [x for x in lines if "no-GPU allowlist" in x]
    assert (lines[0].startswith("Profile: miles"), lines[2], test_line, len(docs)) == (
        True, "Plan: run these files", "tests/e2e/test_x.py  cuda/h200  est 90s", 1)


def test_uncommitted_changes_are_warned_about_or_traced(repo):
    """An uncommitted edit is listed with a warning by default; --include-worktree (the
    worktree flag) traces it, untracked files included."""
    base = repo.commit({**LIB, "tests/test_x.py": cuda_test("import pkg.b")})
    repo.commit({"README.md": "x\n"})
    (repo.path / "pkg" / "a.py").write_text("A = 3\n")
    (repo.path / "pkg" / "new.py").write_text("import pkg.a\n")
    quiet = trace(repo, base)
    loud = trace(repo, base, worktree=True)
    assert (["pkg/a.py", "pkg/new.py"], [], True) == (quiet.uncommitted, quiet.tests,
                                                      "WARNING: 2 uncommitted" in render_text(quiet))
    assert (["tests/test_x.py"], {"pkg/a.py", "pkg/new.py", "README.md"}) == (
        [t.path for t in loud.tests], {c.path for c in loud.changed})


def test_cache_dir_gives_same_report(repo, tmp_path):
    """A warm trace from the content cache reports exactly what the cold one did."""
    base = repo.commit(_wide_tree(5))
    repo.commit({"lib/flags.py": "F = 2\n"})
    cold = trace(repo, base, cache_dir=tmp_path / "c")
    assert cold == trace(repo, base, cache_dir=tmp_path / "c")


@pytest.mark.parametrize("base", ["--output=/tmp/x", "no-such-rev"])
def test_bad_base_raises_git_error(repo, base):
    """An option-like or unknown base is a GitError quoting it."""
    repo.commit(LIB)
    with pytest.raises(GitError) as info:
        trace(repo, base)
    assert base in info.value.message


def test_edge_cache_invalidated_by_a_new_file(repo, tmp_path):
    """Cached edges are reused only for the same tree: a new importer is still found."""
    base = repo.commit({**LIB, "tests/test_x.py": cuda_test("import pkg.b")})
    repo.commit({"pkg/a.py": "A = 2\n"})
    trace(repo, base, cache_dir=tmp_path / "c")
    repo.commit({"tests/test_new.py": cuda_test("from pkg import a")})
    assert ["tests/test_new.py", "tests/test_x.py"] == [
        t.path for t in trace(repo, base, cache_dir=tmp_path / "c").tests]


def test_unwritable_cache_dir_is_only_a_cold_start(repo, tmp_path):
    """A cache_dir that cannot be created (a file is in the way) traces as without a cache."""
    base = repo.commit({**LIB, "tests/test_x.py": cuda_test("import pkg.b")})
    repo.commit({"pkg/a.py": "A = 2\n"})
    (tmp_path / "blocked").write_text("a file, not a directory")
    assert trace(repo, base) == trace(repo, base, cache_dir=tmp_path / "blocked" / "c")


def test_a_first_trace_reads_calls_in_the_scan_batch_with_the_same_report(
        repo, tmp_path, monkeypatch):
    """With nothing cached, the tests' calls are read in the same two-process batch as the
    scan (one fork, the child's share pickled back) and the report equals a one-process
    trace's, with and without a cache directory."""
    import os

    import flow.workflows.targeted.facts as facts_mod
    import flow.workflows.targeted.import_graph as graph_mod

    base = repo.commit(_wide_tree(6))
    repo.commit({"lib/flags.py": "F = 2\n"})
    alone = trace(repo, base)
    forks: list[int] = []
    batches: list[set[str]] = []
    real_fork, real_in_two = os.fork, facts_mod.in_two

    def counted_fork() -> int:
        forks.append(1)
        return real_fork()

    def noted_in_two(jobs: list) -> list:
        batches.append({fn.__name__ for fn, _, _ in jobs})
        return real_in_two(jobs)

    monkeypatch.setattr(facts_mod, "PARALLEL_MIN", 2)
    monkeypatch.setattr(facts_mod, "_can_fork", lambda: True)
    monkeypatch.setattr(facts_mod.os, "fork", counted_fork)
    monkeypatch.setattr(graph_mod, "in_two", noted_in_two)
    assert (trace(repo, base), trace(repo, base, cache_dir=tmp_path / "c"), len(forks),
            batches) == (alone, alone, 2, [{"read_calls", "scan_facts"}] * 2)


def test_unchanged_checkout_needs_neither_scan_nor_facts_file(repo, tmp_path, monkeypatch):
    """A re-run on the same checkout answers from the small graph file alone: no file is
    scanned or ast-parsed and the facts file is not read; the report is the same."""
    import flow.workflows.targeted.facts as facts_mod
    import flow.workflows.targeted.import_graph as graph_mod

    base = repo.commit(_wide_tree(5))
    repo.commit({"lib/flags.py": "F = 2\n"})
    cold = trace(repo, base, cache_dir=tmp_path / "c")
    (tmp_path / "c" / f"facts-v{facts_mod.FACTS_VERSION}.json").unlink()

    def refuse(*_args: object) -> None:
        raise AssertionError("scanned on an unchanged checkout")

    for name in ("scan_facts", "scan_many", "read_calls"):
        monkeypatch.setattr(graph_mod, name, refuse)
    assert cold == trace(repo, base, cache_dir=tmp_path / "c")


def test_an_edit_outside_the_diff_still_counts(repo, tmp_path):
    """Importers cached for one checkout are not reused once any file's content differs:
    a work-tree edit that makes a test import the changed module reaches that test."""
    base = repo.commit({**LIB, "tests/test_x.py": cuda_test("X = 1")})
    repo.commit({"pkg/a.py": "A = 2\n"})
    assert trace(repo, base, cache_dir=tmp_path / "c").tests == []
    (repo.path / "tests/test_x.py").write_text(cuda_test("import pkg.a"))
    assert ["tests/test_x.py"] == [t.path for t in trace(repo, base, cache_dir=tmp_path / "c").tests]


def test_no_merge_base_hint_says_what_to_do(repo):
    """A base with no common history gets a hint about fetching the base branch."""
    repo.commit(LIB)
    repo.git("checkout", "-q", "--orphan", "other")
    repo.commit({"x.py": "X = 1\n"})
    repo.git("checkout", "-q", "main")
    with pytest.raises(GitError) as info:
        trace(repo, "other")
    assert "shares no history" in info.value.hint
