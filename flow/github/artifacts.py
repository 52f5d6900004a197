"""Reproduce Stage 3: find a CI run that built wheels and fetch them (GitHub Actions storage).

Path A (ci_repo=torch-xpu-ops): `latest_successful_run` over the nightly workflow, then
the PR workflow; `download_artifacts` by name pattern, flattening wheels into one dir.
Path B (ci_repo=pytorch): `find_run_with_successful_builds` accepts only runs whose
every `linux-*/ build` job succeeded (partial runs upload partial artifacts). Path B's
wheels live on S3, not here: that download is the reproduce workflow's, not this module's.

A missing run or wheel raises `CiEnvBlocked` carrying the seed's blocker name.
"""

from __future__ import annotations

import fnmatch
import io
import re
import shutil
import zipfile
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict

from flow.github.cache import ETagCache
from flow.github.client import GitHubClient
from flow.github.errors import GitHubError, GitHubRequestFailed
from flow.github.reads import get_all, get_cached

NO_RUN_A = "no_recent_successful_torch-xpu-ops_run"
NO_WHEEL = "no_wheel_in_artifact"
NO_RUN_B = "no_recent_successful_xpu_workflow_run"


class CiEnvBlocked(GitHubError):
    """Stage 3 cannot proceed; `blocker` is the seed's name for why (CANNOT_VERIFY)."""

    code = "ci_env_blocked"

    def __init__(self, blocker: str, message: str, hint: str) -> None:
        self.blocker = blocker
        super().__init__(message, hint, blocker=blocker)


class RunRef(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    id: int
    head_sha: str
    created_at: str
    workflow: str
    build_jobs: list[str] = []


class ArtifactDownload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    run_id: int
    artifacts: list[str]
    wheels: list[str]  # file names in dest, sorted
    clobbered: list[str] = []  # wheel names shipped by more than one artifact (last one kept)


def latest_successful_run(client: GitHubClient, repo: str,
                          workflows: tuple[str, ...] | list[str] = ("nightly_ondemand.yml", "pull.yml"),
                          blocker: str = NO_RUN_A) -> RunRef:
    """The newest successful run of the first workflow (file name) that has one.

    A workflow file the repo lacks counts as having no run. Raises CiEnvBlocked(blocker).
    """
    gh_repo = client.lazy_repo(repo)
    for name in workflows:
        try:  # the handle is lazy: a missing workflow file shows up as a 404 on its runs
            page = client.call(lambda: gh_repo.get_workflow(name).get_runs(status="success").get_page(0),
                               what=f"repos/{repo}/actions/workflows/{name}/runs")
        except GitHubRequestFailed as e:
            if e.status == 404:
                continue
            raise
        if page:
            run = page[0]
            return RunRef(id=run.id, head_sha=run.head_sha, created_at=run.created_at.isoformat(), workflow=name)
    raise CiEnvBlocked(blocker, f"no successful run of {list(workflows)} in {repo!r}",
                       "check the repository's Actions tab; Stage 3 cannot align to CI without a built wheel")


def download_artifacts(client: GitHubClient, repo: str, run_id: int, pattern: str, dest: Path) -> ArtifactDownload:
    """Download every artifact of `run_id` whose name matches the glob `pattern`; put its wheels in `dest`.

    `dest` is emptied first (never reuse a stale wheel). Only `*.whl` members are
    extracted, by base name (flattened as the seed's `find -mindepth 2 ... mv` does;
    this also defeats `../` names in a zip). Raises CiEnvBlocked(no_wheel_in_artifact).
    """
    arts, _ = get_all(client, ETagCache(None), f"/repos/{repo}/actions/runs/{run_id}/artifacts",
                       {"per_page": 100}, "artifacts")
    chosen = [a for a in arts if fnmatch.fnmatchcase(a["name"], pattern) and not a.get("expired")]
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    seen: set[str] = set()
    clobbered: set[str] = set()
    for art in chosen:
        url = client.location(f"/repos/{repo}/actions/artifacts/{art['id']}/zip")
        blob = client.fetch_signed(url, f"artifact {art['name']!r}")
        with zipfile.ZipFile(io.BytesIO(blob)) as zf:
            for member in zf.namelist():
                base = PurePosixPath(member).name
                if not base.endswith(".whl"):
                    continue
                if base in seen:
                    clobbered.add(base)
                seen.add(base)
                (dest / base).write_bytes(zf.read(member))
    wheels = sorted(p.name for p in dest.glob("*.whl"))
    if not wheels:
        raise CiEnvBlocked(NO_WHEEL, f"no .whl in artifacts of run {run_id} matching {pattern!r} "
                           f"(artifacts: {[a['name'] for a in arts]})",
                           "check the artifact name pattern, or pick another run")
    return ArtifactDownload(run_id=run_id, artifacts=[a["name"] for a in chosen], wheels=wheels,
                            clobbered=sorted(clobbered))


def find_run_with_successful_builds(client: GitHubClient, repo: str, workflow_name: str = "xpu",
                                    workflow_path: str = ".github/workflows/xpu.yml",
                                    build_job_regex: str = r"^linux.*/ build$", pages: int = 5,
                                    per_page: int = 20) -> RunRef:
    """The newest completed run whose build jobs (names matching the regex) all succeeded.

    The workflow is found by display name, else by path. Runs with no matching job are
    skipped. Looks at `pages` pages of `per_page` runs. Raises CiEnvBlocked(no_recent_successful_xpu_workflow_run).
    """
    wfs, _ = get_all(client, ETagCache(None), f"/repos/{repo}/actions/workflows", {"per_page": 100}, "workflows")
    wf = next((w for w in wfs if w["name"] == workflow_name), None) or next(
        (w for w in wfs if w["path"] == workflow_path), None)
    if wf is None:
        raise CiEnvBlocked(NO_RUN_B, f"no workflow named {workflow_name!r} or at {workflow_path!r} in {repo!r}",
                           "check the workflow's name: field and path in the repository")
    rx = re.compile(build_job_regex)
    for page in range(1, pages + 1):
        body, _ = get_cached(client, ETagCache(None), f"/repos/{repo}/actions/workflows/{wf['id']}/runs",
                              {"status": "completed", "per_page": per_page, "page": page})
        for run in body["workflow_runs"]:
            jobs, _ = get_all(client, ETagCache(None), f"/repos/{repo}/actions/runs/{run['id']}/jobs",
                               {"per_page": 100}, "jobs")
            builds = [j for j in jobs if rx.search(j["name"])]
            if builds and all(j["conclusion"] == "success" for j in builds):
                return RunRef(id=run["id"], head_sha=run["head_sha"], created_at=run.get("created_at") or "",
                              workflow=wf["path"], build_jobs=sorted(j["name"] for j in builds))
        if len(body["workflow_runs"]) < per_page:
            break
    raise CiEnvBlocked(NO_RUN_B, f"no run of {workflow_name!r} in the last {pages * per_page} completed runs "
                       f"had every build job ({build_job_regex}) succeed",
                       "the CI environment cannot be aligned; report CANNOT_VERIFY with this blocker")


def build_env_of(job_name: str) -> str:
    """'linux-noble-xpu-n-py3.10 / build' -> 'linux-noble-xpu-n-py3.10'."""
    return job_name.rsplit(" / ", 1)[0].strip()
