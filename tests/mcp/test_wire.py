"""The server's wire: every tool's input schema a valid, fully typed JSON Schema document (as
the SDK's client lists it), and a line that is no JSON-RPC message answered, not dropped."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from tests.mcp.client import ROOT, SCRIPT, Mcp, drive


def _untyped(schema: Any, where: str = "") -> list[str]:
    """The property paths in ``schema`` (its $defs included) that have no ``type``; the
    conditions on an object (``anyOf``/``if``/``then``... beside its ``properties``) declare
    no property and are not looked into."""
    out: list[str] = []
    if isinstance(schema, dict):
        conditions = {"anyOf", "oneOf", "allOf", "if", "then", "else", "not"}
        if "properties" in schema:
            schema = {k: v for k, v in schema.items() if k not in conditions}
        for name, prop in (schema.get("properties") or {}).items():
            if isinstance(prop, dict) and "type" not in prop:
                out.append(f"{where}.{name}")
        for key, value in schema.items():
            if key == "properties":
                for name, prop in value.items():
                    out += _untyped(prop, f"{where}.{name}")
            else:
                out += _untyped(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for i, item in enumerate(schema):
            out += _untyped(item, f"{where}[{i}]")
    return out


def test_every_tool_input_schema_is_a_valid_fully_typed_json_schema(tmp_path: Path) -> None:
    """Listed with the SDK client, each tool's inputSchema passes the JSON Schema 2020-12
    meta-schema, is an object, and every property in it states its type (start's args:
    object), so a client that reads only ``type`` sends args as an object."""
    seen: dict[str, dict[str, Any]] = {}

    async def body(mcp: Mcp) -> None:
        for tool in (await mcp.client.list_tools()).tools:
            seen[tool.name] = tool.input_schema

    drive(tmp_path, body)
    assert {"start", "resume", "feed", "answer", "status", "schema"} <= set(seen)
    for name, schema in seen.items():
        Draft202012Validator.check_schema(schema)
        assert ("object", []) == (schema["type"], _untyped(schema)), name
    assert "object" == seen["start"]["properties"]["args"]["type"]
    args = {"args": {"workflow": "reproduce", "command": "pytest t.py"}}
    assert [] == list(Draft202012Validator(seen["start"]).iter_errors(args))
    assert [] != list(Draft202012Validator(seen["start"]).iter_errors({"args": "{}"}))


def test_a_line_that_is_no_json_rpc_message_gets_an_error_answer(tmp_path: Path) -> None:
    """Not-JSON gets -32700 (id null); JSON that is no message gets -32600 with its id; the
    server then still answers the next request."""
    lines = ["this is not json", json.dumps({"jsonrpc": "2.0", "id": 7, "metho": "ping"}),
             json.dumps({"jsonrpc": "2.0", "id": 8, "method": "ping"})]
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "mcp", "--workspace", str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("\n".join(lines) + "\n")
        proc.stdin.flush()
        answers = [json.loads(proc.stdout.readline()) for _ in lines]  # a hang fails by timeout
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
    assert [(None, -32700), (7, -32600), (8, None)] == [
        (a.get("id"), a.get("error", {}).get("code")) for a in answers]
