"""Reproduce Stage 3 lookups: Path A (latest successful run, artifact wheels) and Path B (all builds green)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.github.artifacts import (
    NO_RUN_A, NO_RUN_B, NO_WHEEL, CiEnvBlocked, build_env_of, download_artifacts,
    find_run_with_successful_builds, latest_successful_run,
)
from flow.github.client import GitHubClient
from tests.fakegithub import FakeGitHub

REPO = "intel/torch-xpu-ops"


def path_a(fake: FakeGitHub, nightly: list[str], pull: list[str]):  # noqa: ANN201
    repo = fake.repo(REPO)
    wfs = {"nightly": repo.add_workflow("nightly", ".github/workflows/nightly_ondemand.yml"),
           "pull": repo.add_workflow("pull", ".github/workflows/pull.yml")}
    made = {}
    for key, conclusions in (("nightly", nightly), ("pull", pull)):
        for i, concl in enumerate(conclusions):
            made[f"{key}{i}"] = repo.add_run(wfs[key], f"{i}{key[0]}" * 20, head_branch="main",
                                             jobs=[("build", concl)])
    return repo, made


@pytest.mark.parametrize("nightly, pull, expected", [
    (["success", "failure"], ["success"], ("nightly0", "nightly_ondemand.yml")),  # newest nightly failed
    (["failure"], ["success", "success"], ("pull1", "pull.yml")),  # fallback, newest first
])
def test_latest_successful_run(client: GitHubClient, fake_github: FakeGitHub, nightly, pull, expected) -> None:  # noqa: ANN001
    """Nightly is preferred; with no successful nightly the PR workflow's newest success is used."""
    _, made = path_a(fake_github, nightly, pull)
    run = latest_successful_run(client, REPO)
    assert (made[expected[0]].id, expected[1]) == (run.id, run.workflow)


def test_no_successful_run_blocks(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """No successful run in either workflow gives the seed's blocker."""
    path_a(fake_github, ["failure"], ["cancelled"])
    with pytest.raises(CiEnvBlocked) as err:
        latest_successful_run(client, REPO)
    assert NO_RUN_A == err.value.blocker


def test_missing_workflow_file_is_skipped(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """A repo without the nightly workflow file falls through to the next one."""
    repo = fake_github.repo(REPO)
    run = repo.add_run(repo.add_workflow("pull", ".github/workflows/pull.yml"), "e" * 40, jobs=[("b", "success")])
    assert run.id == latest_successful_run(client, REPO).id


def test_artifacts_are_downloaded_and_flattened(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """Matching artifacts' wheels land flat in dest; other artifacts and stale files do not."""
    _, made = path_a(fake_github, ["success"], [])
    run = made["nightly0"]
    run.add_artifact(f"Torch-XPU-Wheel-sha-{run.id}-1", {"dist/torch-2.9-cp310.whl": b"T", "README": b"x"})
    run.add_artifact(f"Torch-XPU-Wheel-sha-{run.id}-1-baseline", {"a/b/triton_xpu-3.0-cp310.whl": b"X",
                                                                 "../evil.whl": b"E"})
    run.add_artifact("Logs", {"log.whl": b"not a wheel artifact"})
    dest = tmp_path / "wheels"
    dest.mkdir()
    (dest / "stale-torch.whl").write_bytes(b"old")
    got = download_artifacts(client, REPO, run.id, "Torch-XPU-Wheel-*", dest)
    assert (["evil.whl", "torch-2.9-cp310.whl", "triton_xpu-3.0-cp310.whl"], got.wheels) == (
        sorted(p.name for p in dest.iterdir()), sorted(p.name for p in dest.iterdir()))


def test_no_wheel_in_artifact_blocks(client: GitHubClient, fake_github: FakeGitHub, tmp_path: Path) -> None:
    """Artifacts without any .whl give the no_wheel_in_artifact blocker."""
    _, made = path_a(fake_github, ["success"], [])
    made["nightly0"].add_artifact("Torch-XPU-Wheel-x", {"build.log": b"nothing"})
    with pytest.raises(CiEnvBlocked) as err:
        download_artifacts(client, REPO, made["nightly0"].id, "Torch-XPU-Wheel-*", tmp_path / "w")
    assert NO_WHEEL == err.value.blocker


BUILDS = ["linux-noble-xpu-n-py3.10 / build", "linux-jammy-xpu-n-1-py3.10 / build"]


def path_b(fake: FakeGitHub, runs: list[list[tuple[str, str]]], name: str = "xpu"):  # noqa: ANN201
    repo = fake.repo("pytorch/pytorch")
    repo.add_workflow("pull", ".github/workflows/pull.yml")
    wf = repo.add_workflow(name, ".github/workflows/xpu.yml")
    # runs are given newest first; create oldest first so ids grow with age reversed
    return [repo.add_run(wf, f"{i:040d}", head_branch="main", jobs=jobs) for i, jobs in reversed(list(enumerate(runs)))][::-1]


def test_path_b_skips_partial_and_jobless_runs(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """A run with one failed build, and one with no build job, are passed over for a fully built one."""
    runs = path_b(fake_github, [
        [(BUILDS[0], "success"), (BUILDS[1], "failure")],
        [("linux-docs / test", "success")],
        [(BUILDS[0], "success"), (BUILDS[1], "success"), ("linux-noble-xpu-n-py3.10 / test", "failure")],
    ])
    got = find_run_with_successful_builds(client, "pytorch/pytorch")
    assert (runs[2].id, sorted(BUILDS)) == (got.id, got.build_jobs)


def test_path_b_finds_run_on_a_later_page(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """With per_page=2 the qualifying third run is found on page 2."""
    runs = path_b(fake_github, [[(BUILDS[0], "failure")]] * 2 + [[(BUILDS[0], "success")]])
    assert runs[2].id == find_run_with_successful_builds(client, "pytorch/pytorch", per_page=2).id


def test_path_b_workflow_found_by_path_after_rename(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """If the workflow's display name changed, the file path still finds it."""
    runs = path_b(fake_github, [[(BUILDS[0], "success")]], name="xpu-renamed")
    assert runs[0].id == find_run_with_successful_builds(client, "pytorch/pytorch").id


def test_path_b_none_within_pages_blocks(client: GitHubClient, fake_github: FakeGitHub) -> None:
    """No fully built run within pages*per_page gives no_recent_successful_xpu_workflow_run."""
    path_b(fake_github, [[(BUILDS[0], "failure")]] * 3 + [[(BUILDS[0], "success")]])
    with pytest.raises(CiEnvBlocked) as err:
        find_run_with_successful_builds(client, "pytorch/pytorch", pages=1, per_page=3)
    assert NO_RUN_B == err.value.blocker


@pytest.mark.parametrize("job, env", [
    ("linux-noble-xpu-n-py3.10 / build", "linux-noble-xpu-n-py3.10"),
    ("linux-noble-xpu-n-py3.10-client / build", "linux-noble-xpu-n-py3.10-client"),
])
def test_build_env_of(job: str, env: str) -> None:
    """The build_env is the job name before ' / build'."""
    assert env == build_env_of(job)
