"""A reusable fake GitHub server (real HTTP on 127.0.0.1) for PyGithub-based tests.

Use the `fake_github` and `client` pytest fixtures (tests/fakegithub/plugin.py, registered for
every test by tests/conftest.py) or `FakeGitHub().start()` directly. Build the scenario through
`fake.repo("owner/name")` and its builders (`add_pull`, `add_comment`, `add_workflow`, `add_run`,
`add_job`, `add_check_run`, `add_status`, `push`, `rerun_failed`; on a `Pull`: `add_file`,
`add_review_comment`, `close`, `merge`); inject trouble with
`fake.fault(...)`, `fake.refuse(...)` (permission refusals), `fake.secondary_limit(...)`,
`fake.timeout(...)`, `fake.rate_remaining = 0` (the primary limit), `fake.blob_ttl = 0`;
install miles' Rerun Test gateway with `repo.enable_rerun_gateway(main_sha)` (gateway.py);
count traffic with `fake.count(path_regex)` over `fake.requests`. Which published documents
the fake follows is stated at the top of server.py; `schemas.py` holds a schema per endpoint
from GitHub's REST description, and tests/github/test_fake_schemas.py holds the fake to it.
"""

from tests.fakegithub.gateway import RerunGateway
from tests.fakegithub.server import FakeGitHub, Fault, RequestRecord
from tests.fakegithub.state import (
    Artifact, CheckRun, Pull, PullFile, Repo, ReviewComment, Status, Workflow, WorkflowRun,
)

__all__ = [
    "Artifact", "CheckRun", "FakeGitHub", "Fault", "Pull", "PullFile", "Repo", "RequestRecord", "RerunGateway",
    "ReviewComment", "Status", "Workflow", "WorkflowRun",
]
