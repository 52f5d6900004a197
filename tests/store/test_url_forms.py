"""A store value is read as a URL by its scheme in any case, SQLAlchemy's ``+psycopg`` suffix
included, and never taken for a folder: a PostgreSQL URL in capitals works against a real
server, any other scheme or driver is refused, and a credential (in the user part or a
fragment) appears in no byte printed and no folder name made."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.contract.driver import ROOT, SCRIPT
from tests.contract.scenarios import TOY
from workspace.pgerrors import check_url, mask_url

SECRET = "Pw-9f3kQ-unseen"


def _run(cwd: Path, argv: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """One call as its own process in ``cwd`` (no --workspace: a value taken for a folder
    would be made there), with the toy workflow plugged in."""
    full = {**os.environ, "PYTHONPATH": str(ROOT), "ORCHESTRATOR_PLUGINS": TOY.env[
        "ORCHESTRATOR_PLUGINS"], **env}
    full.pop("ORCHESTRATOR_WORKSPACE", None)
    proc = subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True,
                          cwd=cwd, env=full, timeout=120, stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout, proc.stderr


def _names_and_bytes(root: Path) -> str:
    """Every path name under ``root`` and every file's bytes, as one text to search."""
    out = []
    for path in root.rglob("*"):
        out.append(str(path))
        if path.is_file() and not path.is_symlink():
            out.append(path.read_bytes().decode("utf-8", "replace"))
    return "\n".join(out)


REFUSED = [  # (value, what the refusal says)
    (f"POSTGRESQL://u:{SECRET}@127.0.0.1:5/db", "carries a password"),
    (f"PostgreSQL+Psycopg://u:{SECRET}@127.0.0.1:5/db", "carries a password"),
    (f"postgresql+psycopg://u:{SECRET}@127.0.0.1:5/db", "carries a password"),
    (f"postgresql+asyncpg://u:{SECRET}@127.0.0.1:5/db", "names the driver 'asyncpg'"),
    (f"MySQL://u:{SECRET}@127.0.0.1/db", "is a mysql:// URL"),
    (f"postgresql://u@127.0.0.1:5/db#password={SECRET}", "has a fragment"),
    (f"Postgres://u@127.0.0.1:5/db?sslmode=disable#{SECRET}", "has a fragment"),
]


@pytest.mark.parametrize("value,says", REFUSED)
@pytest.mark.parametrize("how", ["flag", "env"])
def test_other_schemes_drivers_and_fragments_are_refused_and_the_secret_never_shown(
        tmp_path: Path, value: str, says: str, how: str) -> None:
    """``--store`` or ``ORCHESTRATOR_STORE``, with ``PGPASSWORD`` set to the same secret:
    ``bad_store`` (exit 2) saying why; nothing made under the working folder, and the
    secret is in no byte of stdout or stderr."""
    env = {"PGPASSWORD": SECRET}
    argv = [*TOY.start, "--json"]
    if how == "env":
        env["ORCHESTRATOR_STORE"] = value
    else:
        argv = ["--store", value, *argv]
    code, out, err = _run(tmp_path, argv, env)
    spec = json.loads(out)
    assert (2, "bad_store") == (code, spec["error"]["code"]), out + err
    assert says in spec["error"]["message"]
    assert SECRET not in out + err
    assert "Traceback" not in err
    assert [] == list(tmp_path.iterdir())


@pytest.mark.parametrize("scheme", ["POSTGRESQL", "Postgres", "postgresql+psycopg",
                                    "POSTGRES+PSYCOPG"])
def test_a_postgresql_url_in_any_case_or_with_psycopg_reaches_the_real_server(
        tmp_path: Path, pg_url: str, scheme: str) -> None:
    """Through ``ORCHESTRATOR_STORE`` (no ``--workspace``): the flow is started in the
    database, its printed commands carry the URL libpq takes (``postgresql://``), and no
    folder is named after the URL."""
    value = scheme + pg_url[len("postgresql"):]
    code, out, err = _run(tmp_path, [*TOY.start, "--json"], {"ORCHESTRATOR_STORE": value})
    spec = json.loads(out)
    assert 0 == code, out + err
    assert ("toy/alpha", "need_agent") == (spec["flow_id"], spec["status"]), spec
    import psycopg

    with psycopg.connect(pg_url) as conn:
        flows = [r[0] for r in conn.execute("SELECT flow_id FROM flows").fetchall()]
    assert [spec["flow_id"]] == flows
    printed = json.dumps(spec)
    assert pg_url in printed and value not in printed
    assert not [p for p in tmp_path.rglob("*") if ":" in p.name or "@" in p.name]


def test_a_server_that_refuses_never_echoes_the_password_of_the_environment(
        tmp_path: Path, pg_cluster: object) -> None:
    """A connection that fails (no such database) with ``PGPASSWORD`` set: the error is
    printed, the password is not, and the workspace holds it in no file or name."""
    url = pg_cluster.url("no_such_db_" + str(os.getpid()))  # type: ignore[attr-defined]
    code, out, err = _run(tmp_path, ["--store", "POSTGRESQL" + url[len("postgresql"):],
                                     *TOY.start, "--json"], {"PGPASSWORD": SECRET})
    spec = json.loads(out)
    assert (4, "store_unavailable") == (code, spec["error"]["code"]), out + err
    assert SECRET not in out + err + _names_and_bytes(tmp_path)


def test_masking_covers_every_scheme_case_and_the_fragment() -> None:
    """The mask hides the user part's password whatever the scheme's case, and the whole
    fragment; a URL without a credential keeps every other setting."""
    assert "postgresql://u:***@h/db" == mask_url(f"POSTGRESQL://u:{SECRET}@h/db")
    assert SECRET not in mask_url(f"postgresql://u@h/db#password={SECRET}")
    assert SECRET not in mask_url(f"redis://u:{SECRET}@h/0")
    assert SECRET not in mask_url(f"a folder named x://u:{SECRET}@h")
    assert "postgresql://u@h:5433/db?sslmode=require" == check_url(
        "PostgreSQL+psycopg://u@h:5433/db?sslmode=require")


@pytest.mark.parametrize("value", [REFUSED[0][0], REFUSED[3][0], REFUSED[5][0]])
@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_serve_and_the_mcp_server_refuse_them_before_they_start(
        tmp_path: Path, value: str, command: str) -> None:
    """``serve`` (whose JSON names the store) and ``mcp`` stop at once with ``bad_store``;
    the secret is in nothing they print."""
    code, out, err = _run(tmp_path, [command, "--workspace", str(tmp_path / "ws"),
                                     "--store", value], {"PGPASSWORD": SECRET})
    printed = out.strip() or err.strip().splitlines()[-1]
    assert (2, "bad_store") == (code, json.loads(printed)["error"]["code"]), out + err
    assert SECRET not in out + err and "Traceback" not in err


@pytest.mark.parametrize("value", [f"postgresql://u:ab#{SECRET}@127.0.0.1/db",
                                   f"postgresql://u:{SECRET}/x?y@127.0.0.1:5/db",
                                   f"POSTGRES://u:{SECRET[:3]}#{SECRET[3:]}@h/db"])
def test_a_password_with_unencoded_url_characters_is_refused_and_never_shown(
        tmp_path: Path, value: str) -> None:
    """A ``#``, ``?`` or ``/`` in the password ends the URL's authority for a parser (which
    then reads part of it as a port): the refusal shows none of it, not even a piece."""
    code, out, err = _run(tmp_path, ["--store", value, *TOY.start, "--json"], {})
    spec = json.loads(out)
    assert (2, "bad_store") == (code, spec["error"]["code"]), out + err
    for piece in (SECRET, SECRET[:3], SECRET[3:], "ab#"):
        assert piece not in out + err, piece
    assert [] == list(tmp_path.iterdir())
