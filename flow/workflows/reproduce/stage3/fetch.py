"""Stage 3's IO: find a CI run, fetch its wheels, and read its job logs.

Path A (GitHub Actions artifacts: torch-xpu-ops, or the ``local`` profile's configured
repository) goes through ``flow.github.artifacts``; Path B (pytorch's xpu workflow, wheels
on S3) finds the run through GitHub and downloads with ``flow.workflows.reproduce.stage3.artifacts``
(range probe, retries, either zip layout). Every dead end is a ``CannotVerify`` with the
seed's blocker, returned, never raised. Base URLs come from settings
(ORCHESTRATOR_GITHUB_API, ORCHESTRATOR_REPRODUCE_ARTIFACT_URL) so tests use 127.0.0.1.
"""
from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.profiles import Profile
from flow.workflows.reproduce.stage3.rules import (
    CiRepo, artifact_url, hardware_of, image_reference, pick_build_envs,
)
from flow.workflows.reproduce.verdict.models import BLOCKER_NO_WHEEL_EXTRACTED, CannotVerify, Stage

if TYPE_CHECKING:  # annotations only: flow.github stays imported lazily
    from flow.github.client import GitHubClient

ARTIFACT_URL_ENV = "ORCHESTRATOR_REPRODUCE_ARTIFACT_URL"
MAX_LOG_JOBS = 10


class CiWheels(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str            # "A" or "B"
    repo: str
    run_id: int
    head_sha: str
    wheels: list[str]    # absolute paths, sorted
    image: str | None = None
    job_log: str = ""    # logs of the run's jobs, concatenated (folded into refined_command)
    notes: list[str] = []


def _blocked(blocker: str) -> CannotVerify:
    return CannotVerify(stage=Stage.CI_ENV, blocker=blocker)


def _job_logs(client: GitHubClient, repo: str, run_id: int) -> str:
    """The run's job logs (first MAX_LOG_JOBS jobs); a log that cannot be read is skipped."""
    from flow.github.actions import job_log
    from flow.github.cache import ETagCache
    from flow.github.errors import GitHubError
    from flow.github.reads import get_all

    try:
        jobs, _ = get_all(client, ETagCache(None), f"/repos/{repo}/actions/runs/{run_id}/jobs",
                          {"per_page": 100}, "jobs")
    except GitHubError:
        return ""
    texts = []
    for job in jobs[:MAX_LOG_JOBS]:
        try:
            texts.append(job_log(client, repo, job["id"]))
        except GitHubError:
            continue
    return "\n".join(texts)


def path_a(client: GitHubClient, repo: str, workflows: list[str], pattern: str, wheels_dir: Path,
           image: str | None) -> CiWheels | CannotVerify:
    from flow.github.artifacts import CiEnvBlocked, download_artifacts, latest_successful_run

    try:
        run = latest_successful_run(client, repo, workflows)
        got = download_artifacts(client, repo, run.id, pattern, wheels_dir)
    except CiEnvBlocked as exc:
        return _blocked(exc.blocker)
    notes = [f"wheels clobbered by several artifacts: {got.clobbered}"] if got.clobbered else []
    return CiWheels(path="A", repo=repo, run_id=run.id, head_sha=run.head_sha,
                    wheels=[str(wheels_dir / w) for w in got.wheels], image=image,
                    job_log=_job_logs(client, repo, run.id), notes=notes)


def path_b(client: GitHubClient, profile: Profile, settings: Mapping[str, str],
           wheels_dir: Path) -> CiWheels | CannotVerify:
    from flow.github.artifacts import CiEnvBlocked, build_env_of, find_run_with_successful_builds
    from flow.workflows.reproduce.stage3.artifacts import download, extract_wheels, probe
    from flow.workflows.reproduce.errors import ArtifactError

    cfg = profile.ci_env.pytorch
    assert cfg is not None
    try:
        run = find_run_with_successful_builds(
            client, cfg.repo, cfg.workflow_name, cfg.workflow_path, cfg.build_job_regex,
            pages=max(1, cfg.max_runs // cfg.runs_per_page), per_page=cfg.runs_per_page)
    except CiEnvBlocked as exc:
        return _blocked(exc.blocker)
    envs = pick_build_envs([build_env_of(j) for j in run.build_jobs], cfg.build_envs,
                           hardware_of(settings.get("ORCHESTRATOR_REPRODUCE_HARDWARE", "")) 
                           if settings.get("ORCHESTRATOR_REPRODUCE_HARDWARE") else None)
    if isinstance(envs, CannotVerify):
        return envs
    base = settings.get(ARTIFACT_URL_ENV) or cfg.artifact_base_url
    notes: list[str] = []
    for env in envs:
        url = artifact_url(cfg.artifact_url_template, base_url=base, run_id=run.id,
                           build_env=env.name)
        checked = probe(url)
        if not checked.ok:
            notes.append(f"{env.name}: probe {checked.status} {checked.detail}".strip())
            continue
        zip_path = wheels_dir.parent / "artifacts.zip"
        if wheels_dir.exists():
            shutil.rmtree(wheels_dir)
        try:
            download(url, zip_path, retries=profile.ci_env.download_retries,
                     delay=profile.ci_env.download_retry_delay)
            wheels = extract_wheels(zip_path, wheels_dir)
        except ArtifactError as exc:
            if exc.blocker == BLOCKER_NO_WHEEL_EXTRACTED:
                return _blocked(exc.blocker)
            notes.append(f"{env.name}: {exc.blocker}")
            continue
        return CiWheels(path="B", repo=cfg.repo, run_id=run.id, head_sha=run.head_sha,
                        wheels=[str(w) for w in wheels], image=image_reference(env, None),
                        job_log=_job_logs(client, cfg.repo, run.id), notes=notes)
    return _blocked(f"no artifact of run {run.id} available for build_envs "
                    f"{[e.name for e in envs]}: {'; '.join(notes) or 'none matched'}")


def fetch(profile: Profile, candidates: list[CiRepo] | None, repo_override: str | None,
          settings: Mapping[str, str], wheels_dir: Path) -> CiWheels | CannotVerify:
    """Wheels of the first candidate CI that yields some; the last blocker otherwise.

    ``candidates`` None means the profile's own GitHub repository (the ``local`` profile),
    ``repo_override`` an ``owner/name`` given as --ci-repo."""
    from flow.github.client import connect
    from flow.github.errors import GitHubError, MissingToken

    try:
        client = connect(env=settings)
    except MissingToken:
        return _blocked("no GitHub token: set GITHUB_TOKEN (or GH_TOKEN) to look up CI runs")
    gh = profile.ci_env.github
    last: CannotVerify = _blocked("no CI repository configured for this profile")
    try:
        for cand in candidates if candidates is not None else [None]:
            if cand is CiRepo.PYTORCH:
                if profile.ci_env.pytorch is None:
                    continue
                got = path_b(client, profile, settings, wheels_dir)
            else:
                repo = repo_override or (gh.repo if gh else "")
                if gh is None or not repo:
                    last = _blocked("ci_env.github.repo is not set: pass --ci-repo OWNER/NAME "
                                    "or set it in the profile")
                    continue
                got = path_a(client, repo, list(gh.workflows), gh.artifact_pattern, wheels_dir,
                             gh.image)
            if isinstance(got, CiWheels):
                return got
            last = got
    except GitHubError as exc:
        return _blocked(f"GitHub lookup failed: {exc.message}")
    return last
