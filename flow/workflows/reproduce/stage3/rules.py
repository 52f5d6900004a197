"""Stage 3's rules (seed: "Stage 3: CI Environment Alignment"): which CI to align
against, which build_env to take, what of a CI job log to fold into ``refined_command``,
and the Stage 3 decision table. Pure functions over data.
"""
from __future__ import annotations

import re
import shlex
from enum import StrEnum

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.reproducer.forms import Reproducer
from flow.workflows.reproduce.run.decision import Decision, from_run
from flow.workflows.reproduce.run.interpret import RunOutcome
from flow.workflows.reproduce.verdict.models import (
    ALL_STAGES, ORIGIN_MAIN, CannotVerify, NotReproduced, Stage, blocker_unknown_build_env,
)


class CiRepo(StrEnum):
    TORCH_XPU_OPS = "torch-xpu-ops"
    PYTORCH = "pytorch"


class Hardware(StrEnum):
    PVC = "PVC"  # datacenter (no suffix)
    BMG = "BMG"  # client GPU (-client suffix)


def _paths(rep: Reproducer) -> list[str]:
    words = [t.split("::", 1)[0] for t in rep.pytest_targets]
    if rep.script:
        words.append(rep.script)
    words += [w for w in rep.step.argv if "/" in w or w.endswith(".py")]
    return words


def infer_ci_repo(rep: Reproducer, explicit: CiRepo | None = None,
                  pytorch_dir: str | None = None) -> list[CiRepo]:
    """Candidates in the order to try (seed: "Determine ci_repo").

    explicit -> [explicit]; a path with test/xpu/ or torch-xpu-ops -> [torch-xpu-ops];
    a pytorch/test/... path or an absolute path inside ``pytorch_dir`` -> [pytorch];
    anything else (python -c, no path) -> [torch-xpu-ops, pytorch].
    """
    if explicit is not None:
        return [explicit]
    paths = _paths(rep)
    if any("test/xpu/" in p or "torch-xpu-ops" in p for p in paths):
        return [CiRepo.TORCH_XPU_OPS]
    tree = pytorch_dir.rstrip("/") + "/" if pytorch_dir else None
    if any(re.search(r"(^|/)pytorch/test/", p) or re.match(r"^test/", p)
           or (tree and p.startswith(tree)) for p in paths):
        return [CiRepo.PYTORCH]
    return [CiRepo.TORCH_XPU_OPS, CiRepo.PYTORCH]


class BuildEnv(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    hardware: Hardware
    image: str  # reference only: the skill never pulls it


def hardware_of(name: str) -> Hardware:
    """-client suffix = BMG; no suffix = PVC."""
    return Hardware.BMG if name.endswith("-client") else Hardware.PVC


def pick_build_envs(found: list[str], table: list[BuildEnv],
                    hardware: Hardware | None = None) -> list[BuildEnv] | CannotVerify:
    """The build envs of a run to try, in sorted order, matching ``hardware`` (PVC when
    unknown). Any name not in the table -> CANNOT_VERIFY(unknown_build_env=<name>): the
    table is extended by a person, never guessed."""
    known = {env.name: env for env in table}
    for name in sorted(found):
        if name not in known:
            return CannotVerify(stage=Stage.CI_ENV, blocker=blocker_unknown_build_env(name))
    want = hardware or Hardware.PVC
    return [known[name] for name in sorted(set(found)) if known[name].hardware is want]


def image_reference(env: BuildEnv, docker_tree_hash: str | None) -> str:
    """The image for the report; the ``<docker-tree-hash>`` placeholder stays when unknown."""
    return env.image.replace("<docker-tree-hash>", docker_tree_hash) if docker_tree_hash else env.image


def artifact_url(template: str, *, base_url: str, run_id: int | str, build_env: str) -> str:
    """Fill the profile's artifact URL template (base URL is a setting, so tests use 127.0.0.1)."""
    return template.format(base=base_url.rstrip("/"), run_id=run_id, build_env=build_env)


_TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT[\d:.]+Z ?")
_YAML_ENV = re.compile(r"^\s+([A-Za-z_][A-Za-z0-9_]*): ?(.*)$")
_EXPORT = re.compile(r"(?:^|\s)export\s+([A-Za-z_][A-Za-z0-9_]*)=(\S*)")
DEFAULT_ENV_PATTERNS = (r"^ZE_", r"^PYTORCH_", r"^IS_\w*CI$", r"^XPU_", r"^SYCL_", r"^ONEAPI_",
                        r"^TORCH_", r"^CI$")


class CiAlignment(BaseModel):
    """What a CI job log says the test ran with."""

    model_config = ConfigDict(extra="forbid")
    env: dict[str, str] = {}
    timeout: int | None = None
    exitfirst: bool = False


def fold_job_log(log: str, test_file: str | None,
                 env_patterns: tuple[str, ...] = DEFAULT_ENV_PATTERNS) -> CiAlignment:
    """Extract env vars (GitHub's ``env:`` block and ``export X=Y`` lines, filtered by
    ``env_patterns``) and pytest flags (``--timeout N``, ``-x``) from the pytest command
    line that ran ``test_file`` (its basename is matched). Never raises on odd text."""
    wanted = [re.compile(p) for p in env_patterns]
    out = CiAlignment()
    in_env = False
    base = test_file.rsplit("/", 1)[-1].split("::", 1)[0] if test_file else None
    for raw in log.splitlines():
        line = _TIMESTAMP.sub("", raw.rstrip())
        if line.strip() == "env:":
            in_env = True
            continue
        if in_env:
            m = _YAML_ENV.match(line)
            if m and not line.startswith("##"):
                name, value = m.group(1), m.group(2).strip().strip("'\"")
                if any(w.search(name) for w in wanted):
                    out.env[name] = value
                continue
            in_env = False
        for name, value in _EXPORT.findall(line):
            if any(w.search(name) for w in wanted):
                out.env[name] = value.strip("'\"")
        if base and "pytest" in line and base in line:
            try:
                words = shlex.split(line)
            except ValueError:
                words = line.split()
            for i, word in enumerate(words):
                if word == "--timeout" and i + 1 < len(words) and words[i + 1].isdigit():
                    out.timeout = int(words[i + 1])
                elif word.startswith("--timeout=") and word[10:].isdigit():
                    out.timeout = int(word[10:])
                elif word in ("-x", "--exitfirst"):
                    out.exitfirst = True
    return out


def stage3(outcome: RunOutcome, refined: str, *, rerun_done: bool = False,
           label: str = "the nightly wheel") -> Decision:
    """Stage 3 table: FAILED -> REPRODUCED(ci_env, base=origin/main, never the wheel's
    commit); PASSED -> NOT_REPRODUCED(all three stages)."""
    return from_run(
        outcome, Stage.CI_ENV, refined, ORIGIN_MAIN, rerun_done,
        NotReproduced(checked_stages=list(ALL_STAGES),
                      reason=f"passes on {label}, the source build and the CI wheel ({outcome.detail})"))
