"""Which settings count as secrets (flow/core/redact.py) and how one is let through."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from flow.core import proc
from flow.core.redact import redact


@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "AWS_ACCESS_KEY_ID",
                                  "AZURE_CREDENTIALS", "GOOGLE_APPLICATION_CREDENTIALS",
                                  "MYSQL_PASSWD", "ssh_private_key"])
def test_key_and_credential_settings_never_reach_a_child(
        tmp_path: Path, name: str) -> None:
    """A *KEY* / *CREDENTIAL* / *PASSWD* setting is kept out of a child's environment."""
    env = {"PATH": os.environ["PATH"], name: "sentinel-value-123", "PLAIN": "visible"}
    res = proc.run(["env"], log=tmp_path / "l.log", env=env)
    seen = dict(line.split("=", 1) for line in res.output.splitlines() if "=" in line)
    assert {"PLAIN": "visible"} == {k: v for k, v in seen.items() if k in env and k != "PATH"}


def test_a_key_setting_is_let_through_by_a_pattern_in_pass_env(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """ORCHESTRATOR_PASS_ENV lets a named secret through, and a pattern in it (AWS_*) too."""
    monkeypatch.setenv(proc.PASS_ENV, "GPG_KEY, AWS_*")
    env = {"PATH": os.environ["PATH"], "GPG_KEY": "A0B1C2D3", "AWS_ACCESS_KEY_ID": "id-value",
           "OPENAI_API_KEY": "kept-out-value"}
    res = proc.run(["env"], log=tmp_path / "l.log", env=env)
    seen = dict(line.split("=", 1) for line in res.output.splitlines() if "=" in line)
    assert {"GPG_KEY", "AWS_ACCESS_KEY_ID"} == {k for k in seen if k in env and k != "PATH"}


def test_the_value_of_a_key_setting_is_masked_in_text() -> None:
    """redact masks the value of an *_API_KEY setting wherever it shows in text."""
    env = {"ANTHROPIC_API_KEY": "sk-ant-0123456789abcdef"}
    assert "key: *** end" == redact("key: sk-ant-0123456789abcdef end", env)


def test_a_secret_set_or_changed_in_this_process_is_masked_on_the_next_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Which names are secrets is remembered, their values never: a secret setting made, or
    changed, after earlier writes is masked in the next one, the old value no longer, and a
    name ORCHESTRATOR_SECRET_ENV adds counts from then on too."""
    from flow.core import jsonio
    from flow.core.redact import SECRETS_ENV

    first, second, third = "first-value-0123", "second-value-4567", "third-value-89ab"
    # a first write: the names now known
    said = [jsonio.dumps({"v": [first, second, third]}, indent=False).decode()]
    monkeypatch.setenv("DEPLOY_TOKEN", first)
    said.append(jsonio.dumps({"v": [first, second]}, indent=False).decode())
    monkeypatch.setenv("DEPLOY_TOKEN", second)
    said.append(jsonio.dumps({"v": [first, second]}, indent=False).decode())
    monkeypatch.setenv("BUILD_STAMP", third)
    said.append(jsonio.dumps({"v": third}, indent=False).decode())
    monkeypatch.setenv(SECRETS_ENV, "BUILD_*")
    said.append(jsonio.dumps({"v": third}, indent=False).decode())
    assert [f'{{"v":["{first}","{second}","{third}"]}}', f'{{"v":["***","{second}"]}}',
            f'{{"v":["{first}","***"]}}', f'{{"v":"{third}"}}', '{"v":"***"}'] == said
