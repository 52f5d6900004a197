"""Config sources: defaults, the miles profile, a pyproject table; errors quote the value."""

from __future__ import annotations

import pytest

from flow.targeted.config import TargetedConfig, load_config, load_profile
from flow.targeted.errors import ConfigError


def test_defaults_serve_any_repo(tmp_path):
    """Without pyproject table or profile, every .py file is traced and test_*.py are tests."""
    cfg = load_config(tmp_path)
    expected = (["**/*.py"], ["**/test_*.py"], "scripts/models",
                ["register_cpu_ci", "register_cuda_ci", "register_rocm_ci"])
    assert expected == (cfg.allowlist, cfg.tests, cfg.models_dir, sorted(cfg.registration))


def test_miles_profile_reproduces_the_seed():
    """The miles profile carries the seed's allowlist, entry points, hub note and labels."""
    cfg = load_profile("miles")
    assert ["train.py", "train_async.py", "train_multi_policy.py",
            "serve_tinker.py"] == cfg.entry_points
    assert {"miles/**/*.py", "miles_plugins/**/*.py", "scripts/**/*.py", "examples/**/*.py",
            "tests/**/*.py", "docker/*.py", "tools/*.py", ".github/**/*.py"} <= set(
        cfg.allowlist)
    assert [("**/command_utils/helm_backend/**", False)] == [
        (n.path, n.on_ci_path) for n in cfg.hub_notes]
    assert ("run-ci-", "run-on-blackwell", ["stage-a-cpu", "stage-b-cpu"],
            ["bypass-fastfail"]) == (cfg.labels.prefix, cfg.labels.blackwell,
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
    assert TargetedConfig() == load_config(tmp_path)
