"""Stage 3 tables: ci_repo inference, build_env choice, CI job-log folding."""
from __future__ import annotations

import pytest

from flow.workflows.reproduce.profiles import load_profile
from flow.workflows.reproduce.reproducer.forms import parse_reproducer
from flow.workflows.reproduce.stage3.rules import (
    BuildEnv, CiAlignment, CiRepo, Hardware, artifact_url, fold_job_log, hardware_of,
    image_reference, infer_ci_repo, pick_build_envs,
)
from flow.workflows.reproduce.verdict.models import CannotVerify, Stage
from flow.workflows.reproduce.verdict.refined_command import render

XPU_OPS, PYTORCH = CiRepo.TORCH_XPU_OPS, CiRepo.PYTORCH

CI_REPO_ROWS = [
    ("pytest test/xpu/test_ops_xpu.py::T::t", None, [XPU_OPS]),
    ("python /src/torch-xpu-ops/test/repro.py", None, [XPU_OPS]),
    ("pytest /src/pytorch/test/test_nn.py::T::t", None, [PYTORCH]),
    ("pytest test/test_nn.py::T::t", None, [PYTORCH]),
    ("python /trees/pt/tools/repro.py", None, [PYTORCH]),  # absolute path inside the pytorch tree
    ('python -c "import torch"', None, [XPU_OPS, PYTORCH]),
    ("TestFoo::test_bar", None, [XPU_OPS, PYTORCH]),
    ("pytest test/xpu/test_ops_xpu.py", PYTORCH, [PYTORCH]),  # explicit wins
]


@pytest.mark.parametrize("text,explicit,expected", CI_REPO_ROWS)
def test_infer_ci_repo(text: str, explicit: CiRepo | None, expected: list[CiRepo]) -> None:
    """The "Determine ci_repo" table, plus an explicit ci_repo skipping the heuristic."""
    rep = parse_reproducer(text, exists=lambda _p: True)
    assert expected == infer_ci_repo(rep, explicit, pytorch_dir="/trees/pt")


def test_batch_entries_are_named_by_the_ci_they_are_aligned_against() -> None:
    """``ci_name``, a batch's groups at Stage 3: real upstream test paths (torch-xpu-ops'
    test/xpu/complex_tensor/test_complex_tensor_xpu.py, pytorch's test/test_nn.py) name
    different CIs, an explicit ci_repo wins, a command with no path may be either; the
    local profile names its OWNER/NAME or its own repository."""
    from flow.workflows.reproduce.stage3.steps import ci_name

    xpu, local = load_profile("pytorch-xpu"), load_profile("local")

    def named(profile: object, text: str, explicit: str | None = None) -> str:
        return ci_name(profile, parse_reproducer(text, exists=lambda _p: True), explicit,
                       "/trees/pt")

    assert ["torch-xpu-ops", "pytorch", "pytorch", "torch-xpu-ops or pytorch", "acme/calc",
            "the profile's", "the profile's"] == [
        named(xpu, "pytest test/xpu/complex_tensor/test_complex_tensor_xpu.py::T::t"),
        named(xpu, "python test/test_nn.py -k test_conv"),
        named(xpu, "pytest test/xpu/complex_tensor/test_complex_tensor_xpu.py", "pytorch"),
        named(xpu, 'python -c "import torch"'),
        named(local, "pytest tests/test_calc.py", "acme/calc"),
        named(local, "pytest tests/test_calc.py"), named(local, "pytest t.py", "pytorch")]


TABLE = load_profile("pytorch-xpu").ci_env.pytorch.build_envs
NOBLE, CLIENT, JAMMY = "linux-noble-xpu-n-py3.10", "linux-noble-xpu-n-py3.10-client", "linux-jammy-xpu-n-1-py3.10"


@pytest.mark.parametrize("found,hardware,expected", [
    ([NOBLE, CLIENT, JAMMY], None, [JAMMY, NOBLE]),          # default PVC, sorted
    ([NOBLE, CLIENT, JAMMY], Hardware.PVC, [JAMMY, NOBLE]),
    ([NOBLE, CLIENT, JAMMY], Hardware.BMG, [CLIENT]),
    ([CLIENT], Hardware.PVC, []),
    ([NOBLE, "linux-noble-xpu-n-py3.12"], None,
     CannotVerify(stage=Stage.CI_ENV, blocker="unknown_build_env=linux-noble-xpu-n-py3.12")),
])
def test_pick_build_envs(found: list[str], hardware: Hardware | None, expected: object) -> None:
    """Known envs in sorted order for the hardware; an unknown env is a blocker, not a guess."""
    result = pick_build_envs(found, TABLE, hardware)
    assert expected == (result if isinstance(result, CannotVerify) else [e.name for e in result])


@pytest.mark.parametrize("name,hardware", [(NOBLE, Hardware.PVC), (CLIENT, Hardware.BMG), (JAMMY, Hardware.PVC)])
def test_hardware_rule(name: str, hardware: Hardware) -> None:
    """-client suffix = BMG; no suffix = PVC; the profile table agrees with the rule."""
    assert (hardware, hardware) == (hardware_of(name), {e.name: e.hardware for e in TABLE}[name])


def test_image_and_artifact_url() -> None:
    """The image reference fills the tree hash when known; the URL template uses the base setting."""
    env = BuildEnv(name=NOBLE, hardware=Hardware.PVC, image="img:x-<docker-tree-hash>")
    profile = load_profile("pytorch-xpu").ci_env.pytorch
    assert ("img:x-abc", "img:x-<docker-tree-hash>",
            f"https://gha-artifacts.s3.amazonaws.com/pytorch/pytorch/42/{NOBLE}/artifacts.zip") == (
        image_reference(env, "abc"), image_reference(env, None),
        artifact_url(profile.artifact_url_template, base_url=profile.artifact_base_url,
                     run_id=42, build_env=NOBLE))


JOB_LOG = """\
2025-01-02T03:04:05.0000000Z ##[group]Run cd test/xpu
2025-01-02T03:04:05.0000000Z cd test/xpu
2025-01-02T03:04:05.0000000Z shell: /usr/bin/bash -e {0}
2025-01-02T03:04:05.0000000Z env:
2025-01-02T03:04:05.0000000Z   ZE_AFFINITY_MASK: 0
2025-01-02T03:04:05.0000000Z   PYTORCH_TEST_WITH_XPU: 1
2025-01-02T03:04:05.0000000Z   GITHUB_TOKEN: ***
2025-01-02T03:04:05.0000000Z ##[endgroup]
2025-01-02T03:04:06.0000000Z + export IS_XPU_CI=1
2025-01-02T03:04:06.0000000Z + python -m pytest --timeout 600 -x -v test_ops_xpu.py
2025-01-02T03:04:07.0000000Z + python -m pytest --timeout 30 other_file.py
"""


def test_fold_job_log() -> None:
    """CI env vars (filtered) and the flags of the pytest line for the test's file are found."""
    assert CiAlignment(env={"ZE_AFFINITY_MASK": "0", "PYTORCH_TEST_WITH_XPU": "1", "IS_XPU_CI": "1"},
                       timeout=600, exitfirst=True) == fold_job_log(JOB_LOG, "test/xpu/test_ops_xpu.py::T::t")


def test_folded_alignment_goes_into_refined_command() -> None:
    """Folding the CI log into refined_command gives inline env and the CI's pytest flags."""
    rep = parse_reproducer("pytest test_ops_xpu.py::TestXPU::test_a")
    ci = fold_job_log(JOB_LOG, rep.pytest_targets[0])
    assert ("cd /t/test/xpu && ZE_AFFINITY_MASK=0 PYTORCH_TEST_WITH_XPU=1 IS_XPU_CI=1 "
            "pytest --timeout 600 -x test_ops_xpu.py::TestXPU::test_a") == render(
        rep, cwd="/t/test/xpu", env=ci.env, timeout=ci.timeout, exitfirst=ci.exitfirst)
