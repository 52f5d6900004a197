"""A flow's outputs as the dashboard shows them, read from its folder.

- a reproduce verdict (``verdict.json``): the verdict, its stage and its ``refined_command``;
- a batch's buckets (``report.json``): each entry's id, command and bucket, grouped;
- a refactor's ``final_summary.md`` and the diff of the refactored file against the copy
  the flow kept of it before its first edit (``original/``);
- a ``ci`` flow's pull request (``ci_pull``): its link, head commit and the check list the
  last tick read (``data.checks``: each check's name, status, conclusion, category, whether
  it is required, and its link), and its CI rounds (``data.fix_history``);
- the flow's ``result`` object itself, as JSON.

Only files inside the flow's folder are opened, but for the refactor diff: its right-hand
side is the file the flow refactored, named by the flow's own state (``data.file``), never
by the request, and read only inside the workspace or as the Python file at the flow's
repo-relative ``data.rel`` (``refactored_file``). Every text is shown escaped by the templates and with secrets masked;
the only links made of a flow's data are the PR's and its checks' web addresses, and only
when they are plain ``http://`` or ``https://`` URLs (``web_link``): a ``javascript:`` or other
address GitHub (or a hand-edited state) holds is shown as text.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workspace.jsonio import loads

MAX_TEXT = 200_000  # characters of one file shown


def outputs(root: Path, folder: Path, raw: dict[str, Any],
            read: Callable[[str], bytes | None] | None = None) -> dict[str, Any]:
    """The outputs present for this flow (absent ones are left out). ``read(name)`` gives an
    output's bytes (default: the file of that name in ``folder``; the PostgreSQL store's
    reads them from the database, ``flow.web.source``)."""
    get = read or (lambda name: _bytes(folder / name))
    out: dict[str, Any] = {}
    verdict = _json_of(get("verdict.json"))
    if isinstance(verdict, dict) and verdict.get("verdict"):
        out["verdict"] = {k: verdict.get(k) for k in ("verdict", "stage", "refined_command",
                                                       "rerun_after_fix", "flaky", "attempts",
                                                       "failures", "base")}
        out["verdict"]["failure"] = failure_line(get)
    report = _json_of(get("report.json"))
    if isinstance(report, dict) and isinstance(report.get("rows"), list):
        out["buckets"] = buckets(report)
    summary = _text_of(get("final_summary.md"))
    if summary is not None:
        out["summary"] = summary
    diff = refactor_diff(folder, raw.get("data"), get, root)
    if diff:
        out["diff"] = diff
    pull = ci_pull(raw)
    if pull is not None:
        out["ci"] = pull
    rounds = (raw.get("data") or {}).get("fix_history") if isinstance(raw.get("data"),
                                                                      dict) else None
    if isinstance(rounds, list) and rounds:
        out["ci_rounds"] = [r for r in rounds if isinstance(r, dict)]
    if raw.get("result") is not None:
        out["result"] = json.dumps(raw["result"], indent=2, sort_keys=True, default=str)
    return out


def web_link(url: Any) -> str | None:
    """``url`` when it is a plain ``http://`` or ``https://`` address (no spaces or control
    characters), else None: only such an address becomes a link on the page."""
    from urllib.parse import urlsplit

    if not isinstance(url, str) or len(url) > 2000 or any(ch.isspace() or ord(ch) < 32
                                                          for ch in url):
        return None
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    return url if parts.scheme in ("http", "https") and parts.netloc else None


CATEGORY_ORDER = ("regression", "broken_trunk", "external", "infra", "flaky", "pending",
                  "green", "ignored")


def ci_pull(raw: dict[str, Any]) -> dict[str, Any] | None:
    """A ``ci`` flow's pull request as its page shows it, from the flow's own data: the PR
    (repo, number, link), the head commit, and the checks the last tick read (on commit
    ``checks_sha``), red ones first, then pending, then green, each with
    GitHub's status and conclusion, the tick's category, whether it is required and its
    link; None for a flow of another workflow."""
    data = raw.get("data")
    if raw.get("workflow") != "ci" or not isinstance(data, dict):
        return None
    rank = {c: i for i, c in enumerate(CATEGORY_ORDER)}
    checks = []
    for c in data.get("checks") or []:
        if not isinstance(c, dict):
            continue
        checks.append({"name": str(c.get("name") or "?"), "kind": c.get("kind"),
                       "status": c.get("status"), "conclusion": c.get("conclusion"),
                       "category": str(c.get("category") or ""),
                       "required": bool(c.get("required", True)),
                       "workflow": c.get("workflow"), "url": c.get("details_url"),
                       "link": web_link(c.get("details_url"))})
    checks.sort(key=lambda c: (rank.get(c["category"], len(rank)), not c["required"]))
    counted: dict[str, int] = {}
    for c in checks:
        counted[c["category"]] = counted.get(c["category"], 0) + 1
    return {"repo": data.get("repo"), "number": data.get("number"),
            "pr_url": data.get("pr_url") or None, "pr_link": web_link(data.get("pr_url")),
            "head_sha": data.get("head_sha") or None, "checks_sha": data.get("checks_sha"),
            "checks": checks,
            "counts": [(k, counted[k]) for k in sorted(counted, key=lambda k: rank.get(
                k, len(rank)))],
            "stale": bool(data.get("checks_sha")) and data.get("checks_sha") != data.get(
                "head_sha")}


def failure_line(read: Callable[[str], bytes | None]) -> str | None:
    """The failure a reproduce run saw, in one line: pytest's first ``E`` line and where it
    was raised, from the log of the latest stage that ran (``logs/stage3.log`` back to
    ``logs/stage1.log``); None when no log holds one."""
    import re

    for stage in ("stage3", "stage2", "stage1"):
        text = _text_of(read(f"logs/{stage}.log"))
        if not text:
            continue
        said = next((ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")), None)
        where = re.search(r"^(\S+:\d+): (\w+)$", text, re.M)
        if said or where:
            parts = [said, f"({where.group(2)} at {where.group(1)})" if where else None]
            line = " ".join(p for p in parts if p)
            return line if len(line) <= 300 else line[:297] + "..."
    return None


def buckets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The batch's rows grouped by bucket, in the order the buckets first appear."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in report["rows"]:
        if not isinstance(row, dict):
            continue
        verdict = row.get("verdict") if isinstance(row.get("verdict"), dict) else {}
        groups.setdefault(str(row.get("bucket")), []).append(
            {"id": row.get("id"), "command": row.get("command"), "note": row.get("note"),
             "refined_command": verdict.get("refined_command")})
    return [{"bucket": name, "rows": rows} for name, rows in groups.items()]


def refactor_diff(folder: Path, data: Any,
                  read: Callable[[str], bytes | None] | None = None,
                  root: Path | None = None) -> str:
    """The unified diff from ``original/<name>`` to the refactored file, or ''.

    The state names the file; it is read only when it is the kind of file a refactor
    works on (``refactored_file``), so a state naming ``/etc/shadow`` shows nothing."""
    if not isinstance(data, dict) or not isinstance(data.get("file"), str):
        return ""
    target = refactored_file(data, root)
    if target is None:
        return ""
    name = Path(data["file"]).name
    before = _text(folder / "original" / name) if read is None else \
        _text_of(read(f"original/{name}"))
    after = _text(target) if target.is_absolute() else None
    if before is None or after is None or before == after:
        return ""
    label = str(data.get("rel") or target.name)
    return "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                        after.splitlines(keepends=True),
                                        f"a/{label}", f"b/{label}"))


def refactored_file(data: dict[str, Any], root: Path | None) -> Path | None:
    """``data.file`` resolved, when it lies inside the workspace ``root`` or is a Python
    file at the repo-relative path ``data.rel`` the flow names (the checkout it refactors);
    None otherwise: a state (or a store row another fleet member wrote) never makes the
    page read a file of its choosing."""
    raw = Path(str(data.get("file")))
    if not raw.is_absolute():
        return None
    try:
        real = raw.resolve()
    except (OSError, RuntimeError):
        return None
    if root is not None:
        try:
            real.relative_to(root.resolve())
            return real
        except ValueError:
            pass
    rel = data.get("rel")
    if isinstance(rel, str) and rel.endswith(".py") and ".." not in Path(rel).parts and \
            real.suffix == ".py" and real.as_posix().endswith("/" + rel.lstrip("/")):
        return real
    return None


def _text(path: Path) -> str | None:
    try:
        if not path.is_file():
            return None
        with path.open(encoding="utf-8", errors="replace") as fh:
            return fh.read(MAX_TEXT)
    except OSError:
        return None


def _bytes(path: Path) -> bytes | None:
    try:
        if not path.is_file():
            return None
        return path.read_bytes()
    except OSError:
        return None


def _text_of(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", errors="replace")[:MAX_TEXT]


def _json_of(data: bytes | None) -> Any:
    try:
        return None if data is None else loads(data)
    except ValueError:
        return None
