"""Reproduce profiles: ``reference/reproduce/<name>.toml``, validated on load.

A profile says, per stage, how the environment is obtained:

- ``nightly``: ``kind="index"`` installs ``packages`` from ``index_url`` (pytorch-xpu);
  ``kind="current"`` takes the current environment as is (local).
- ``source_build``: ``kind="skill"`` emits an agent task loading ``skill`` (pytorch-xpu's
  xpu-build-pytorch); ``kind="venv"`` installs the given source dir into a fresh venv.
- ``ci_env``: ``pytorch`` (Path B: S3 artifacts of a workflow) and/or ``github``
  (Path A: GitHub Actions artifacts of a repository's workflows).

Base URLs (index, GitHub API, artifact host) are settings: ``load_profile(name,
overrides={"ci_env.pytorch.artifact_base_url": "http://127.0.0.1:PORT"})``.
"""
from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flow.workflows.reproduce.errors import ProfileError
from flow.workflows.reproduce.run.deciding import DEFAULT_TIMEOUT_S
from flow.workflows.reproduce.stage3.rules import BuildEnv
from reference import DIR as REFERENCE

PROFILE_DIR = REFERENCE / "reproduce"
DEFAULT_PROFILE = "local"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class NightlyStage(_Strict):
    kind: Literal["index", "current"]
    packages: list[str] = Field(min_length=1)
    index_url: str | None = None
    pre: bool = False
    same_day_check: bool = True


class SourceBuildStage(_Strict):
    kind: Literal["skill", "venv"]
    skill: str | None = None
    clone_url: str | None = None
    scratch_subdir: str | None = None   # where the tree is cloned when none is given
    install_args: list[str] = []        # extra ``pip install`` args for kind=venv
    # kind=venv (``localbuild``): editable where the project allows; build isolation and
    # pip's index unless ``offline`` (then the project interpreter's environment lends
    # the backend, dependencies and test tools); ``test_extras`` are installed with it.
    editable: bool = True
    offline: bool = False
    test_extras: list[str] = []
    # what a fix-verifier runs before refined_command when this profile built the
    # environment elsewhere (kind=skill); empty for kind=venv (computed from the install)
    rerun_after_fix: str = ""


class GithubArtifactsPath(_Strict):
    """Path A: artifacts of a repository's GitHub Actions runs."""

    repo: str                           # "owner/name"; "" means: configure it
    workflows: list[str] = Field(min_length=1)  # tried in order
    artifact_pattern: str
    image: str | None = None
    api_url: str = "https://api.github.com"


class PytorchS3Path(_Strict):
    """Path B: the pytorch xpu workflow's artifacts on S3."""

    repo: str
    workflow_name: str
    workflow_path: str
    build_job_regex: str
    max_runs: int = 100
    runs_per_page: int = 20
    artifact_base_url: str
    artifact_url_template: str
    build_envs: list[BuildEnv] = Field(min_length=1)
    api_url: str = "https://api.github.com"


class CiEnvStage(_Strict):
    uninstall: list[str]
    github: GithubArtifactsPath | None = None
    pytorch: PytorchS3Path | None = None
    env_var_patterns: list[str] = []
    download_retries: int = 3
    download_retry_delay: float = 5.0


class TreeCommands(_Strict):
    """The seed's git recipes as argument lists with ``{placeholders}`` (see ``commands``)."""

    clone: list[str]
    fetch: list[str]
    detach_main: list[str]
    submodules: list[str]
    fallback_detach: list[str]          # {ci_commit}
    clean: list[list[str]]              # Stage 3: drop stage-2 build outputs
    align: list[str]                    # Stage 3: {wheel_commit}, full fetch first
    wheel_commit_query: list[str]       # prints the installed wheel's git version


class Profile(_Strict):
    name: str
    description: str
    import_package: str | None = None   # what the in-tree-import trap guards (None: no guard)
    project: str | None = None          # distribution under test (local: the source's pyproject)
    # Dotted decorator names taken off (or bypassed) when they skip the exact test; a name
    # matches its tail too (``skipIfXpu`` matches ``common_utils.skipIfXpu``).
    skip_markers: list[str]
    # A command run before the reproducer (``activate && refined``) where callers work in
    # an activated environment (e.g. oneAPI's setvars.sh); None: the command is self-contained.
    activate: str | None = None
    # Seconds one reproducer run, setup or install may take (``--timeout`` overrides).
    timeout_s: float = Field(default=DEFAULT_TIMEOUT_S, gt=0)
    # How the report words Stage 1's environment ("the nightly wheel", "the current environment").
    nightly_label: str = "the nightly wheel"
    xpu_ops_subdir: str | None = None
    tree: TreeCommands | None = None
    nightly: NightlyStage
    source_build: SourceBuildStage
    ci_env: CiEnvStage


def _apply(data: dict[str, Any], dotted: str, value: Any, name: str) -> None:
    keys = dotted.split(".")
    node = data
    for key in keys[:-1]:
        if not isinstance(node.get(key), dict):
            raise ProfileError(f"override {dotted!r}: profile {name!r} has no table {key!r}; "
                               "check the dotted key against the profile file", profile=name)
        node = node[key]
    node[keys[-1]] = value


def load_profile(name_or_path: str = DEFAULT_PROFILE, overrides: dict[str, Any] | None = None,
                 profile_dir: Path = PROFILE_DIR) -> Profile:
    """Load a profile by name (``local``, ``pytorch-xpu``) or path; apply dotted-key
    ``overrides``; validate. Raises ProfileError naming the file and the bad fields."""
    path = Path(name_or_path)
    if path.suffix != ".toml":
        path = profile_dir / f"{name_or_path}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in profile_dir.glob("*.toml"))
        raise ProfileError(f"no reproduce profile {name_or_path!r}; known: {known}",
                           profile=str(name_or_path))
    from flow.core.boundedfile import UnreadableFile, read_regular

    try:  # a profile is a small text file: bounded, and never nested past what parses
        data = tomllib.loads(read_regular(path, 1 << 20).decode("utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ProfileError(f"{path} is not valid TOML: {exc}; fix the file", profile=str(path)) from exc
    except (UnreadableFile, UnicodeDecodeError) as exc:
        raise ProfileError(f"{path} cannot be read as a profile: {exc}", profile=str(path)) from None
    except RecursionError:
        raise ProfileError(f"{path} is nested too deep to read; a profile is a few flat tables",
                           profile=str(path)) from None
    for dotted, value in (overrides or {}).items():
        _apply(data, dotted, value, str(path))
    try:
        return Profile.model_validate(data)
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ProfileError(f"{path} does not validate: {fields}; fix these keys",
                           profile=str(path)) from exc
