"""A fake GitHub REST + GraphQL server on 127.0.0.1 for PyGithub to talk real HTTP to.

Documents it follows (read for this fake; shapes in `render.py`, checked by `schemas.py`):

- GitHub's published REST description, github/rest-api-description
  `descriptions/api.github.com/api.github.com.json` (components/schemas: pull-request,
  pull-request-review-comment, issue-comment, label, check-run, workflow-run, job,
  combined-commit-status, simple-commit-status, artifact, basic-error). Optional keys the
  description leaves out of `required` are omitted when GitHub omits them (a root review
  comment has no `in_reply_to_id`), nullable ones are sent as null.
- docs.github.com "Rate limits for the REST API" and "Best practices for using the REST
  API": a primary limit answers 403 or 429 with `x-ratelimit-remaining: 0` and
  `x-ratelimit-reset`; a secondary limit answers 403 or 429, with `retry-after` when GitHub
  knows the wait and without it otherwise (then: wait at least a minute, longer each time).
  A 304 does not count against the primary limit.
- docs.github.com "Using pagination in the REST API": `Link` with rel next/last/prev/first,
  `per_page` at most 100.
- docs.github.com "Download job logs for a workflow run" / "Download an artifact": a 302 to a
  short-lived URL on another host (here a second server on `localhost`), fetched without the
  token.
- Times: runs and comments are created at `state.stamp()` (the wall clock, each later than
  the one before, whole seconds with "Z", as api.github.com writes them), never one fixed
  time for all, so time windows ("the run created after my comment") are tested with real
  order. Check runs, workflows, artifacts and PRs keep a fixed time (nothing reads theirs).
- Branch protection and rulesets (REST description: `protected-branch-required-status-check`,
  `repository-rule-detailed`): `GET .../branches/{b}/protection/required_status_checks`
  answers 404 "Branch not protected" without protection; `GET .../rules/branches/{b}` lists
  the active rules (here only `required_status_checks`) as a bare paginated list.
- Secondary limits in every wording GitHub has used (`SECONDARY_WORDINGS`); a deleted review
  comment's replies keep their `in_reply_to_id`; a PR a merge bot landed is closed with the
  `Merged` label and `merged_at` null (`Repo.bot_merge`, PyTorch's pytorchmergebot).
- The "Rerun Test" gateway of radixark/miles (`.github/workflows/comment-ci-command.yml`,
  `.github/workflows/scripts/comment_ci_command.py`, `.github/workflows/run-ci-file.yml`):
  see `state.RerunGateway`.

Protocol behaviour the tests rely on lives here (routes live in `routes.py`):
pagination with Link headers, ETag / If-None-Match -> 304, rate-limit headers and
primary / secondary limit answers, injectable faults (any status, body, headers, delays;
`times=None` for a permanent refusal such as a token without admin rights), short-lived
signed blob URLs on the blob host behind 302 redirects, and a request log so a test can
count requests.
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
    """Answer `status` (or just sleep `delay` seconds first) for matching requests, `times` times
    (None: every time). `message` and `headers` shape the answer like GitHub's."""

    path_regex: str
    status: int | None = 502
    times: int | None = 1
    method: str | None = None
    delay: float = 0.0
    message: str = "Server Error"
    headers: dict[str, str] = field(default_factory=dict)
    counts: bool = False  # whether the answer uses up rate-limit budget
    landed: int = 0  # delayed requests handled to the end (a client may have given up on them)


ADMIN_RIGHTS = "Must have admin rights to Repository."
NOT_ACCESSIBLE = "Resource not accessible by personal access token"
DOCS = "https://docs.github.com/rest"
SECONDARY_MESSAGE = ("You have exceeded a secondary rate limit. Please wait a few minutes "
                     "before you try again. If you reach out to GitHub Support for help, please "
                     "include the request ID ABCD:1234.")
# The older wordings GitHub still answers with (its REST docs before 2022, and what clients
# such as PyGithub's Requester.isSecondaryRateLimitError and go-github's tests recognise):
# neither names a "rate limit".
SECONDARY_WORDINGS = {
    "current": SECONDARY_MESSAGE,
    "abuse": ("You have triggered an abuse detection mechanism. Please wait a few minutes "
              "before you try again."),
    "content": ("You have triggered an abuse detection mechanism and have been temporarily "
                "blocked from content creation. Please retry your request again later."),
}


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
    extra: dict[str, Any] = field(default_factory=dict)  # fields of the wrapping object


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
        self._blob_server: ThreadingHTTPServer | None = None
        self.base_url = ""
        self.blob_url = ""  # the download host: another origin, as GitHub's blob storage is

    # ---- scenario helpers ---------------------------------------------------------
    def repo(self, full_name: str) -> Repo:
        """Get or create the repository `owner/name`."""
        with self.lock:
            return self.repos.setdefault(full_name, Repo(full_name))

    def fault(self, path_regex: str, status: int | None = 502, *, times: int | None = 1,
              method: str | None = None, delay: float = 0.0, message: str = "Server Error",
              headers: dict[str, str] | None = None) -> Fault:
        """Inject a fault for the next `times` requests whose path matches (None: all of them)."""
        f = Fault(path_regex, status, times, method, delay, message, dict(headers or {}))
        self.faults.append(f)
        return f

    def refuse(self, path_regex: str, method: str = "POST", message: str = NOT_ACCESSIBLE,
               status: int = 403) -> Fault:
        """A permission refusal, every time: what a token without the right role gets.

        Re-running a workflow run without write access answers 403 with `ADMIN_RIGHTS`;
        writing labels or comments with a token lacking the permission, `NOT_ACCESSIBLE`."""
        return self.fault(path_regex, status, times=None, method=method, message=message)

    def secondary_limit(self, path_regex: str = ".*", *, times: int | None = 1,
                        retry_after: int | None = None, status: int = 403,
                        wording: str = "current", method: str | None = None) -> Fault:
        """GitHub's secondary rate limit: 403 (or 429) while budget remains; `retry-after` only
        when GitHub names the wait; `wording` one of SECONDARY_WORDINGS."""
        headers = {} if retry_after is None else {"Retry-After": str(retry_after)}
        return self.fault(path_regex, status, times=times, message=SECONDARY_WORDINGS[wording],
                          headers=headers, method=method)

    def timeout(self, path_regex: str, seconds: float, *, times: int | None = 1,
                method: str | None = None) -> Fault:
        """Answer late (after `seconds`), so a client with a shorter timeout gives up."""
        return self.fault(path_regex, None, times=times, method=method, delay=seconds)

    def count(self, path_regex: str = ".*", method: str | None = None) -> int:
        """Requests seen so far whose path matches (any method unless given)."""
        return sum(1 for r in self.requests if re.search(path_regex, r.path) and method in (None, r.method))

    def reset_log(self) -> None:
        self.requests.clear()

    def sign_blob(self, data: bytes, content_type: str) -> str:
        """Store a blob behind a URL that expires after `blob_ttl` seconds."""
        key = secrets.token_hex(8)
        self._blobs[key] = (time.time() + self.blob_ttl, data, content_type)
        return f"{self.blob_url}/_blob/{key}?sig={secrets.token_hex(4)}"

    # ---- lifecycle ------------------------------------------------------------------
    def start(self) -> "FakeGitHub":
        self._server = _serve(type("Handler", (_Handler,), {"fake": self}))
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._blob_server = _serve(type("BlobHandler", (_BlobHandler,), {"fake": self}))
        self.blob_url = f"http://localhost:{self._blob_server.server_address[1]}"
        return self

    def stop(self) -> None:
        for server in (self._server, self._blob_server):
            if server is not None:
                server.shutdown()
                server.server_close()
        self._server = self._blob_server = None

    def __enter__(self) -> "FakeGitHub":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- request processing -----------------------------------------------------------
    def handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        delayed: list[Fault] = []
        try:
            return self._handle(method, raw_path, headers, body, delayed)
        finally:
            for f in delayed:
                f.landed += 1

    def wait_landed(self, fault: Fault, count: int = 1, within_s: float = 60.0) -> None:
        """Wait until ``count`` requests ``fault`` delayed were handled to the end (logged, their
        writes done), however late a busy machine lets them land; AssertionError past the bound."""
        deadline = time.monotonic() + within_s
        while fault.landed < count:
            assert time.monotonic() < deadline, f"{fault.path_regex}: {fault.landed} of {count} landed"
            time.sleep(0.02)

    def _handle(self, method: str, raw_path: str, headers: dict[str, str], body: bytes,
                delayed: list[Fault]) -> tuple[int, dict[str, str], bytes]:
        from tests.fakegithub.routes import route

        parsed = urllib.parse.urlsplit(raw_path)
        path, query = parsed.path, dict(urllib.parse.parse_qsl(parsed.query))
        conditional = "if-none-match" in headers
        for f in list(self.faults):
            if (f.times is None or f.times > 0) and re.search(f.path_regex, path) \
                    and f.method in (None, method):
                if f.times is not None:
                    f.times -= 1
                if f.delay:
                    delayed.append(f)
                    time.sleep(f.delay)
                if f.status is not None:
                    if f.counts:
                        self.rate_remaining -= 1
                    self._log(method, path, query, f.status, conditional)
                    hdrs = {"Content-Type": "application/json; charset=utf-8",
                            **self._rate_headers(), **f.headers}
                    return f.status, hdrs, json.dumps(
                        {"message": f.message, "documentation_url": DOCS,
                         "status": str(f.status)}).encode()
        if not self._authorized(headers):
            self._log(method, path, query, 401, conditional)
            return 401, {"Content-Type": "application/json; charset=utf-8"}, json.dumps(
                {"message": "Bad credentials", "documentation_url": DOCS, "status": "401"}).encode()
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
        """The primary limit spent: 403 or 429 (`rate_limit_status`) with remaining 0 and the
        reset time; GitHub's message, no retry-after."""
        hdrs = {"Content-Type": "application/json; charset=utf-8", **self._rate_headers()}
        msg = ("API rate limit exceeded for user ID 1. If you reach out to GitHub Support for "
               "help, please include the request ID ABCD:1234 and timestamp.")
        self._log(method, path, query, self.rate_limit_status, conditional)
        return self.rate_limit_status, hdrs, json.dumps(
            {"message": msg, "documentation_url": "https://docs.github.com/rest/overview/"
             "rate-limits-for-the-rest-api", "status": str(self.rate_limit_status)}).encode()

    def handle_blob(self, method: str, raw_path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], bytes]:
        """The blob host: signed URLs only, no API, no token needed (or looked at)."""
        parsed = urllib.parse.urlsplit(raw_path)
        if not parsed.path.startswith("/_blob/"):
            status, hdrs, data = 404, {"Content-Type": "application/xml"}, b"<Error><Code>BlobNotFound</Code></Error>"
        else:
            status, hdrs, data = self._blob(parsed.path.rsplit("/", 1)[1])
        self._log(method, parsed.path, dict(urllib.parse.parse_qsl(parsed.query)), status,
                  "if-none-match" in headers)
        return status, hdrs, data

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
        body = chunk if paged.key is None else {"total_count": len(paged.items), **paged.extra,
                                                paged.key: chunk}
        return body, ", ".join(rels)

    def _log(self, method: str, path: str, query: dict[str, str], status: int, conditional: bool) -> None:
        self.requests.append(RequestRecord(method, path, query, status, conditional))


def _serve(handler: type[BaseHTTPRequestHandler]) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server


class _Handler(BaseHTTPRequestHandler):
    fake: FakeGitHub
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # send headers and body in one segment (avoids Nagle + delayed-ACK stalls)

    def _answer(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        return self.fake.handle(self.command, self.path, headers, body)

    def _serve(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        status, hdrs, data = self._answer(headers, body)
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


class _BlobHandler(_Handler):
    """The download host (`localhost:<other port>`): only signed blob URLs."""

    def _answer(self, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        return self.fake.handle_blob(self.command, self.path, headers)
