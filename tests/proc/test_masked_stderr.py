"""The servers' stderr is a door too: what uvicorn (``serve``) and the MCP SDK (``mcp``) log,
a traceback Python prints, leaves with secrets masked (``flow.core.redact.MaskedLines``),
whatever piece of text each write holds."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

from flow.core.redact import MaskedLines

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cret-value-of-a-token"  # the value of a secret setting (DASH_API_TOKEN)
SHAPED = "ghp_" + "A1b2C3d4" * 5  # a GitHub token's shape, whatever the environment holds


def test_each_line_is_masked_whole_however_it_was_written() -> None:
    os.environ["DASH_API_TOKEN"] = SECRET
    try:
        out = io.StringIO()
        masked = MaskedLines(out)
        for piece in ("token ", SECRET[:5], SECRET[5:], " and ", SHAPED[:9]):
            masked.write(piece)
        assert "" == out.getvalue()  # no newline yet: held, so no piece leaves unmasked
        masked.write(SHAPED[9:] + " end\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7")
        masked.write("bodyOfTheKey\n-----END RSA PRIVATE KEY-----\nlast words ")
        masked.write(SECRET)
        masked.flush()
    finally:
        del os.environ["DASH_API_TOKEN"]
    text = out.getvalue()
    assert (False, False, False) == (SECRET in text, SHAPED in text, "bodyOfTheKey" in text)
    assert text == ("token *** and *** end\n-----BEGIN RSA PRIVATE KEY-----***-----END RSA "
                    "PRIVATE KEY-----\nlast words ***")


def test_writelines_and_the_binary_buffer_are_masked_in_order() -> None:
    """A library that writes bytes to ``sys.stderr.buffer`` or lines through ``writelines``
    goes through the same held text: masked, a secret split between a text write and a
    bytes write (or inside a multibyte character) masked whole, the order kept."""
    os.environ["DASH_API_TOKEN"] = SECRET
    try:
        raw = io.BytesIO()
        out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)
        masked = MaskedLines(out)
        masked.write("text " + SECRET[:4])
        masked.buffer.write(SECRET[4:].encode() + b" bytes \xc3")  # half of an e-acute
        masked.buffer.write(b"\xa9 " + SHAPED.encode() + b"\n")
        masked.writelines(["lines ", SECRET, "\n"])
        masked.buffer.writelines([b"last ", SECRET.encode()])
        masked.buffer.flush()
    finally:
        del os.environ["DASH_API_TOKEN"]
    assert b"text *** bytes \xc3\xa9 ***\nlines ***\nlast ***" == raw.getvalue()


def _run(script: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "DASH_API_TOKEN": SECRET, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, cwd=ROOT)


def test_uvicorns_log_and_traceback_under_serve_are_masked(tmp_path: Path) -> None:
    """The real ``serve`` with the real uvicorn logging set-up; only the serving loop is
    replaced by one that logs as uvicorn does for a failing request, then returns."""
    proc = _run(f"""
import logging, os, uvicorn
from pathlib import Path
def run(self, sockets=None):
    log = logging.getLogger("uvicorn.error")
    log.warning("a line naming %s", os.environ["DASH_API_TOKEN"])
    try:
        raise RuntimeError("{SHAPED}")
    except RuntimeError:
        log.exception("Exception in ASGI application")
uvicorn.Server.run = run
from flow.web.server import serve
serve(Path({str(tmp_path)!r}), "127.0.0.1", 0, "claude", print)
""")
    assert 0 == proc.returncode, proc.stderr
    assert ("WARNING:  a line naming ***", "RuntimeError: ***",
            "ERROR:    Exception in ASGI application") == (
        next(line for line in proc.stderr.splitlines() if "a line naming" in line),
        proc.stderr.strip().splitlines()[-1], proc.stderr.splitlines()[1])
    assert (False, False) == (SECRET in proc.stderr, SHAPED in proc.stderr)


def test_the_mcp_sdks_log_and_an_uncaught_traceback_under_mcp_are_masked(tmp_path: Path) -> None:
    """The real ``mcp`` set-up; only its stdio loop is replaced by one that logs as the SDK
    does when a handler raises, then dies of an uncaught error."""
    proc = _run(f"""
import logging, os
import flow.mcp.server as server
def run(main):
    logging.getLogger("mcp.shared.jsonrpc_dispatcher").error(
        "handler for %r raised", os.environ["DASH_API_TOKEN"])
    raise RuntimeError("{SHAPED}")
server.anyio.run = run
server.serve(["--workspace", {str(tmp_path)!r}], None)
""")
    assert 1 == proc.returncode
    assert ("handler for '***' raised", "RuntimeError: ***") == (
        proc.stderr.splitlines()[0], proc.stderr.strip().splitlines()[-1])
    assert (False, False) == (SECRET in proc.stderr, SHAPED in proc.stderr)
