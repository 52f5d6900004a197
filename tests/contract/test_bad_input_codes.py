"""Input that used to end as a crash (``bug``, exit 1) is a clear refusal with exit 2: a
GitHub token holding U+2028, ``ORCHESTRATOR_PLUGINS`` naming a missing module or one without
a workflow, a ``--pr-number`` past what GitHub numbers (CLI and MCP alike)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.contract.driver import Driver
from tests.fakegithub import FakeGitHub
from tests.mcp.client import Mcp, drive

START = ["ci-check", "--repo", "o/r", "--pr-number", "1"]


def _github(fake: FakeGitHub, token: str | None = None) -> dict[str, str]:
    fake.repo("o/r").add_pull(1, "feature", "a" * 40, merge_base_sha="b" * 40)
    return {"ORCHESTRATOR_GITHUB_API": fake.base_url, "GITHUB_TOKEN": token or fake.token,
            "ORCHESTRATOR_GITHUB_BACKOFF": "0.01"}


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\u00a0", "\u00e9"])
def test_a_token_with_a_non_ascii_character_is_refused(fake_github: FakeGitHub,
                                                       tmp_path: Path, sep: str) -> None:
    """Through the CLI: github_bad_token, exit 2, no piece of the token shown."""
    token = f"s3cretvalue0123{sep}456789xyz"
    call = Driver(tmp_path / "ws").call(START, _github(fake_github, token))
    assert call.spec is not None, call.stderr
    assert (2, "github_bad_token") == (call.code, call.spec["error"]["code"])
    text = json.dumps(call.spec) + call.stderr
    assert "s3cretvalue0123" not in text and "456789xyz" not in text


def test_the_mcp_server_refuses_that_token_too(fake_github: FakeGitHub, tmp_path: Path) -> None:
    """Over MCP: the start tool answers the same error, no crash."""
    env = _github(fake_github, "s3cretvalue0123\u2028456789xyz")
    got: list[tuple[dict, bool]] = []

    async def body(mcp: Mcp) -> None:
        got.append(await mcp.call("start", {"args": {"workflow": "ci", "repo": "o/r",
                                                     "pr_number": 1}}))

    drive(tmp_path, body, env)
    spec, failed = got[0]
    assert (True, "github_bad_token") == (failed, spec["error"]["code"])
    assert "s3cretvalue0123" not in json.dumps(spec)


@pytest.mark.parametrize(("plugins", "words"), [
    ("no_such_plugin_module", "no module 'no_such_plugin_module'"),
    ("tests.contract.toyflow,tests.contract.nosuch", "no module 'tests.contract.nosuch'"),
    ("json", "'json' has no WORKFLOW"),
])
def test_a_plugin_setting_naming_no_workflow_module_is_a_bad_setting(
        tmp_path: Path, plugins: str, words: str) -> None:
    """bad_setting (exit 2, like every bad setting) naming the module; nothing started."""
    call = Driver(tmp_path / "ws", {"ORCHESTRATOR_PLUGINS": plugins}).call(
        ["start", "toy", "x"])
    assert call.spec is not None, call.stderr
    assert (2, "bad_setting") == (call.code, call.spec["error"]["code"])
    assert words in call.spec["error"]["message"] and "Traceback" not in call.stderr
    assert not (tmp_path / "ws").exists() or [] == list((tmp_path / "ws").rglob("*state*"))


@pytest.mark.parametrize("number", ["99999999999999999999999", "2147483648", "0", "-3"])
def test_a_pr_number_github_cannot_have_is_bad_input(fake_github: FakeGitHub, tmp_path: Path,
                                                     number: str) -> None:
    """Past 2**31 - 1, zero or negative: bad_input before any request."""
    call = Driver(tmp_path / "ws").call(["ci-check", "--repo", "o/r", "--pr-number", number],
                                        _github(fake_github))
    assert call.spec is not None, call.stderr
    assert (2, "bad_input") == (call.code, call.spec["error"]["code"])
    assert "2147483647" in call.spec["error"]["hint"]


def test_the_mcp_start_refuses_that_pr_number_too(fake_github: FakeGitHub,
                                                  tmp_path: Path) -> None:
    """Over MCP the same refusal comes back as the start tool's error."""
    got: list[tuple[dict, bool]] = []

    async def body(mcp: Mcp) -> None:
        got.append(await mcp.call("start", {"args": {"workflow": "ci", "repo": "o/r",
                                                     "pr_number": 99999999999999999999999}}))

    drive(tmp_path, body, _github(fake_github))
    spec, failed = got[0]
    assert (True, "bad_input") == (failed, spec["error"]["code"]), spec
