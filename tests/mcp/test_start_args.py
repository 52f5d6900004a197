"""Each workflow's start arguments reach that workflow as the CLI's flags would; bad ones and
an unloadable state come back as tool errors that change nothing."""

from __future__ import annotations

from pathlib import Path

from tests.mcp.client import Mcp, drive

CASES = [  # (start args, what the workflow's refusal says: proof the flag reached it)
    ({"workflow": "ci", "repo": "not-a-repo", "pr_number": 1}, "--repo 'not-a-repo' is not"),
    ({"workflow": "ci-targeted", "base": "HEAD", "repo": "o/r", "pr_number": 1,
      "repo_dir": "/"}, "'/' is not inside a git repository"),
    ({"workflow": "review-queue", "repo": "o/r"}, "no review queue at"),
    ({"workflow": "ingest", "apply": "/nonexistent/findings.md"}, "is not a findings file"),
    ({"workflow": "ingest", "repo": "bad"}, "--repo 'bad' is not a GitHub repository as owner/name"),
    ({"workflow": "reproduce", "command": "pytest -k x.py", "ci_commit": "zz"},
     "--ci-commit 'zz' is not a commit sha"),
    ({"workflow": "reproduce", "command": "pytest x.py", "profile": "nope"},
     "no reproduce profile 'nope'"),
    ({"workflow": "refactor", "file": "test/nope.py", "pytorch_dir": "/"},
     "test file '/test/nope.py' does not exist"),
]


def test_start_args_reach_each_workflow_and_a_refused_start_leaves_nothing(
        tmp_path: Path) -> None:
    """Every case: a tool error bad_input quoting the flag's value; no flow folder is left."""
    async def body(mcp: Mcp) -> None:
        for args, says in CASES:
            spec, failed = await mcp.call("start", {"args": args})
            assert (True, "bad_input") == (failed, spec["error"]["code"]), (args, spec)
            assert says in spec["error"]["message"] and spec["error"]["hint"], spec

    drive(tmp_path, body)
    assert [] == [p for p in tmp_path.rglob("*") if p.is_dir()]


def test_an_unloadable_state_is_a_tool_error_and_is_kept(tmp_path: Path) -> None:
    """A corrupt state: resume and feed answer state_unloadable; the file is kept."""
    folder = tmp_path / "reproduce" / "0123456789ab"
    folder.mkdir(parents=True)
    (folder / "flow_state.json").write_text('{"workflow": "reproduce", "tasks": [')

    async def body(mcp: Mcp) -> None:
        for tool, args in (("resume", {}), ("feed", {"task_id": "t", "result": {}})):
            spec, failed = await mcp.call(tool, {"flow_id": "reproduce/0123456789ab", **args})
            assert (True, "state_unloadable") == (failed, spec["error"]["code"]), spec

    drive(tmp_path, body)
    assert '{"workflow": "reproduce", "tasks": [' == (folder / "flow_state.json").read_text()
