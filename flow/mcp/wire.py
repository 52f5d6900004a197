"""What the MCP server answers to a line on stdin that is no JSON-RPC message.

The SDK's stdio transport hands such a line to the server as an exception, which the server
drops: a client waiting on it would hang. ``Answering`` wraps the transport's read stream
(the SDK's ``ReadStream`` protocol: ``receive``, async iteration, ``aclose``, the sender's
``last_context``) and answers each one itself, as JSON-RPC 2.0 asks: text that is not JSON
gets error ``-32700`` (parse error), JSON that is no request, notification or response gets
``-32600`` (invalid request) with the request's ``id`` when one can be read, else ``null``.

``Masking`` wraps the write stream: every message the server sends (tool results, resource
texts, errors, progress) leaves with its secrets masked (``flow.core.redact``), whatever
built it, as the command line's ``dumps`` masks what it prints.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError


def refusal(exc: Exception) -> types.JSONRPCError:
    """The JSON-RPC error answering a line the transport could not read as a message."""
    code, message, request_id = types.PARSE_ERROR, "Parse error: the line is not JSON", None
    if isinstance(exc, ValidationError) and not any(
            e["type"] == "json_invalid" for e in exc.errors()):
        code, message = types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message"
        for err in exc.errors():
            got = err.get("input")
            rid = got.get("id") if isinstance(got, dict) else None
            if isinstance(rid, (str, int)) and not isinstance(rid, bool):
                request_id = rid
                break
    return types.JSONRPCError(jsonrpc="2.0", id=request_id,
                              error=types.ErrorData(code=code, message=message))


class Answering:
    """A read stream that answers unreadable lines on ``write`` and passes messages on."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    @property
    def last_context(self) -> Any:
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            await self._write.send(SessionMessage(refusal(item)))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    def __aiter__(self) -> Answering:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Answering:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc_val: BaseException | None, exc_tb: TracebackType | None) -> None:
        await self.aclose()


def masked(item: SessionMessage) -> SessionMessage:
    """``item`` with every string of its message masked (``flow.core.redact``); the same
    object when a quick scan of its JSON finds nothing to mask."""
    import orjson

    from flow.core.redact import needs_mask, redact_tree

    data = item.message.model_dump(by_alias=True, exclude_unset=True, mode="json")
    if not needs_mask(orjson.dumps(data)):
        return item
    message = types.jsonrpc_message_adapter.validate_python(redact_tree(data), by_alias=True,
                                                             by_name=False)
    return SessionMessage(message, metadata=item.metadata)


class Masking:
    """A write stream (the SDK's ``WriteStream``: ``send``, ``aclose``, async context) that
    masks each message on its way out (``masked``)."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def send(self, item: SessionMessage) -> None:
        await self._inner.send(masked(item))

    async def aclose(self) -> None:
        await self._inner.aclose()

    def close(self) -> None:
        self._inner.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def __aenter__(self) -> Masking:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc_val: BaseException | None, exc_tb: TracebackType | None) -> Any:
        return await self._inner.__aexit__(exc_type, exc_val, exc_tb)
