"""The MCP server (``orchestrator.py mcp``): the workflows as typed tools over stdio.

Only ``flow.mcp.server`` and ``flow.mcp.wire`` (the answer to a line that is no JSON-RPC
message) import the ``mcp`` SDK; ``inputs``, ``calls`` and ``resources`` are
plain library code (pydantic models, the CLI's own entry point, file reads), so the server's
behaviour can be read and tested without it. Nothing else in the project imports this package.
"""
