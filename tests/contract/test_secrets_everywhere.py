"""Secrets never leave, whatever carries them: planted in the orchestrator's environment, in
the run logs a harness feeds (text the flow composes a verdict's blocker from), in a fed
result's fields and in a file a reproducer prints, they are found in no byte the program
printed (stdout, stderr of every call), wrote (the whole workspace: state, audit log,
verdict, report, cached spec, logs) or served (the dashboard's pages over HTTP, the MCP
server's raw replies to ``resources/read`` and ``tools/call``). Every call is a real
``orchestrator.py`` process; the reproduce flow runs a real pytest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from tests.contract.driver import ROOT, SCRIPT
from tests.web.workspace import serving

# The environment's secrets: matched by name (*TOKEN*, *PASSWORD*, *SECRET*, *KEY*), masked
# by value wherever they show. None has a token's shape: only its value gives it away.
ENV = {"GITHUB_TOKEN": "ghtok-planted-0d1e2f3a4b5c", "PGPASSWORD": "pgpass-planted-77aa88bb",
       "MY_SERVICE_SECRET": "svcsecret-planted-31415", "DEPLOY_TOKEN": "deploytok-planted-27182",
       "DB_PASSWORD": "dbpass-planted-16180", "SIGNING_KEY": "signkey-planted-14142",
       "OPENAI_API_KEY": "sk-planted-openai-1732"}
# Secrets known only by their shape (the environment holds none of them).
AWS_ID, AWS_SECRET = "AKIAPLANTEDEXAMPLE77", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTED9QZ"
GHP = "ghp_" + "Pl4nt3dT0k3n" * 3
PAT = "github_pat_11PLANTED0" + "abcdefghij" * 3
BEARER, URL_PASSWORD = "eyJwbGFudGVk.bearer-value_0123", "urlpass-planted-5150"
OPENSSH = ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwPLANTED1",
           "QyNTUxOQAAACBplantedopensshbodylinetwoAAAAAAAAAAAAAAAAAAAAAAAAA2"]
RSA = ["MIIEowIBAAKCAQEAplantedrsabodylineoneAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
       "Proc-Type-free-plantedrsabodylinetwoBBBBBBBBBBBBBBBBBBBBBBBBBBBB"]
EC = "MHcCAQEEIplantedecbodyCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"
ENCRYPTED = "MIIFHDBOBgkqplantedencryptedbodyDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD"
NEEDLES = [*ENV.values(), AWS_ID, AWS_SECRET, GHP, PAT, BEARER, URL_PASSWORD, *OPENSSH, *RSA, EC,
           ENCRYPTED]


def _block(kind: str, *body: str) -> str:
    return "\n".join([f"-----BEGIN {kind}PRIVATE KEY-----", *body,
                      f"-----END {kind}PRIVATE KEY-----"])


# The last six lines of the failed fallback build's log: the blocker quotes them (no line
# says "error", so the flow takes the log's last lines).
BUILD_LOG = "\n".join([
    f"fetching https://builder:{URL_PASSWORD}@pypi.example.invalid/simple as {ENV['GITHUB_TOKEN']}",
    f"aws_secret_access_key = {AWS_SECRET} for {AWS_ID} with {ENV['PGPASSWORD']}",
    f"Authorization: Bearer {BEARER} {GHP} {PAT} {ENV['MY_SERVICE_SECRET']} {ENV['DB_PASSWORD']}",
    _block("OPENSSH ", OPENSSH[0])]) + "\n"
# A result's fields: the harness's agent quotes keys and tokens.
RESULT_FIELDS = {"agent_name": f"{_block('RSA ', *RSA)} {ENV['SIGNING_KEY']}",
                 "agent_id": f"{_block('EC ', EC)} {_block('ENCRYPTED ', ENCRYPTED)} "
                             f"{ENV['OPENAI_API_KEY']} {ENV['DEPLOY_TOKEN']}"}
# A file of the checkout the reproducer prints (a real pytest run, a background job that never
# sees the environment's secrets, reads it): shapes and the environment's values.
LEAK_TEST = '''
from pathlib import Path


def test_prints_what_it_read():
    print(Path(__file__).with_name("planted.txt").read_text())
'''
PLANTED_FILE = "\n".join([_block("", *OPENSSH), f"aws_secret_access_key={AWS_SECRET}",
                          f"curl -H 'Authorization: Bearer {BEARER}' https://u:{URL_PASSWORD}@h/x",
                          GHP, PAT, AWS_ID, *ENV.values()]) + "\n"


class Harness:
    """Runs orchestrator.py calls and keeps every byte they print; the files it writes into
    the workspace itself (logs and feed files) are remembered with the bytes it wrote."""

    def __init__(self, ws: Path, store: str | None = None) -> None:
        self.ws = ws
        self.where = ["--workspace", str(ws), *(["--store", store] if store else [])]
        self.env = {**os.environ, **ENV, "PYTHONPATH": str(ROOT)}
        self.printed: list[tuple[str, bytes]] = []
        self.own: dict[Path, bytes] = {}

    def call(self, *argv: str) -> dict[str, Any]:
        proc = subprocess.run([sys.executable, str(SCRIPT), *self.where, *argv],
                              capture_output=True, env=self.env, timeout=300, cwd="/")
        self.printed += [(f"stdout of {argv}", proc.stdout), (f"stderr of {argv}", proc.stderr)]
        assert 0 == proc.returncode, proc.stdout
        return dict(json.loads(proc.stdout)) if proc.stdout.startswith(b"{") else {}

    def write(self, path: str, text: str) -> None:
        data = text.encode()
        Path(path).write_bytes(data)
        self.own[Path(path)] = data

    def feed_failed_build(self, spec: dict[str, Any], log: str) -> dict[str, Any]:
        assert "need_agent" == spec["status"], spec
        task = spec["tasks"][0]
        self.write(task["log_file"], log)
        self.write(task["feed_file"], json.dumps({"exit_code": 1, "log_path": task["log_file"],
                                                  **RESULT_FIELDS}))
        proc = subprocess.run(task["feed_command"], shell=True, capture_output=True,
                              env=self.env, timeout=300, cwd="/")
        self.printed += [("stdout of the feed", proc.stdout), ("stderr of the feed", proc.stderr)]
        return dict(json.loads(proc.stdout))

    def written(self) -> list[tuple[str, bytes]]:
        """Every file of the workspace the program wrote (a harness file it left as the
        harness wrote it is the harness's, not the program's)."""
        out = []
        for path in sorted(p for p in self.ws.rglob("*") if p.is_file() and not p.is_symlink()):
            data = path.read_bytes()
            if self.own.get(path) != data:
                out.append((str(path), data))
        return out


def _leaks(seen: list[tuple[str, bytes]]) -> list[tuple[str, str]]:
    return [(where, needle) for where, data in seen for needle in NEEDLES
            if needle.encode() in data]


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=60) as answer:
        return bytes(answer.read())


def _mcp(ws: Path, env: dict[str, str], requests: list[dict[str, Any]]) -> list[bytes]:
    """The raw lines the MCP server writes for ``requests`` (after the handshake)."""
    hello = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "scan", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "mcp", "--workspace", str(ws)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    lines: list[bytes] = []
    try:
        proc.stdin.write(json.dumps(hello[0]).encode() + b"\n")
        proc.stdin.flush()
        lines.append(proc.stdout.readline())
        for message in [hello[1], *requests]:
            proc.stdin.write(json.dumps(message).encode() + b"\n")
            proc.stdin.flush()
            if "id" in message:
                lines.append(proc.stdout.readline())  # a hang fails by the test's timeout
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert proc.stderr is not None
    lines.append(proc.stderr.read())
    return lines


def test_no_secret_leaves_by_any_door(tmp_path: Path) -> None:
    """A reproduce flow whose fallback build log holds every kind of secret ends CANNOT_VERIFY
    with a blocker that keeps the context (``Authorization: Bearer ***``, ``builder:***@``,
    the key's BEGIN/END lines) and no secret; then status, resume, the dashboard and MCP
    are asked about it, and no byte anywhere holds one."""
    calc = Path(shutil.copytree(ROOT / "examples" / "calc", tmp_path / "calc"))
    (calc / "tests" / "test_leak.py").write_text(LEAK_TEST)
    (calc / "tests" / "planted.txt").write_text(PLANTED_FILE)
    ws = tmp_path / "ws"
    h = Harness(ws)
    spec = h.call("reproduce", "--profile", "local", "--source-dir", str(calc), "--command",
                  "pytest -s tests/test_leak.py::test_prints_what_it_read", "--ci-commit", "a" * 40)
    spec = h.feed_failed_build(spec, "collecting calc\n")  # origin/main does not build
    spec = h.feed_failed_build(spec, BUILD_LOG)  # nor does ci_commit
    assert ("done", "CANNOT_VERIFY") == (spec["status"], spec["verdict"]["verdict"])
    blocker = spec["verdict"]["blocker"]
    assert blocker.startswith("trunk and ci_commit both fail to build: ")
    for kept in ("https://builder:***@pypi.example.invalid", "aws_secret_access_key = ***",
                 "Authorization: Bearer ***", "-----BEGIN OPENSSH PRIVATE KEY-----***"
                 "-----END OPENSSH PRIVATE KEY-----"):
        assert kept in blocker, blocker
    flow_id = spec["flow_id"]
    stage1 = [p for p in (ws / flow_id / "logs").rglob("*.log") if b"test_leak" in p.read_bytes()]
    assert stage1 and b"-----BEGIN PRIVATE KEY-----***" in stage1[0].read_bytes()  # it ran
    state = json.loads((ws / flow_id / "flow_state.json").read_text())
    fed = [t["result"] for t in state["tasks"] if t.get("result")]
    assert fed and all("-----BEGIN RSA PRIVATE KEY-----***" in r["agent_name"] for r in fed)

    h.call("status", "--json")
    h.call("status")  # the table a person reads
    assert flow_id.encode() in h.printed[-2][1]
    h.call("--resume", "--flow", flow_id)  # the cached spec, printed again
    h.call("reproduce", "--profile", "local", "--source-dir", str(calc), "--command",
           "pytest -s tests/test_leak.py::test_prints_what_it_read", "--ci-commit", "a" * 40)

    served: list[tuple[str, bytes]] = []
    with serving(ws, **ENV) as (url, printed):
        served.append(("serve's object", json.dumps(printed).encode()))
        jobs = sorted(p.stem for p in (ws / flow_id / "jobs").glob("*.json")
                      if not p.stem.endswith(("result", "spec")))
        assert jobs  # the reproducer's and the probes' logs are pages too
        for page in ["/", "/parts/flows", f"/flow/{flow_id}", f"/parts/flow/{flow_id}",
                     *(f"/log/{job}/{flow_id}" for job in jobs)]:
            served.append((f"GET {page}", _get(url.rstrip("/") + page)))
    flow_page = dict(served)[f"GET /flow/{flow_id}"]
    assert b"-----BEGIN OPENSSH PRIVATE KEY-----***" in flow_page  # the verdict is on it

    replies = _mcp(ws, {**h.env}, [
        {"jsonrpc": "2.0", "id": n, "method": "resources/read",
         "params": {"uri": f"orchestrator://flow/{flow_id}/{name}"}}
        for n, name in enumerate(["verdict.json", "report.json", "flow_state.json"], 1)] + [
        {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
         "params": {"name": "status", "arguments": {}}}])
    assert 6 == len(replies)  # the handshake, three reads, the tool call, stderr
    verdict_reply = json.loads(replies[1])
    assert "Authorization: Bearer ***" in verdict_reply["result"]["contents"][0]["text"]

    everything = [*h.printed, *h.written(), *served,
                  *((f"MCP line {i}", line) for i, line in enumerate(replies))]
    assert [] == _leaks(everything)


def _rows(url: str) -> list[tuple[str, bytes]]:
    """Every value of every row of every table of the store's database (bytea as its bytes,
    anything else as its text)."""
    import psycopg

    def raw(value: Any) -> bytes:
        return bytes(value) if isinstance(value, (bytes, memoryview)) else str(value).encode()

    with psycopg.connect(url) as conn:
        tables = [r[0] for r in conn.execute(
            "SELECT quote_ident(table_name) FROM information_schema.tables "
            "WHERE table_schema = current_schema()")]
        return [(f"table {t}", raw(value)) for t in tables
                for row in conn.execute(f"SELECT * FROM {t}") for value in row]


def test_no_secret_reaches_the_postgresql_store(tmp_path: Path, pg_url: str) -> None:
    """The same flow on the PostgreSQL store: no row of any table (state, audit trail,
    cached spec, outputs), no printed byte and no local file holds a secret."""
    calc = Path(shutil.copytree(ROOT / "examples" / "calc", tmp_path / "calc"))
    ws = tmp_path / "ws"
    h = Harness(ws, pg_url)
    spec = h.call("reproduce", "--profile", "local", "--source-dir", str(calc), "--command",
                  "pytest tests/test_calc.py::test_add", "--ci-commit", "a" * 40)
    spec = h.feed_failed_build(spec, "collecting calc\n")
    spec = h.feed_failed_build(spec, BUILD_LOG)
    assert "Authorization: Bearer ***" in spec["verdict"]["blocker"]
    h.call("--resume", "--flow", spec["flow_id"])
    h.call("status", "--json")
    rows = _rows(pg_url)
    assert any(b"Authorization: Bearer ***" in data for _, data in rows)  # the verdict is there
    assert [] == _leaks([*h.printed, *h.written(), *rows])
