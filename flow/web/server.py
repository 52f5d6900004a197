"""``orchestrator.py serve``: bind, print the URL as one JSON object, serve until stopped.

The socket is bound before anything is printed (127.0.0.1 and a port the system picks unless
``--host``/``--port`` say otherwise), so the printed URL is already listening; uvicorn then
serves ``flow.web.app`` on that very socket. Its own log goes to stderr, with secrets masked
(``flow.core.redact.mask_stderr``); stdout holds the one JSON object of the harness contract
(on a terminal, the same in words: ``flow.cli.person``). Only the Host names it serves are
answered (``flow.web.hosts``); ``--host`` other than a loopback name warns on stderr. Ctrl-C
(SIGINT) or SIGTERM stops it with exit 0, whenever it comes.
"""

from __future__ import annotations

import signal
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

from flow.core.errors import UsageError


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (``port`` 0: one the system picks)."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port} is not a port number", "give 0 to 65535 (0: any free)")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UsageError(f"--host {host!r} is not an address here: {exc}",
                         "use 127.0.0.1 (this machine only), or an address of this machine"
                         ) from None
    family, _, _, _, address = infos[0]
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}",
                         "pick another --port, or leave it out for a free one") from None
    sock.listen(128)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/"


def serve(root: Path, host: str, port: int, harness: str,
          emit: Callable[[Any], int], store: str | None = None) -> int:
    """Serve the dashboard of workspace ``root`` (its flows in the PostgreSQL ``store`` when
    a URL is given); prints the URL first (``emit``)."""
    import uvicorn

    from flow.core.redact import mask_stderr
    from flow.core.render import envelope
    from flow.web.app import create_app
    from workspace.pgerrors import mask_url

    mask_stderr()  # uvicorn's log and any traceback it prints leave with secrets masked
    if store is not None:  # an unreachable store is the one JSON error, before binding
        from workspace.pgconn import connect

        connect(store)
    import sys

    from flow.web.hosts import open_warning, served_names

    sock = bind(host, port)
    url = url_of(sock)
    # SIGTERM ends it as Ctrl-C does: uvicorn puts this handler back when it stops and then
    # raises the signal it caught, which lands here instead of killing the process.
    signal.signal(signal.SIGTERM, _interrupt)
    warning = open_warning(host)
    if warning:
        print(warning, file=sys.stderr, flush=True)
    try:
        emit({**envelope(None, root, "done", harness), "serving": True, "url": url,
              "read_only": True, **({"store": mask_url(store)} if store else {}),
              "next_steps": [f"open {url} in a browser; Ctrl-C stops the server"]})
        config = uvicorn.Config(create_app(root.resolve(), store, served_names(host)),
                                log_level="warning", access_log=False, lifespan="off")
        sys.setswitchinterval(0.0005)  # the event loop is not kept 5 ms behind a page render
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C before uvicorn listens for it, or after it stopped
        pass
    finally:
        sock.close()
    return 0


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
