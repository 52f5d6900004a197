"""No credential of a connection string is ever accepted in the store value: each form is
refused (``bad_store``, exit 2) with the secret masked, before anything is written, by every
front end (the CLI, ``serve``, the MCP server); a libpq keyword string is a connection string,
never a folder name."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contract.driver import ROOT, SCRIPT, Driver
from tests.contract.scenarios import TOY
from workspace.pgerrors import check_url, mask_url

SECRET = "Zq7-hunter2-pw"
FORMS = [
    f"postgresql://u:{SECRET}@127.0.0.1:5/db",
    f"postgresql://u@127.0.0.1:5432/db?password={SECRET}",
    f"postgresql://u@127.0.0.1:5432/db?sslmode=require&sslpassword={SECRET}",
    f"postgres://u@127.0.0.1/db?pass%77ord={SECRET}",
    f"host=127.0.0.1 password={SECRET} dbname=d",
    f"host=127.0.0.1 port=5432 password='{SECRET} x' dbname=d user=u",
    f"  sslpassword={SECRET} host=127.0.0.1",
]


@pytest.mark.parametrize("value", FORMS)
@pytest.mark.parametrize("how", ["flag", "env"])
def test_every_credential_form_is_refused_masked_and_nothing_written(
        tmp_path: Path, value: str, how: str) -> None:
    """From ``--store`` or ``ORCHESTRATOR_STORE``: refused before any file or row exists, so
    no printed command, crontab line, lock or spec row can carry the secret."""
    ws = tmp_path / "ws"
    env = {"ORCHESTRATOR_PLUGINS": TOY.env.get("ORCHESTRATOR_PLUGINS", "tests.contract.toyflow")}
    if how == "env":
        env["ORCHESTRATOR_STORE"] = value
        call = Driver(ws, env).call(TOY.start)
    else:
        call = Driver(ws, env).call(["--store", value, *TOY.start])
    assert call.spec is not None, call.stderr
    assert (2, "bad_store") == (call.code, call.spec["error"]["code"])
    assert SECRET not in json.dumps(call.spec) + call.stderr
    assert "***" in call.spec["error"]["message"]
    assert "PGPASSWORD" in call.spec["error"]["hint"]
    assert not ws.exists() or [] == list(ws.rglob("*"))
    assert [] == [p for p in tmp_path.iterdir() if p.name != "ws"]  # no folder named after it


def test_a_keyword_string_without_a_password_is_refused_with_its_url(tmp_path: Path) -> None:
    """A keyword string is not taken for a folder: the refusal gives the equivalent URL."""
    call = Driver(tmp_path / "ws").call(["--store", "host=db.example port=5433 dbname=orch "
                                         "user=ci sslmode=require", "status"])
    assert (2, "bad_store") == (call.code, call.spec["error"]["code"])
    assert "postgresql://ci@db.example:5433/orch?sslmode=require" in call.spec["error"]["hint"]


@pytest.mark.parametrize("value", FORMS[1:5])
def test_serve_and_the_mcp_server_refuse_them_too(tmp_path: Path, value: str) -> None:
    """``serve`` (its JSON names the store) and ``mcp`` stop at once with the one error."""
    for command in ("serve", "mcp"):
        proc = subprocess.run([sys.executable, str(SCRIPT), command, "--workspace",
                               str(tmp_path / "ws"), "--store", value], capture_output=True,
                              text=True, timeout=60, cwd=ROOT, stdin=subprocess.DEVNULL)
        out = proc.stdout + proc.stderr
        err = json.loads(proc.stdout.strip() or proc.stderr.strip().splitlines()[-1])
        assert (2, "bad_store") == (proc.returncode, err["error"]["code"]), out
        assert SECRET not in out and "Traceback" not in out


def test_a_good_url_passes_unchanged_and_masking_keeps_other_settings() -> None:
    """A URL without a credential is used as given; a mask hides only the secrets."""
    url = "postgres:///orch?host=/run/postgresql&sslmode=disable"
    assert url == check_url(url) == mask_url(url)
    assert ("postgresql://u:***@h/db?sslmode=require&password=***"
            == mask_url("postgresql://u:a@h/db?sslmode=require&password=b"))
