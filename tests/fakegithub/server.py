"""A fake GitHub REST + GraphQL server on 127.0.0.1 for PyGithub to talk real HTTP to.

Protocol behaviour the tests rely on lives here (routes live in `routes.py`):
pagination with Link headers, ETag / If-None-Match -> 304 (a 304 does not count
against the rate limit, as on GitHub), rate-limit headers and 403/429 responses once
the budget is spent, injectable 5xx faults and delays, short-lived signed blob URLs
behind 302 redirects, and a request log so a test can count requests.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakegithub.state import Repo


@dataclass
class Fault:
    """Answer `status` (or just sleep `delay` seconds first) for matching requests, `times` times."""

    path_regex: str
    status: int | None = 502
    times: int = 1
    method: str | None = None
    delay: float = 0.0


@dataclass
class RequestRecord:
    method: str
    path: str
    query: dict[str, str]
    status: int
    conditional: bool


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # JSON-able, or bytes for blobs
    headers: dict[str, str] = field(default_factory=dict)
    counts: bool = True  # counts against the rate limit


@dataclass
class Paged:
    """A list endpoint's items; `key` wraps them in an object with total_count (None: bare list)."""

    items: list[Any]
    key: str | None = None


class FakeGitHub:
    """Scenario state plus the running server. Mutate `repos` (under `lock` if racing)."""

    def __init__(self, token: str = "fake-token-123") -> None:
        self.token = token
        self.repos: dict[str, Repo] = {}
        self.lock = threading.RLock()
        self.requests: list[RequestRecord] = []
        self.faults: list[Fault] = []
        self.rate_limit = 5000
        self.rate_remaining = 5000
        self.rate_reset = int(time.time()) + 3600
        self.rate_limit_status = 403  # 403 (primary limit) or 429 (secondary limit)
        self.blob_ttl = 60.0
        self._blobs: dict[str, tuple[float, bytes, str]] = {}
        self._server: ThreadingHTTPServer | None = None
        self.base_url = ""

    # ---- scenario helpers ---------------------------------------------------------
    def repo(self, full_name: str) -> Repo:
        """Get or create the repository `owner/name`."""
        with self.lock:
            return self.repos.setdefault(full_name, Repo(full_name))

    def fault(self, path_regex: str, status: int | None = 502, *, times: int = 1,
              method: str | None = None, delay: float = 0.0) -> Fault:
        """Inject a fault for the next `times` requests whose path matches."""
        f = Fault(path_regex, status, times, method, delay)
        self.faults.append(f)
        return f

    def count(self, path_regex: str = ".*", method: str | None = None) -> int:
        """Requests seen so far whose path matches (any method unless given)."""
        return sum(1 for r in self.requests if re.search(path_regex, r.path) and method in (None, r.method))

    def reset_log(self) -> None:
        self.requests.clear()

    def sign_blob(self, data: bytes, content_type: str) -> str:
        """Store a blob behind a URL that expires after `blob_ttl` seconds."""
        key = secrets.token_hex(8)
        self._blobs[key] = (time.time() + self.blob_ttl, data, content_type)
        return f"{self.base_url}/_blob/{key}?sig={secrets.token_hex(4)}"

    # ---- lifecycle ------------------------------------------------------------------
    def start(self) -> "FakeGitHub":
        handler = type("Handler", (_Handler,), {"fake": self})
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FakeGitHub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- request processing -----------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        from tests.fakegithub.routes import route

        parsed = urllib.parse.urlsplit(raw_path)
        path, query = parsed.path, dict(urllib.parse.parse_qsl(parsed.query))
        conditional = "if-none-match" in headers
        for f in list(self.faults):
            if f.times > 0 and re.search(f.path_regex, path) and f.method in (None, method):
                f.times -= 1
                if f.delay:
                    time.sleep(f.delay)
                if f.status is not None:
                    self._log(method, path, query, f.status, conditional)
                    return f.status, {"Content-Type": "application/json"}, b'{"message": "Server Error"}'
        if path.startswith("/_blob/"):
            status, hdrs, data = self._blob(path.rsplit("/", 1)[1])
            self._log(method, path, query, status, conditional)
            return status, hdrs, data
        if not self._authorized(headers):
            self._log(method, path, query, 401, conditional)
            return 401, {"Content-Type": "application/json"}, b'{"message": "Bad credentials"}'
        if self.rate_remaining <= 0:
            return self._limited(method, path, query, conditional)
        payload = json.loads(body) if body else None
        with self.lock:
            reply = route(self, method, path, query, payload)
        status, hdrs, data = self._encode(reply, path, query, headers)
        if reply.counts and status != 304:
            self.rate_remaining -= 1
        hdrs.update(self._rate_headers())
        self._log(method, path, query, status, conditional)
        return status, hdrs, data

    def _authorized(self, headers: dict[str, str]) -> bool:
        auth = headers.get("authorization", "")
        return auth in (f"token {self.token}", f"Bearer {self.token}")

    def _rate_headers(self) -> dict[str, str]:
        return {
            "X-RateLimit-Limit": str(self.rate_limit), "X-RateLimit-Remaining": str(max(self.rate_remaining, 0)),
            "X-RateLimit-Reset": str(self.rate_reset), "X-RateLimit-Used": str(self.rate_limit - self.rate_remaining),
        }

    def _limited(self, method: str, path: str, query: dict[str, str], conditional: bool) -> tuple[int, dict[str, str], bytes]:
        hdrs = {"Content-Type": "application/json", **self._rate_headers()}
        if self.rate_limit_status == 429:
            hdrs["Retry-After"] = str(max(self.rate_reset - int(time.time()), 0))
            msg = "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."
        else:
            msg = "API rate limit exceeded for user ID 1."
        self._log(method, path, query, self.rate_limit_status, conditional)
        return self.rate_limit_status, hdrs, json.dumps({"message": msg}).encode()

    def _blob(self, key: str) -> tuple[int, dict[str, str], bytes]:
        entry = self._blobs.get(key)
        if entry is None or time.time() > entry[0]:
            return 403, {"Content-Type": "application/xml"}, b"<Error><Code>AuthenticationFailed</Code>expired</Error>"
        return 200, {"Content-Type": entry[2]}, entry[1]

    def _encode(self, reply: Reply, path: str, query: dict[str, str], headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        hdrs = dict(reply.headers)
        body = reply.body
        if isinstance(body, Paged):
            body, link = self._page(body, path, query)
            if link:
                hdrs["Link"] = link
        if isinstance(body, bytes):
            return reply.status, hdrs, body
        data = b"" if body is None else json.dumps(body, sort_keys=True).encode()
        hdrs.setdefault("Content-Type", "application/json; charset=utf-8")
        if reply.status == 200 and data:
            etag = 'W/"' + hashlib.sha1(data + hdrs.get("Link", "").encode()).hexdigest() + '"'
            hdrs["ETag"] = etag
            if headers.get("if-none-match") == etag:
                return 304, {"ETag": etag}, b""
        return reply.status, hdrs, data

    def _page(self, paged: Paged, path: str, query: dict[str, str]) -> tuple[Any, str]:
        per_page = min(int(query.get("per_page", 30)), 100)
        page = max(int(query.get("page", 1)), 1)
        last = max((len(paged.items) + per_page - 1) // per_page, 1)
        chunk = paged.items[(page - 1) * per_page: page * per_page]

        def url(p: int) -> str:
            return f"{self.base_url}{path}?" + urllib.parse.urlencode({**query, "per_page": per_page, "page": p})

        rels = []
        if page < last:
            rels += [f'<{url(page + 1)}>; rel="next"', f'<{url(last)}>; rel="last"']
        if page > 1:
            rels += [f'<{url(page - 1)}>; rel="prev"', f'<{url(1)}>; rel="first"']
        body = chunk if paged.key is None else {"total_count": len(paged.items), paged.key: chunk}
        return body, ", ".join(rels)

    def _log(self, method: str, path: str, query: dict[str, str], status: int, conditional: bool) -> None:
        self.requests.append(RequestRecord(method, path, query, status, conditional))


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # send headers and body in one segment (avoids Nagle + delayed-ACK stalls)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, hdrs, data = self.fake.handle(self.command, self.path, headers, body)
        try:
            self.send_response(status)
            for k, v in hdrs.items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if data and self.command != "HEAD":
                self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client timed out first: expected in fault tests
            self.close_connection = True

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = do_HEAD = _serve

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        return
