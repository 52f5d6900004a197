"""The targeted-CI config: which calls register tests, what the trace covers, label rules.

Sources, first found wins: a named profile ``reference/targeted/<name>.toml``, the
``[tool.orchestrator.targeted]`` table of the target repository's ``pyproject.toml``, or
the defaults. The defaults serve any Python repository: every tracked ``.py`` file is
traced, the seed's ``register_cpu_ci`` / ``register_cuda_ci`` / ``register_rocm_ci`` calls
and the ``scripts/models/`` rule apply, and ``test_*.py`` files are the tests.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from flow.workflows.targeted.errors import ConfigError
from reference import DIR as REFERENCE

Backend = Literal["cpu", "cuda", "rocm"]

PROFILE_DIR = REFERENCE / "targeted"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class HubNote(_Strict):
    """A remark attached to hubs under ``path`` (a glob); ``on_ci_path=False`` means GPU CI
    never takes the path to it, so meeting it does not make a change broad."""

    path: str
    note: str
    on_ci_path: bool = True


class LabelRule(_Strict):
    """What one PR label selects beyond ``prefix + registration label``."""

    suites: list[str] = []
    tests: list[str] = []  # globs over test paths
    test_labels: list[str] = []


class Scope(_Strict):
    """A broad PR label (``run-ci-all``, ``run-ci-image``): it selects every registration
    label except ``exclude``."""

    exclude: list[str] = []


class PathLabels(_Strict):
    """What a changed path no test file's trace covers needs: ``labels`` (PR labels; an
    empty list means no GPU run helps, e.g. a control-plane workflow) and why."""

    path: str
    labels: list[str]
    why: str


class Labels(_Strict):
    """PR label conventions. A registration label ``x`` is selected by ``prefix + x``."""

    prefix: str = "run-ci-"
    blackwell: str = "run-on-blackwell"  # "" when the repository has no such label
    never: list[str] = ["bypass-fastfail"]  # labels the selector must not propose
    no_action_suites: list[str] = []  # suites that run on every PR without a label
    rules: dict[str, LabelRule] = {}
    scopes: dict[str, Scope] = {}  # broad labels, used when no domain-label cover is small
    max_domain: int = Field(4, ge=1)  # domain labels beyond which a scope label is cheaper
    # Changed paths outside the trace, and entry-loaded files no test names: first match
    # wins; unmatched ones take ``fallback``.
    paths: list[PathLabels] = []
    fallback: list[str] = []


class Suite(_Strict):
    """One CI suite as the repository's workflows run it: on which backend and hardware,
    how a file is started (``pytest`` loads conftest files; ``python`` runs ``python3
    file.py``, which loads a conftest only when the file calls ``pytest.main``), and
    whether a job of the PR workflows runs it at all (``pr``; False for suites only an
    external nightly schedules, or with no job)."""

    backend: Backend
    hardware: str
    runner: Literal["pytest", "python"]
    pr: bool = True
    workflow: str = ""


class Implicit(_Strict):
    """Test files under ``path`` that are registered by where they live, not by a call;
    ``est_time`` is what the repository's own reader assigns them (None: it says none)."""

    path: str
    backend: Backend = "cpu"
    suite: str
    labels: list[str] = []
    est_time: float | None = None


class ExternalImport(_Strict):
    """Modules under ``path`` (a glob) that code outside this repository imports by module
    path (the seed: the Megatron fork and sglang-miles import ``miles.utils.replay_base``):
    the trace cannot see those importers, so a change there needs ``labels`` (the e2e tests
    of the models that use it); ``importers`` names them for the plan."""

    path: str
    importers: list[str]
    labels: list[str]
    why: str = ""


class FlagEdge(_Strict):
    """A hand-written launch-flag edge: a test passing ``flag`` (with ``value``, when set)
    runs the modules in ``starts`` (repo-relative paths), though no import says so. Edges
    the trace learns from the repository's own gates need no entry (see ``flags``)."""

    flag: str = Field(pattern=r"^--[\w-]+$")
    value: str | None = None
    starts: list[str]
    why: str = ""


class Timing(_Strict):
    """``est_time = ceil(factor x measured)`` rounded up to ``fine_step`` while the value is
    at or below ``threshold`` and to ``coarse_step`` above it."""

    factor: float = 1.25
    fine_step: int = Field(10, gt=0)
    coarse_step: int = Field(30, gt=0)
    threshold: int = Field(300, ge=0)


class TargetedConfig(_Strict):
    """Everything the tracer and selector read about one repository."""

    registration: dict[str, Backend] = {
        "register_cpu_ci": "cpu",
        "register_cuda_ci": "cuda",
        "register_rocm_ci": "rocm",
    }
    positional: list[str] = ["est_time", "suite"]  # parameters a call may pass by position
    # Suites by name. Empty: every suite runs on PRs and its files run under pytest (the
    # generic reading). Non-empty: a suite missing from it has no job, so it never runs.
    suites: dict[str, Suite] = {}
    # How CI starts a file of a suite the profile does not map, by backend (the CI's own
    # runner per backend); with suites mapped and no entry here, the runner is unknown and
    # only a ``pytest.main`` call in the file loads its conftests.
    backend_runners: dict[Backend, Literal["pytest", "python"]] = {}
    external_imports: list[ExternalImport] = []
    flag_edges: list[FlagEdge] = []  # launch flags that start modules, by hand
    # Trace launch-flag edges learned from the repository's gates (``flags``)
    learn_flag_edges: bool = True
    no_gpu: list[str] = []  # changed paths the repository's CI proves need no GPU run
    strings_not_loads: list[str] = []  # files whose string literals are data (label prose)
    detect: list[str] = []  # files whose presence identifies the repository (profiles)
    # Changed files within this many import hops of an entry point run on every training
    # run: the change is broad. Deeper ones are specific code paths, judged by the tests
    # the trace reaches (see ``select.choose``).
    entry_core_hops: int = Field(1, ge=0)
    roots: list[str] = ["."]  # import roots (sys.path entries), repo-relative
    tests: list[str] = ["**/test_*.py"]
    tests_exclude: list[str] = []
    implicit: list[Implicit] = []
    allowlist: list[str] = ["**/*.py"]  # Python the import graph covers for GPU runtime
    entry_points: list[str] = []
    models_dir: str = "scripts/models"
    hub_notes: list[HubNote] = []
    labels: Labels = Labels()
    blackwell_paths: list[str] = ["**/*blackwell*", "**/*blackwell*/**", "**/*sm100*"]
    max_files: int = Field(10, ge=1)  # seed step 2: "roughly <= 10" files run one by one
    near_hub_hops: int = Field(2, ge=0)
    timing: Timing = Timing()
    repo: str = ""  # owner/name, for run URLs; informational

    source: str = "defaults"  # where this config came from (set by load_config)

    def backend_of(self, func: str) -> Backend | None:
        """The backend a registration function declares, or None when it is not one."""
        return self.registration.get(func)

    def suite(self, name: str) -> Suite | None:
        """The suite ``name``; None when the config maps suites and this one has no job."""
        return self.suites.get(name)

    def pr_runs(self, suite: str) -> bool:
        """True when a label-selected PR run executes registrations of ``suite``."""
        if not self.suites:
            return True
        info = self.suites.get(suite)
        return info is not None and info.pr

    def known_suite(self, suite: str) -> bool:
        """True when the config maps no suites (the generic reading) or maps ``suite``."""
        return not self.suites or suite in self.suites

    def runner(self, suite: str, backend: str | None = None) -> str | None:
        """How CI starts a file of ``suite``: "pytest" or "python"; for a suite the config
        does not map, the backend's runner (``backend_runners``), else None (unknown: never
        defaulted). Without any suite mapped every file runs under pytest."""
        info = self.suites.get(suite)
        if info is not None:
            return info.runner
        if not self.suites:
            return "pytest"
        return self.backend_runners.get(backend) if backend else None  # type: ignore[call-overload]

    def hardware(self, suite: str, backend: str) -> str:
        """The hardware class ``suite`` runs on (the backend when unmapped)."""
        info = self.suites.get(suite)
        return info.hardware if info is not None else backend


def _validate(data: object, where: str) -> TargetedConfig:
    try:
        return TargetedConfig.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"invalid targeted-CI config in {where}: {loc}: {first['msg']} "
            f"(got {first.get('input')!r})",
            "fix that key; the keys are documented in flow/targeted/config.py",
            source=where,
        ) from exc


def load_profile(name: str, profile_dir: Path = PROFILE_DIR) -> TargetedConfig:
    """Load ``<profile_dir>/<name>.toml``; raises ConfigError when missing or invalid."""
    if not name.replace("-", "").replace("_", "").isalnum():
        raise ConfigError(f"bad profile name {name!r}",
                          "use letters, digits, '-' or '_' (a file in reference/targeted/)")
    path = profile_dir / f"{name}.toml"
    if not path.is_file():
        known = sorted(p.stem for p in profile_dir.glob("*.toml"))
        raise ConfigError(f"no targeted-CI profile {name!r}",
                          f"use one of {known} or add {path}")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}", "fix the TOML syntax") from exc
    cfg = _validate(data, str(path))
    return cfg.model_copy(update={"source": name})


def detect_profile(repo_dir: Path, profile_dir: Path = PROFILE_DIR) -> str | None:
    """The name of the first profile whose ``detect`` files all exist in ``repo_dir``."""
    for path in sorted(profile_dir.glob("*.toml")):
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError):
            continue
        marks = data.get("detect") or []
        if marks and all((Path(repo_dir) / m).is_file() for m in marks):
            return path.stem
    return None


def load_config(repo_dir: Path, profile: str | None = None,
                profile_dir: Path = PROFILE_DIR) -> TargetedConfig:
    """The config for ``repo_dir``: ``profile`` if named, else its pyproject table, else
    the profile whose ``detect`` files it has, else defaults; ``source`` says which.
    Raises ConfigError on an unknown profile or an invalid table."""
    if profile:
        return load_profile(profile, profile_dir)
    pyproject = Path(repo_dir) / "pyproject.toml"
    if pyproject.is_file():
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"{pyproject} is not valid TOML: {exc}",
                              "fix the TOML syntax or pass a profile") from exc
        table = data.get("tool", {}).get("orchestrator", {}).get("targeted")
        if table is not None:
            cfg = _validate(table, f"{pyproject} [tool.orchestrator.targeted]")
            return cfg.model_copy(update={"source": "pyproject [tool.orchestrator.targeted]"})
    found = detect_profile(repo_dir, profile_dir)
    if found is not None:
        cfg = load_profile(found, profile_dir)
        return cfg.model_copy(update={"source": f"{found} (detected)"})
    return TargetedConfig()
