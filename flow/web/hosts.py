"""Which Host names the dashboard answers for (a defence against DNS rebinding).

A page on another site can make a browser resolve its own name to 127.0.0.1 and then read
this server's answers as that site: the request reaches us with ``Host: evil.example``. So
every request whose Host header (port aside) is not one we serve gets 421 and nothing else:
127.0.0.1, localhost, ::1, and the ``--host`` given (with ``--host 0.0.0.0`` or ``::``, also
this machine's own name, which the people it is opened to will type). ``open_warning`` is
the line ``serve`` writes to stderr when the page is open to the network.
"""

from __future__ import annotations

import socket
from typing import Any

LOCAL = ("127.0.0.1", "localhost", "::1")
ANY = ("0.0.0.0", "::", "")


def served_names(host: str) -> tuple[str, ...]:
    """The Host names answered for a server bound to ``host``."""
    names = {*LOCAL, host.strip("[]").lower()}
    if host in ANY:
        names.add(socket.gethostname().lower())
        names.add(socket.getfqdn().lower())
    names.discard("")
    return tuple(sorted(names))


def open_warning(host: str) -> str | None:
    if host.strip("[]") in LOCAL:
        return None
    return (f"warning: --host {host} opens this read-only page to the network: anyone who can "
            "reach this address sees every flow, its prompts and its logs (secrets are masked); "
            "use 127.0.0.1 unless that is meant")


def _name(header: str) -> str:
    """The host of a Host header, port and IPv6 brackets removed, lowercased."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1:header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def only_hosts(app: Any, hosts: tuple[str, ...] = ()) -> Any:
    """``app`` answering only requests whose Host is one of LOCAL or ``hosts``."""
    allowed = {*LOCAL, *(h.lower().strip("[]") for h in hosts)}

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
            if _name(given) not in allowed:
                body = b"this page answers only for the names it serves (127.0.0.1, localhost)"
                await send({"type": "http.response.start", "status": 421,
                            "headers": [(b"content-type", b"text/plain"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await app(scope, receive, send)

    return asgi
