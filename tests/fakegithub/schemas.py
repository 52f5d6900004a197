"""A small schema per endpoint the project calls, written from GitHub's published REST
description (github/rest-api-description, descriptions/api.github.com/api.github.com.json,
components/schemas), reduced to what matters for a client: the keys the description requires,
and for each key it names, the JSON types it allows ("null" only where the description says
nullable). A key not listed in `required` may be absent; when present it must have an allowed
type, so `"in_reply_to_id": null` (integer, not nullable) is a violation, as it is on GitHub,
which omits the key on a thread's root comment.

`check(endpoint, body)` returns the violations (empty: conforms). tests/github/test_fake_schemas.py
drives every endpoint of the fake through it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

_JSON = {"string": str, "integer": int, "boolean": bool, "object": dict, "array": list,
         "null": type(None), "number": (int, float)}


@dataclass(frozen=True)
class Schema:
    required: tuple[str, ...]
    types: dict[str, tuple[str, ...]]
    items: dict[str, Schema] = field(default_factory=dict)  # key -> schema of each array item / object


def _t(spec: str) -> tuple[str, ...]:
    return tuple(spec.split("|"))


def _schema(required: str, types: dict[str, str], **items: Schema) -> Schema:
    return Schema(tuple(required.split()), {k: _t(v) for k, v in types.items()}, items)


SIMPLE_USER = _schema(
    "avatar_url events_url followers_url following_url gists_url gravatar_id html_url id node_id "
    "login organizations_url received_events_url repos_url site_admin starred_url "
    "subscriptions_url type url",
    {"login": "string", "id": "integer", "gravatar_id": "string|null", "type": "string",
     "site_admin": "boolean"})
LABEL = _schema("id node_id url name description color default",
                {"id": "integer", "name": "string", "description": "string|null",
                 "color": "string", "default": "boolean"})
REVIEW_COMMENT = _schema(
    "url id node_id pull_request_review_id diff_hunk path commit_id original_commit_id user body "
    "created_at updated_at html_url pull_request_url author_association _links",
    {"id": "integer", "pull_request_review_id": "integer|null", "path": "string",
     "position": "integer", "original_position": "integer", "in_reply_to_id": "integer",
     "user": "object", "body": "string", "line": "integer", "original_line": "integer",
     "start_line": "integer|null", "original_start_line": "integer|null",
     "start_side": "string|null", "side": "string", "subject_type": "string"},
    user=SIMPLE_USER)
ISSUE_COMMENT = _schema(
    "id node_id html_url issue_url user url created_at updated_at author_association",
    {"id": "integer", "body": "string", "user": "object|null", "html_url": "string"})
PULL = _schema(
    "_links assignee labels base body closed_at comments_url commits_url created_at diff_url head "
    "html_url id node_id issue_url merge_commit_sha merged_at milestone number patch_url "
    "review_comment_url review_comments_url statuses_url state locked title updated_at url user "
    "author_association auto_merge",
    {"number": "integer", "state": "string", "draft": "boolean", "body": "string|null",
     "merged_at": "string|null", "closed_at": "string|null", "head": "object", "base": "object",
     "labels": "array", "merged": "boolean", "user": "object|null"},
    labels=LABEL)
PULL_FULL = Schema(PULL.required + ("additions", "changed_files", "comments", "commits",
                                    "deletions", "mergeable", "mergeable_state", "merged",
                                    "maintainer_can_modify", "merged_by", "review_comments"),
                   PULL.types, PULL.items)
PULL_FILE = _schema("additions blob_url changes contents_url deletions filename raw_url sha status",
                    {"filename": "string", "status": "string", "patch": "string",
                     "additions": "integer"})
CHECK_RUN = _schema(
    "id head_sha node_id external_id url html_url details_url status conclusion started_at "
    "completed_at output name check_suite app pull_requests",
    {"id": "integer", "status": "string", "conclusion": "string|null",
     "details_url": "string|null", "check_suite": "object|null", "app": "object|null",
     "started_at": "string|null", "completed_at": "string|null"})
STATUS = _schema("description id node_id state context target_url avatar_url url created_at updated_at",
                 {"id": "integer", "state": "string", "context": "string",
                  "description": "string|null", "target_url": "string|null",
                  "avatar_url": "string|null", "required": "boolean|null"})
COMBINED_STATUS = _schema("state sha total_count statuses repository commit_url url",
                          {"state": "string", "total_count": "integer", "statuses": "array"},
                          statuses=STATUS)
STEP = _schema("name status conclusion number", {"name": "string", "status": "string",
                                                 "conclusion": "string|null", "number": "integer"})
JOB = _schema(
    "id run_id run_url node_id head_sha url html_url status conclusion started_at completed_at name "
    "check_run_url labels runner_id runner_name runner_group_id runner_group_name workflow_name "
    "head_branch created_at",
    {"id": "integer", "run_id": "integer", "run_attempt": "integer", "status": "string",
     "conclusion": "string|null", "completed_at": "string|null", "html_url": "string|null",
     "steps": "array", "runner_name": "string|null", "workflow_name": "string|null",
     "head_branch": "string|null"},
    steps=STEP)
WORKFLOW_RUN = _schema(
    "id node_id head_branch head_sha path run_number event status conclusion workflow_id url "
    "html_url pull_requests created_at updated_at jobs_url logs_url check_suite_url artifacts_url "
    "cancel_url rerun_url workflow_url head_commit repository head_repository display_title",
    {"id": "integer", "name": "string|null", "head_branch": "string|null", "head_sha": "string",
     "status": "string|null", "conclusion": "string|null", "run_attempt": "integer",
     "check_suite_id": "integer", "pull_requests": "array|null", "display_title": "string",
     "event": "string"})
WORKFLOW = _schema("id node_id name path state created_at updated_at url html_url badge_url",
                   {"id": "integer", "name": "string", "path": "string", "state": "string"})
ARTIFACT = _schema("id node_id name size_in_bytes url archive_download_url expired created_at "
                   "expires_at updated_at",
                   {"id": "integer", "name": "string", "expired": "boolean"})
BASIC_ERROR = _schema("", {"message": "string", "documentation_url": "string", "status": "string"})


STATUS_CHECK_CONFIG = _schema("context app_id", {"context": "string", "app_id": "integer|null"})
REQUIRED_STATUS_CHECKS = _schema(  # protected-branch-required-status-check
    "contexts checks", {"url": "string", "enforcement_level": "string", "contexts": "array",
                        "checks": "array", "contexts_url": "string", "strict": "boolean"},
    checks=STATUS_CHECK_CONFIG)
RULE_STATUS_CHECK = _schema("context", {"context": "string", "integration_id": "integer"})
RULE_PARAMETERS = _schema(  # repository-rule-required-status-checks.parameters
    "required_status_checks strict_required_status_checks_policy",
    {"required_status_checks": "array", "strict_required_status_checks_policy": "boolean",
     "do_not_enforce_on_create": "boolean"}, required_status_checks=RULE_STATUS_CHECK)
BRANCH_RULE = _schema(  # repository-rule-detailed, the required_status_checks variant
    "type", {"type": "string", "parameters": "object", "ruleset_source_type": "string",
             "ruleset_source": "string", "ruleset_id": "integer"}, parameters=RULE_PARAMETERS)


def _listing(key: str, item: Schema) -> Schema:
    return _schema(f"total_count {key}", {"total_count": "integer", key: "array"}, **{key: item})


ENDPOINTS: dict[str, tuple[str, Schema]] = {
    # name: (kind, schema); kind "object", "array" (a bare list of the schema) or "empty"
    "pulls.get": ("object", PULL_FULL),
    "pulls.list": ("array", PULL),
    "pulls.list-files": ("array", PULL_FILE),
    "pulls.list-review-comments": ("array", REVIEW_COMMENT),
    "pulls.get-review-comment": ("object", REVIEW_COMMENT),
    "issues.list-comments": ("array", ISSUE_COMMENT),
    "issues.create-comment": ("object", ISSUE_COMMENT),
    "issues.list-labels-on-issue": ("array", LABEL),
    "issues.add-labels": ("array", LABEL),
    "checks.list-for-ref": ("object", _listing("check_runs", CHECK_RUN)),
    "repos.get-combined-status-for-ref": ("object", COMBINED_STATUS),
    "actions.list-workflow-runs-for-repo": ("object", _listing("workflow_runs", WORKFLOW_RUN)),
    "actions.list-workflow-runs": ("object", _listing("workflow_runs", WORKFLOW_RUN)),
    "actions.get-workflow-run": ("object", WORKFLOW_RUN),
    "actions.list-jobs-for-workflow-run": ("object", _listing("jobs", JOB)),
    "actions.get-job-for-workflow-run": ("object", JOB),
    "actions.list-repo-workflows": ("object", _listing("workflows", WORKFLOW)),
    "actions.list-workflow-run-artifacts": ("object", _listing("artifacts", ARTIFACT)),
    "actions.re-run-workflow-failed-jobs": ("empty", _schema("", {})),
    "repos.get-status-checks-protection": ("object", REQUIRED_STATUS_CHECKS),
    "repos.get-branch-rules": ("array", BRANCH_RULE),
    "error": ("object", BASIC_ERROR),
}


def _violations(body: Any, schema: Schema, where: str) -> list[str]:
    if not isinstance(body, dict):
        return [f"{where}: expected an object, got {type(body).__name__}"]
    out = [f"{where}: required key {k!r} missing" for k in schema.required if k not in body]
    for key, allowed in schema.types.items():
        if key not in body:
            continue
        value = body[key]
        ok = any(isinstance(value, _JSON[t]) and not (t in ("integer", "number") and isinstance(value, bool))
                 for t in allowed)
        if not ok:
            out.append(f"{where}.{key}: {value!r} is not {'|'.join(allowed)}")
    for key, sub in schema.items.items():
        value = body.get(key)
        for i, item in enumerate(value if isinstance(value, list) else [value] if value else []):
            out += _violations(item, sub, f"{where}.{key}[{i}]")
    return out


def check(endpoint: str, body: Any) -> list[str]:
    """The ways `body` breaks the published description of `endpoint` (empty: none)."""
    kind, schema = ENDPOINTS[endpoint]
    if kind == "empty":
        return [] if body in ({}, None) else [f"{endpoint}: expected an empty object, got {body!r}"]
    if kind == "array":
        if not isinstance(body, list):
            return [f"{endpoint}: expected an array"]
        return [v for i, item in enumerate(body) for v in _violations(item, schema, f"{endpoint}[{i}]")]
    return _violations(body, schema, endpoint)
