"""A GitHub token never shows in any message: stray whitespace is stripped, a token that cannot
be a header is refused without its value, the token file is read bounded and non-blocking."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from flow.core.redact import redact, redact_tree
from tests.contract.driver import Driver
from tests.fakegithub import FakeGitHub

START = ["--ci-check", "--repo", "o/r", "--pr-number", "1"]
HEAD, BASE = "a" * 40, "b" * 40


def _pr(fake: FakeGitHub) -> None:
    repo = fake.repo("o/r")
    repo.add_pull(1, "feature", HEAD, merge_base_sha=BASE)


def test_a_token_with_a_stray_carriage_return_is_stripped_and_works(
        fake_github: FakeGitHub, tmp_path: Path) -> None:
    """GITHUB_TOKEN=$'<token>\\r' is used stripped: the call talks to GitHub and is no error."""
    _pr(fake_github)
    call = Driver(tmp_path / "ws").call(START, {"GITHUB_TOKEN": fake_github.token + "\r"})
    assert call.spec is not None and (0, True) == (call.code, call.spec["status"] != "error"), \
        call.spec
    assert fake_github.count(r"/pulls/1$") >= 1


@pytest.mark.parametrize("token", ["s3cretvalue0123\n456789", "s3cretvalue0123\r456789xyz",
                                   "ghp_" + "A" * 36 + "\x1b[0m", "s3cret value0123456789"])
def test_a_token_that_cannot_be_a_header_is_refused_without_its_value(
        fake_github: FakeGitHub, tmp_path: Path, token: str) -> None:
    """A token with a control character or a space inside: github_bad_token, exit 2, and no
    piece of it on stdout, stderr or in any file of the workspace."""
    _pr(fake_github)
    call = Driver(tmp_path / "ws").call(START, {"GITHUB_TOKEN": token})
    assert call.spec is not None
    assert (2, "github_bad_token") == (call.code, call.spec["error"]["code"])
    pieces = [p for p in token.replace("\x1b", " ").split() if len(p) >= 6]
    text = json.dumps(call.spec) + call.stderr
    assert [] == [p for p in pieces if p in text]
    for path in (tmp_path / "ws").rglob("*"):
        if path.is_file():
            assert [] == [p for p in pieces if p.encode() in path.read_bytes()], path


@pytest.mark.parametrize("kind", ["/dev/zero", "fifo", "folder", "huge"])
def test_the_token_file_is_read_bounded_and_never_blocks(
        fake_github: FakeGitHub, tmp_path: Path, kind: str) -> None:
    """ORCHESTRATOR_GITHUB_TOKEN_FILE naming /dev/zero, a FIFO, a folder or a 1 MB file is
    refused at once (github_bad_setting, exit 2) saying what it is, not read forever."""
    _pr(fake_github)
    path = tmp_path / "tok"
    if kind == "/dev/zero":
        path = Path("/dev/zero")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    else:
        path.write_text("x" * 1_000_000)
    began = time.monotonic()
    call = Driver(tmp_path / "ws").call(START, {"GITHUB_TOKEN": "", "GH_TOKEN": "",
                                                "ORCHESTRATOR_GITHUB_TOKEN_FILE": str(path)})
    assert call.spec is not None and time.monotonic() - began < 30
    said = {"/dev/zero": "a character device", "fifo": "a FIFO", "folder": "a directory",
            "huge": "more than the limit"}[kind]
    assert (2, "github_bad_setting", True) == (
        call.code, call.spec["error"]["code"], said in call.spec["error"]["message"])


def test_redact_masks_a_secret_as_repr_quotes_it() -> None:
    """A secret value holding a \\r is masked where an error message quotes it with repr."""
    env = {"GITHUB_TOKEN": "abcdefgh12345678\r"}
    message = f"Invalid return character in header value: {'token ' + env['GITHUB_TOKEN']!r}"
    assert "Invalid return character in header value: 'token ***'" == redact(message, env)
    assert {"error": {"message": "x *** y"}, "n": [1, "***"]} == redact_tree(
        {"error": {"message": "x abcdefgh12345678 y"}, "n": [1, "abcdefgh12345678\r"]}, env)


def test_a_bug_message_and_its_traceback_are_masked(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """An unexpected exception quoting a secret setting's value: the printed bug object and
    the traceback on stderr show *** instead."""
    import orchestrator

    monkeypatch.setenv("OPENAI_API_KEY", "sk-live-0123456789abcdef")
    try:
        raise ValueError("bad header 'Bearer sk-live-0123456789abcdef'")
    except ValueError as exc:
        spec, code = orchestrator._bug(exc, Path("/tmp"), "claude")
    err = capsys.readouterr().err
    assert (1, False, False) == (code, "sk-live" in json.dumps(spec), "sk-live" in err)
    assert "ValueError: bad header 'Bearer ***'" == spec["error"]["message"]
