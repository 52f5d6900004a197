"""Reproduce profiles load, validate, carry the seed's data, and take 127.0.0.1 URLs."""
from __future__ import annotations

from pathlib import Path

import pytest

from flow.workflows.reproduce.errors import ProfileError
from flow.workflows.reproduce.profiles import DEFAULT_PROFILE, load_profile


def test_default_is_local() -> None:
    """With no name the local profile loads: current env, venv source build, GitHub artifacts."""
    profile = load_profile()
    assert ("local", "local", "current", "venv", True) == (
        DEFAULT_PROFILE, profile.name, profile.nightly.kind, profile.source_build.kind,
        profile.ci_env.github is not None)


def test_pytorch_xpu_holds_the_seed_data() -> None:
    """The pytorch-xpu profile carries the seed's index, package set, workflows, artifacts, images."""
    p = load_profile("pytorch-xpu")
    assert (
        "https://download.pytorch.org/whl/nightly/xpu", ["torch", "torchvision", "torchaudio"],
        ["nightly_ondemand.yml", "pull.yml"], "Torch-XPU-Wheel-*", "intelgpu/ubuntu-24.04-lts2:2523.40",
        "xpu", ".github/workflows/xpu.yml", "^linux.*/ build$",
        "https://gha-artifacts.s3.amazonaws.com/pytorch/pytorch/{run_id}/{build_env}/artifacts.zip",
        ["linux-jammy-xpu-n-1-py3.10", "linux-noble-xpu-n-py3.10", "linux-noble-xpu-n-py3.10-client"],
        ["torch", "torchvision", "torchaudio", "pytorch-triton-xpu", "triton_xpu"],
        ["git", "clone", "--filter=blob:none", "{clone_url}", "{tree}"],
        "xpu-build-pytorch",
    ) == (
        p.nightly.index_url, p.nightly.packages, p.ci_env.github.workflows,
        p.ci_env.github.artifact_pattern, p.ci_env.github.image, p.ci_env.pytorch.workflow_name,
        p.ci_env.pytorch.workflow_path, p.ci_env.pytorch.build_job_regex,
        p.ci_env.pytorch.artifact_url_template.replace("{base}", p.ci_env.pytorch.artifact_base_url),
        sorted(e.name for e in p.ci_env.pytorch.build_envs), p.ci_env.uninstall, p.tree.clone,
        p.source_build.skill,
    )


def test_overrides_point_urls_at_localhost() -> None:
    """Base URLs are settings: dotted overrides replace them before validation."""
    p = load_profile("pytorch-xpu", {"nightly.index_url": "http://127.0.0.1:1/simple",
                                     "ci_env.pytorch.artifact_base_url": "http://127.0.0.1:2",
                                     "ci_env.github.api_url": "http://127.0.0.1:3"})
    assert ("http://127.0.0.1:1/simple", "http://127.0.0.1:2", "http://127.0.0.1:3") == (
        p.nightly.index_url, p.ci_env.pytorch.artifact_base_url, p.ci_env.github.api_url)


@pytest.mark.parametrize("name,overrides,message", [
    ("nope", {}, "no reproduce profile 'nope'"),
    ("local", {"nightly.kind": "weekly"}, "nightly.kind"),
    ("local", {"nightly.packges": ["x"]}, "nightly.packges: Extra inputs"),
    ("local", {"nosuch.table.key": 1}, "has no table 'nosuch'"),
])
def test_bad_profiles_refused(name: str, overrides: dict, message: str) -> None:
    """Unknown profiles, typos and bad values are refused naming the key."""
    with pytest.raises(ProfileError, match=message):
        load_profile(name, overrides)


def test_profile_by_path(tmp_path: Path) -> None:
    """A profile may be given as a path; invalid TOML is named with the file."""
    bad = tmp_path / "mine.toml"
    bad.write_text("name = [")
    with pytest.raises(ProfileError, match="not valid TOML"):
        load_profile(str(bad))
