"""Config sources: defaults, the miles profile, a pyproject table; errors quote the value."""

from __future__ import annotations

import pytest

from flow.workflows.targeted.config import TargetedConfig, load_config, load_profile
from flow.workflows.targeted.errors import ConfigError


def test_defaults_serve_any_repo(tmp_path):
    """Without pyproject table or profile, every .py file is traced and test_*.py are tests."""
    cfg = load_config(tmp_path)
    expected = (["**/*.py"], ["**/test_*.py"], "scripts/models",
                ["register_cpu_ci", "register_cuda_ci", "register_rocm_ci"])
    assert expected == (cfg.allowlist, cfg.tests, cfg.models_dir, sorted(cfg.registration))


def test_miles_profile_reproduces_the_seed():
    """The miles profile carries the seed's allowlist, entry points, hub note and labels
    (no Blackwell label: miles has none at the profiled commit)."""
    cfg = load_profile("miles")
    assert ["train.py", "train_async.py", "train_multi_policy.py",
            "train_multi_lora_async.py", "serve_tinker.py"] == cfg.entry_points
    assert {"miles/**/*.py", "miles_plugins/**/*.py", "scripts/**/*.py", "examples/**/*.py",
            "tests/**/*.py", "docker/*.py", "tools/*.py", ".github/**/*.py"} <= set(
        cfg.allowlist)
    assert [("tests/ci/ci_register.py", False), ("tests/ci/labels.py", False),
            ("**/command_utils/helm_backend/**", False)] == [
        (n.path, n.on_ci_path) for n in cfg.hub_notes]
    assert ("run-ci-", "", ["stage-a-cpu", "stage-b-cpu"],
            ["bypass-fastfail", "nightly"]) == (cfg.labels.prefix, cfg.labels.blackwell,
                                                cfg.labels.no_action_suites, cfg.labels.never)


def test_pyproject_table_is_read(tmp_path):
    """A [tool.orchestrator.targeted] table in the target repo's pyproject.toml is used."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.orchestrator.targeted]\nentry_points = ["main.py"]\n'
        '[tool.orchestrator.targeted.registration]\nci_gpu = "cuda"\n')
    cfg = load_config(tmp_path)
    assert (["main.py"], {"ci_gpu": "cuda"}) == (cfg.entry_points, cfg.registration)


@pytest.mark.parametrize("table,needle", [
    ('allow_list = ["x"]', "allow_list"),
    ('[tool.orchestrator.targeted.registration]\nf = "tpu"', "'tpu'"),
    ("max_files = 0", "max_files"),
])
def test_invalid_table_raises_with_value(tmp_path, table, needle):
    """A typo'd key or a bad value is a ConfigError quoting it."""
    (tmp_path / "pyproject.toml").write_text("[tool.orchestrator.targeted]\n" + table + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert needle in info.value.message


def test_unknown_profile_lists_known_ones():
    """Asking for a profile that does not exist names the ones that do."""
    with pytest.raises(ConfigError) as info:
        load_profile("nosuch")
    assert "miles" in info.value.hint


def test_profile_beats_pyproject(tmp_path):
    """A named profile wins over the repository's own table."""
    (tmp_path / "pyproject.toml").write_text(
        '[tool.orchestrator.targeted]\nentry_points = ["main.py"]\n')
    assert load_profile("miles") == load_config(tmp_path, profile="miles")


def test_default_instance_matches_empty_table(tmp_path):
    """An empty table is the defaults."""
    (tmp_path / "pyproject.toml").write_text("[tool.orchestrator.targeted]\n")
    got = load_config(tmp_path)
    assert (TargetedConfig().model_copy(update={"source": got.source}), got.source) == (
        got, "pyproject [tool.orchestrator.targeted]")


SUITE_CASES = [  # suite, backend, hardware, how a file runs, a PR workflow runs it
    ("stage-a-cpu", "cpu", "cpu", "pytest", True),
    ("stage-b-2-gpu-h200", "cuda", "h200", "python", True),
    ("stage-c-8-gpu-h100", "cuda", "h100", "python", True),
    ("stage-c-4-gpu-mi350", "rocm", "mi350", "python", True),
    ("nightly-stage-c-8-gpu-mi350", "rocm", "mi350", "python", False),
]


@pytest.mark.parametrize("suite,backend,hardware,runner,pr", SUITE_CASES,
                         ids=[c[0] for c in SUITE_CASES])
def test_miles_profile_maps_suites_to_hardware_and_runner(suite, backend, hardware, runner, pr):
    """The miles profile says, per suite, the hardware, how CI starts a file (pytest for
    CPU suites, python3 file.py for GPU ones) and whether a PR workflow runs it."""
    cfg = load_profile("miles")
    info = cfg.suite(suite)
    assert (backend, hardware, runner, pr) == (info.backend, info.hardware, cfg.runner(suite),
                                               cfg.pr_runs(suite))


def test_suite_without_a_job_never_runs_on_prs():
    """A suite mapped with pr = false (miles' stage-c-8-gpu-b200) or not mapped at all has
    no PR job; without any suite mapped every suite runs."""
    cfg = load_profile("miles")
    assert (False, False, True) == (cfg.pr_runs("stage-c-8-gpu-b200"),
                                    cfg.pr_runs("stage-z-renamed"),
                                    TargetedConfig().pr_runs("anything"))


def test_unknown_suite_runner_comes_from_the_backend_never_a_default():
    """A suite the profile does not map starts as its backend's runner says; with no
    backend runner configured the runner is unknown (None), never pytest by default."""
    cfg = load_profile("miles")
    bare = TargetedConfig(suites={"known": cfg.suite("stage-a-cpu")})
    assert ("python", "pytest", None, "pytest") == (
        cfg.runner("stage-z", "cuda"), cfg.runner("stage-z", "cpu"),
        bare.runner("stage-z", "cuda"), TargetedConfig().runner("stage-z", "cuda"))


def test_profile_is_detected_from_marker_files(tmp_path):
    """A checkout with miles' registry files gets the miles profile, and says so."""
    for rel in ("tests/ci/ci_register.py", "tests/ci/labels.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    cfg = load_config(tmp_path)
    assert ("miles (detected)", "radixark/miles") == (cfg.source, cfg.repo)
    assert "defaults" == load_config(tmp_path / "tests").source
