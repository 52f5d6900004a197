"""Campaign commands: many harnesses on one list of items through the PostgreSQL store.

Every harness runs the same command; each call works on the item its worker holds, else
claims the next free one (``workspace.campaign``), starts or resumes that item's flow and
prints the flow's spec with a ``campaign`` block (name, item, lease). The flow's printed
commands carry the lease token; every call with it is checked and renews the lease, and when
the flow ends the item is marked done under that token (``flow.cli.leases``); the spec then
says to run the campaign command again for the next item.

The items: ``campaign NAME --items FILE`` (a JSON list of ``{"id", "argv"}``, the start words
of any workflow), ``reproduce --batch FILE --campaign NAME`` (one reproduce flow per entry),
``refactor --campaign NAME --pytorch-dir CHECKOUT`` (each test file of the checkout still on
the test linter's allowlist, or the files given after ``--campaign NAME``), ``review-queue
--campaign NAME`` (each PR of the workspace's review queue, a one-PR batch each).

A machine that lacks what an item's flow needs (``needs``: the checkout, the test file, the
venv it began with) gives the item back and says what is missing (``MachineLacks``).
"""

from __future__ import annotations

import argparse
import os
import socket
from pathlib import Path
from typing import Any

from flow.core.bounds import refuse_repeated
from flow.core.errors import OrchestratorError, UsageError, WorkflowInputError
from workspace.jsonio import loads

ENV_WORKER = "ORCHESTRATOR_WORKER"
ENV_LEASE = "ORCHESTRATOR_LEASE_S"
ENV_MAX_CLAIMS = "ORCHESTRATOR_MAX_CLAIMS"
ALLOWLIST = "tools/linter/adapters/test_linter_allowlist.json"
MAX_ROUNDS = 50  # items finished within one call before it stops and prints


def worker_name(env: dict[str, str] | os._Environ[str]) -> str:
    """The worker a call acts for: ``ORCHESTRATOR_WORKER``, else this machine's name."""
    return env.get(ENV_WORKER, "").strip() or socket.gethostname()


def lease_seconds(env: Any) -> float | None:
    """This worker's ``ORCHESTRATOR_LEASE_S`` (None when unset: the campaign's length)."""
    from flow.core.bounds import Range, setting

    if not env.get(ENV_LEASE, "").strip():
        return None
    return float(setting(env, ENV_LEASE, Range(1, 7 * 86400, whole=False, unit="of seconds"),
                         0))


def max_claims(env: Any) -> int:
    """``ORCHESTRATOR_MAX_CLAIMS``: how many claims an item may take before it is parked for
    a person (default 3)."""
    from flow.core.bounds import Range, setting
    from workspace.campaign import DEFAULT_MAX_CLAIMS

    return int(setting(env, ENV_MAX_CLAIMS, Range(1, 1000, unit="of claims"),
                       DEFAULT_MAX_CLAIMS))


def items_for(args: argparse.Namespace, words: list[str], root: Path) -> tuple[str, list[
        tuple[str, dict[str, Any]]]] | None:
    """(kind, items) the command line defines, or None (work on an existing campaign)."""
    if getattr(args, "items", None):
        return "items", _items_file(Path(args.items))
    if args.batch:
        return "reproduce", _batch_items(args)
    if args.command == "refactor":
        return "refactor", _refactor_items(args, [args.file] if args.file else [])
    if args.command == "review-queue":
        return "review-queue", review_items(args, root)
    return None


def review_items(args: argparse.Namespace, root: Path) -> list[tuple[str, dict[str, Any]]]:
    """One item per PR of the workspace's review queue (``pr_needs_review.txt``, in its
    order, each PR once): the one-PR batch ``review-queue --repo OWNER/NAME --pr-number N``
    (its own review and comment). Lines that are no PR are left for a day's batch."""
    from flow.workflows.review_queue import queue as core
    from flow.workflows.review_queue.declaration import QUEUE_FILE

    path = root / QUEUE_FILE
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise WorkflowInputError(f"cannot read the review queue {str(path)!r}: "
                                 f"{exc.strerror or exc}", "create it with one PR per line (a "
                                 "PR URL or owner/repo#N), or join the campaign with "
                                 "'campaign NAME'") from None
    default_repo = args.repo or core.load_profile(args.profile).default_repo
    items: dict[str, dict[str, Any]] = {}
    for line in lines:
        ref = core.parse_line(line, default_repo)
        if ref is None or ref.key in items:
            continue
        argv = ["review-queue", "--repo", ref.repo, "--pr-number", str(ref.number)]
        if args.profile:
            argv += ["--profile", str(args.profile)]
        items[ref.key] = {"argv": argv}
    if not items:
        raise WorkflowInputError(f"the review queue {str(path)!r} names no PR",
                                 "add one PR per line (a PR URL or owner/repo#N)")
    return list(items.items())


MAX_ITEMS = 20000           # items of one items file (each a whole flow)
MAX_ITEMS_BYTES = 8 << 20   # an items file larger is refused before it is parsed
MAX_ITEM_ID = 200           # characters of an item id
MAX_ITEM_WORDS = 200        # start words of one item
NOT_FLOWS = ("status", "campaign", "schema", "graph", "serve", "demo", "affected-tests")
NOT_IN_ITEMS = ("flow", "resume", "feed", "feed_file", "answer", "campaign", "items", "help",
                "workspace", "store", "harness")  # the campaign supplies or forbids these


def _read_json(path: Path, what: str, limit: int = MAX_ITEMS_BYTES) -> Any:
    """The JSON of a file someone names: a regular file of at most ``limit`` bytes (no FIFO
    that hangs, no ``/dev/zero`` that fills memory), read once (``flow.core.boundedfile``)."""
    from flow.core.boundedfile import UnreadableFile, read_regular

    try:
        return loads(read_regular(path.expanduser(), limit))
    except UnreadableFile as exc:
        raise WorkflowInputError(f"{what} {str(path)!r} {exc.reason}",
                                 f"give the {what} as a regular JSON file of at most {limit} "
                                 "bytes") from None
    except ValueError as exc:
        raise WorkflowInputError(f"{what} {str(path)!r} is not JSON: {exc}",
                                 f"fix the {what}") from None


def _items_file(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """The items of ``campaign NAME --items FILE``: at most ``MAX_ITEMS``, each a unique
    printable id and the start words of a flow (``check_start_words``)."""
    raw = _read_json(path, "items file")
    if isinstance(raw, list) and len(raw) > MAX_ITEMS:
        raise WorkflowInputError(f"items file {str(path)!r} lists {len(raw)} items, more than "
                                 f"the limit of {MAX_ITEMS}",
                                 "split it into several campaigns")
    ok = isinstance(raw, list) and raw and all(
        isinstance(i, dict) and isinstance(i.get("id"), str) and i["id"]
        and isinstance(i.get("argv"), list) and i["argv"]
        and all(isinstance(w, str) for w in i["argv"]) for i in raw)
    if not ok:
        raise WorkflowInputError(f"items file {str(path)!r} is not a list of "
                                 '{"id": "...", "argv": ["reproduce", "--command", "..."]}',
                                 "give each item a unique id and the start words of its flow")
    refuse_repeated((i["id"] for i in raw), f"items file {str(path)!r}")
    for n, item in enumerate(raw, 1):
        check_item(n, item["id"], item["argv"])
    return [(i["id"], {"argv": list(i["argv"])}) for i in raw]


def check_item(n: int, item_id: str, argv: list[str]) -> None:
    """Item ``n``: an id of 1 to ``MAX_ITEM_ID`` printable characters (no NUL, newline or
    line separator), start words without NUL that start a flow; ``WorkflowInputError``."""
    if not (len(item_id) <= MAX_ITEM_ID and item_id.isprintable() and item_id.strip()):
        raise WorkflowInputError(
            f"item {n}'s id {item_id[:MAX_ITEM_ID]!r} is not 1 to {MAX_ITEM_ID} printable "
            "characters", "name each item with letters, digits and punctuation (no control "
                          "character, NUL or line break)")
    if len(argv) > MAX_ITEM_WORDS or any("\x00" in w for w in argv):
        raise WorkflowInputError(f"item {item_id!r} has more than {MAX_ITEM_WORDS} start words "
                                 "or a NUL byte in one", "give the start words of one flow")
    check_start_words(item_id, argv)


def check_start_words(item_id: str, argv: list[str]) -> None:
    """Refuse start words that start no flow (``status``, ``--flow ID --resume``, a campaign,
    a bad flag): a campaign item is always a flow a worker can drive to its end."""
    from flow.cli.argv import parse

    hint = ('give the start words of a flow, e.g. ["reproduce", "--command", "pytest x.py"] or '
            '["start", "WORKFLOW", ...]; the campaign adds --workspace, --store and --harness')
    try:
        args, _ = parse(list(argv))
    except OrchestratorError as err:
        raise WorkflowInputError(f"item {item_id!r}: {err.message}", hint) from None
    words = list(args.args)
    given = [f"--{n.replace('_', '-')}" for n in NOT_IN_ITEMS if getattr(args, n, None)]
    if args.command is None or args.command in NOT_FLOWS or given:
        what = " ".join(given) if given else (args.command or "no command")
        raise WorkflowInputError(f"item {item_id!r}'s start words {argv!r} start no flow "
                                 f"({what})", hint)
    if args.command == "start":
        from flow.workflows import registry

        if len(words) < 2 or words[1] not in registry.names():
            raise WorkflowInputError(f"item {item_id!r} starts no known workflow ({argv!r})",
                                     f"{hint}; workflows: {', '.join(registry.names())}")


_ENTRY_FLAGS = (("failure_pattern", "--failure-pattern"), ("stage", "--stage"),
                ("ci_repo", "--ci-repo"), ("repeat", "--repeat"), ("timeout", "--timeout"))
# what the command line holds for an entry flag it was not given (nothing to repeat then)
_FLAG_DEFAULTS: dict[str, Any] = {"stage": "auto"}
_CALL_FLAGS = (("profile", "--profile"), ("source_dir", "--source-dir"),
               ("ci_commit", "--ci-commit"), ("test_extras", "--test-extras"))


def _batch_items(args: argparse.Namespace) -> list[tuple[str, dict[str, Any]]]:
    from flow.workflows.reproduce.batch.limits import MAX_BATCH_BYTES, MAX_ENTRIES

    raw = _read_json(Path(args.batch), "batch file", MAX_BATCH_BYTES)
    entries = raw.get("entries") if isinstance(raw, dict) else raw
    if not isinstance(entries, list) or not entries:
        raise WorkflowInputError(f"batch file {args.batch!r} holds no list of entries",
                                 'give a JSON list of {"id": ..., "command": ...}')
    if len(entries) > MAX_ENTRIES:
        raise WorkflowInputError(f"batch file {args.batch!r} lists {len(entries)} entries, "
                                 f"more than the limit of {MAX_ENTRIES}",
                                 "split it into several batches")
    common: list[str] = []
    for name, flag in _CALL_FLAGS:
        value = getattr(args, name, None)
        if value is not None:
            common += [flag, str(Path(value).resolve()) if name == "source_dir" else str(value)]
    for n, entry in enumerate(entries, 1):
        if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
            raise WorkflowInputError(f"batch entry {n} has no command",
                                     'give every entry a "command" string')
    refuse_repeated((str(e.get("id") or f"entry-{n}") for n, e in enumerate(entries, 1)),
                    f"batch file {args.batch!r}")
    items = []
    for n, entry in enumerate(entries, 1):
        argv = ["reproduce", "--command", entry["command"], *common]
        for key, flag in _ENTRY_FLAGS:
            # the entry's own value, else the command line's (as reproduce --batch does)
            value = entry.get(key)
            if value is None and getattr(args, key, None) not in (None, _FLAG_DEFAULTS.get(key)):
                value = getattr(args, key)
            if value is not None:
                argv += [flag, str(value)]
        item_id = str(entry.get("id") or f"entry-{n}")
        check_item(n, item_id, argv)
        items.append((item_id, {"argv": argv}))
    return items


def _refactor_items(args: argparse.Namespace, files: list[str]) -> list[tuple[str, dict[str,
                                                                                        Any]]]:
    checkout = Path(args.source_dir or ".").expanduser().resolve()
    if not files:
        files = allowlisted_tests(checkout)
    return [(f, {"argv": ["refactor", f, "--pytorch-dir", str(checkout)]}) for f in files]


def allowlisted_tests(checkout: Path) -> list[str]:
    """The test files of ``checkout`` still on the test linter's allowlist (a JSON list of
    repo-relative paths, or an object mapping them to true), that exist in the checkout."""
    path = checkout / ALLOWLIST
    if not path.is_file():
        raise WorkflowInputError(f"{str(checkout)!r} has no {ALLOWLIST}",
                                 "pass --pytorch-dir a PyTorch checkout, or list the test files "
                                 "after --campaign NAME")
    raw = _read_json(path, "test linter allowlist")
    listed = [k for k, v in raw.items() if v] if isinstance(raw, dict) else raw
    if not isinstance(listed, list) or not all(isinstance(p, str) for p in listed):
        raise WorkflowInputError(f"{str(path)!r} is not a list of paths",
                                 "the allowlist is a JSON list of repo-relative test files")
    return sorted(p for p in listed if (checkout / p).is_file())


def open_campaign(name: str, args: argparse.Namespace, words: list[str], root: Path,
                  url: str | None) -> tuple[Any, Any]:
    """The store's connection, once the campaign is defined (if the command lists items),
    and what the definition did (a ``workspace.campaign.Defined``; None without one)."""
    from workspace import campaign as camp
    from workspace import campaignstatus
    from workspace.pgconn import connect

    if url is None:
        raise UsageError("campaigns need the PostgreSQL store",
                         "add --store postgresql://USER@HOST:PORT/DB (or export "
                         "ORCHESTRATOR_STORE); every harness of the fleet uses the same URL")
    conn = connect(url)
    given = items_for(args, words, root)
    defined = None
    if given is not None:
        kind, items = given
        defined = guard(url, "defining the campaign", camp.define, conn, name, kind, items,
                        lease_seconds(os.environ) or camp.DEFAULT_LEASE_S)
    elif guard(url, "reading the campaign", campaignstatus.summary, conn, name) is None:
        raise UsageError(f"no campaign {name!r} in the store",
                         "define it first: campaign NAME --items FILE, reproduce --batch FILE "
                         "--campaign NAME, or refactor --campaign NAME --pytorch-dir CHECKOUT")
    return conn, defined


def say_added(out: dict[str, Any], defined: Any, name: str) -> None:
    """Put what this call's definition did in its answer (``defined``: items, added,
    was_finished); new items added to a campaign that had items before are said in
    ``next_steps`` too, a finished campaign's especially (it runs again for them)."""
    if defined is None or not isinstance(out, dict) or "defined" in out:
        return
    out["defined"] = {"campaign": name, "items": defined.items, "added": defined.added,
                      "was_finished": defined.was_finished}
    if defined.added and defined.items > defined.added:
        line = (f"campaign {name!r}: {defined.added} new item(s) added ({defined.items} in "
                "all)")
        if defined.was_finished:
            line += "; it had finished, and its workers now take the new items"
        steps = out.get("next_steps")
        if isinstance(steps, list):
            steps.insert(0, line)
        elif "error" not in out and "code" not in out:
            out["next_steps"] = [line]


def person_action(args: argparse.Namespace) -> tuple[str, str, int] | None:
    """``--requeue ID`` or ``--drop ID`` with ``--lease TOKEN``: (what, item, token); None
    for a worker's call. A usage error for a half or doubled one."""
    wanted = [(w, getattr(args, w, None)) for w in ("requeue", "drop")]
    given = [(w, v) for w, v in wanted if v is not None]
    token = getattr(args, "lease", None)
    if not given:
        if token is not None:
            raise UsageError("the campaign command takes --lease only with --requeue or --drop",
                             "drop --lease: a worker's campaign call claims its own lease")
        return None
    if len(given) > 1:
        raise UsageError("give --requeue or --drop, not both", "run one of them")
    what, item = given[0]
    if token is None:
        raise UsageError(f"--{what} {item} needs --lease TOKEN, the item's token",
                         "run 'status --campaign NAME': each item shows its token (and the "
                         "commands that requeue or drop it); a stale token is refused")
    return what, str(item), int(token)


def act_for_person(conn: Any, name: str, url: str, root: Path, harness: str, what: str,
                   item: str, token: int) -> dict[str, Any]:
    """Requeue or drop one item for a person, fenced by the token they saw."""
    from flow.core.render import envelope
    from workspace import campaign as camp

    done = guard(url, f"{what}ing the item", camp.requeue if what == "requeue" else camp.drop,
                 conn, name, item, token)
    steps = ([f"item {item!r} is back in the pool (claims from 0): the next worker's campaign "
              "call takes it and resumes its flow"] if what == "requeue" else
             [f"item {item!r} is dropped: no worker takes it; the campaign ends without it"])
    return envelope(None, root, "done", harness,
                    outcome="item_dropped" if what == "drop" else "item_requeued",
                    campaign={"name": name, **done}, next_steps=steps)


def claim_next(conn: Any, name: str, url: str) -> Any:
    """The item this worker holds or takes now (a ``workspace.campaign.Lease``), or None."""
    from flow.core import proc
    from workspace import campaign as camp

    return guard(url, "claiming an item", camp.claim, conn, name, worker_name(os.environ),
                 socket.gethostname(), os.getpid(), lease_seconds(os.environ),
                 max_claims(os.environ), proc.foreground_s())


def finished(conn: Any, name: str, url: str, root: Path, harness: str) -> dict[str, Any]:
    """The object printed when this worker finds nothing to take: ``campaign_finished``, or
    ``nothing_free`` with ``poll_after_s`` (when the soonest lease ends) and the items parked
    for a person."""
    from flow.cli.person import counted
    from flow.core.render import envelope
    from workspace.campaignstatus import summary

    info = guard(url, "reading the campaign", summary, conn, name)
    left = info["left"] if info else 0
    parked = info["by_state"]["parked"] if info else 0
    held = left - parked
    if held == 0:  # nothing free or leased: only done, dropped or parked items are left
        steps = [f"campaign {name!r} is finished: every item is done" + (
            "" if not info or not info["by_state"]["dropped"] else
            f" or dropped ({info['by_state']['dropped']} dropped)")]
        if parked:
            steps = [f"campaign {name!r} is finished but for "
                     f"{counted(parked, 'item')} parked for a person after too many claims, "
                     "which no worker takes: "
                     + "; ".join(_parked_line(p, name) for p in info["parked"][:20])]
        if info and info["kind"] == "reproduce":
            from flow.cli.campaignreport import write_report

            info["report"] = guard(url, "reading the campaign's verdicts", write_report, conn,
                                   name, root)
            steps.append(f"read {info['report']['report_path']}")
        fields: dict[str, Any] = {"parked": [p["item"] for p in info["parked"]]} \
            if parked else {}
        return envelope(None, root, "done", harness, outcome="campaign_finished", campaign=info,
                        next_steps=steps, **fields)
    leased = info["by_state"]["leased"] if info else held
    free = held - leased  # left free only because this machine gave them back: it lacks their needs
    steps = []
    if leased:
        steps.append(f"{counted(leased, 'item is', 'items are')} held by other workers' leases; "
                     "run this command again after poll_after_s: an item whose harness died "
                     "comes back when its lease ends")
    if free:
        steps.append(f"{counted(free, 'item is', 'items are')} free but not for this machine, "
                     "which lacks what they need (it gave them back, saying what is missing): a "
                     f"machine that has it takes them; see 'status --campaign {name}'")
    if parked:
        steps.append(f"{counted(parked, 'item is', 'items are')} parked for a person after "
                     f"too many claims (ORCHESTRATOR_MAX_CLAIMS): see 'status --campaign {name}'")
    soonest = info.get("next_lease_end_s") if info else None
    wait = 60 if soonest is None else int(min(600.0, max(5.0, soonest + 1)))
    return envelope(None, root, "done", harness, outcome="nothing_free", campaign=info,
                    poll_after_s=wait, next_steps=steps)


def _parked_line(item: dict[str, Any], name: str) -> str:
    """A parked item for a person: why, and the commands that requeue or drop it."""
    import shlex

    why = (item.get("last_error") or "-")[:200]
    return (f"{item['item']!r} (claimed {item['claims']} times; {why}"
            f"): requeue it with 'campaign {shlex.quote(name)} --requeue "
            f"{shlex.quote(item['item'])} --lease {item['token']}' or drop it with "
            f"'--drop {shlex.quote(item['item'])} --lease {item['token']}'")


class MachineLacks(OrchestratorError):
    """The machine that took a campaign item lacks what the item's flow needs (exit 4); the
    item went back to the pool."""

    code = "machine_lacks"
    exit_code = 4


# What a flow started or recorded needs on the machine that works on it: fields of its
# state's data (any workflow's) that name a path, and what the path must be.
NEEDS_IN_STATE = (
    ("source_dir", "dir", "the checkout the flow works on (--source-dir)"),
    ("repo", "dir", "the PyTorch checkout the flow works on (--pytorch-dir)"),
    ("file", "file", "the test file the flow refactors"),
    ("reproduce_python", "exe", "the interpreter (venv) the flow was started with "
                                "(ORCHESTRATOR_REPRODUCE_PYTHON)"),
    ("python", "exe", "the interpreter (venv) of the stage the flow is in"),
    ("test_python", "exe", "the interpreter (venv) the flow's tests run under"),
)


def _lacks(path: str, kind: str) -> bool:
    p = Path(path)
    if kind == "dir":
        return not p.is_dir()
    if kind == "file":
        return not p.is_file()
    return not (p.is_file() and os.access(p, os.X_OK))


def needs(lease: Any, conn: Any, root: Path, url: str) -> list[dict[str, str]]:
    """What the item's flow needs here (``what``, ``path``, ``kind``), from its start words
    (the checkout, the test file in it, a command file, the interpreter from the
    environment) and, for a flow already begun, from its state (paths moved to this
    workspace as a load would)."""
    from workspace.pgoutputs import rebase

    out: list[dict[str, str]] = []
    argv = list(lease.argv)

    def need(what: str, path: str, kind: str) -> None:
        if path and _lacks(path, kind) and path not in [n["path"] for n in out]:
            out.append({"what": what, "path": path, "kind": kind})

    checkout = None
    for i, word in enumerate(argv[:-1]):
        if word in ("--source-dir", "--pytorch-dir"):
            checkout = argv[i + 1]
            need("the checkout the item names (" + word + ")", checkout, "dir")
        elif word == "--repo-dir":
            need("the git checkout the item names (--repo-dir)", argv[i + 1], "dir")
        elif word == "--command-file":
            need("the command file the item names", argv[i + 1], "file")
    if argv[:1] == ["refactor"] and len(argv) > 1 and not argv[1].startswith("-"):
        file = Path(argv[1])
        if not file.is_absolute() and checkout is not None:
            file = Path(checkout) / file
        if checkout is None or Path(checkout).is_dir():
            need("the test file the item refactors", str(file), "file")
    if lease.flow_id is None:
        python = os.environ.get("ORCHESTRATOR_REPRODUCE_PYTHON", "").strip()
        if argv[:1] == ["reproduce"] and python:
            need("the interpreter (venv) ORCHESTRATOR_REPRODUCE_PYTHON names",
                 os.path.abspath(os.path.expanduser(python)), "exe")
        return out
    row = guard(url, "reading the item's flow", lambda: conn.execute(
        "SELECT state, root FROM flows WHERE flow_id = %s", (lease.flow_id,)).fetchone())
    if row is None:
        return out
    try:
        data = loads(rebase(bytes(row[0]), row[1], str(root))).get("data") or {}
    except (ValueError, AttributeError):
        return out  # an unreadable state is the flow's own error, reported when it loads
    for key, kind, what in NEEDS_IN_STATE:
        value = data.get(key) if isinstance(data, dict) else None
        if isinstance(value, str) and os.path.isabs(value):
            need(what, value, kind)
    return out


def refuse_if_lacking(conn: Any, lease: Any, root: Path, url: str) -> None:
    """Give the item back and raise ``MachineLacks`` when this machine lacks what its flow
    needs; nothing of the flow is touched."""
    from workspace import campaign as camp

    missing = needs(lease, conn, root, url)
    if not missing:
        return
    listing = "; ".join(f"{m['what']}: {m['path']}" for m in missing)
    inside = [m["path"] for m in missing if Path(m["path"]).is_relative_to(root)]
    given = guard(url, "giving the item back", camp.give_back, conn, lease,
                  worker_name(os.environ), f"{MachineLacks.code}: {listing}")
    hint = ("make each named path exist on this machine (check the checkout out at that "
            "path, create the venv), then run the campaign command again; meanwhile the item "
            "is back in the pool for a machine that has them, and this worker's next call "
            "takes another item")
    if inside:
        hint += ("; a path inside the workspace was built in the flow folder by the machine "
                 "that began the flow (builds stay on their machine): that machine can carry "
                 "on, or a person restarts the flow with --restart to build it anew")
    raise MachineLacks(
        f"this machine lacks what campaign item {lease.item_id!r} needs: {listing}", hint,
        missing=missing, campaign={"name": lease.campaign, "item": lease.item_id,
                                   "given_back": given, "flow_id": lease.flow_id})


def refuse_if_no_flow(conn: Any, lease: Any, url: str) -> None:
    """A claimed item whose start words start no flow (defined before they were checked):
    finished as ``refused``, so it neither stays leased nor is taken again, and the call
    answers ``bad_input`` naming it."""
    if lease.flow_id:
        return
    try:
        check_start_words(lease.item_id, list(lease.argv))
    except WorkflowInputError as err:
        from workspace import campaign as camp

        guard(url, "refusing the item", camp.complete, conn, lease.campaign, lease.item_id,
              lease.token, {"outcome": "refused", "error": f"{err.code}: {err.message}"})
        err.details["campaign"] = {"name": lease.campaign, "item": lease.item_id,
                                   "refused": True}
        raise


def item_argv(lease: Any, root: Path, url: str, harness: str) -> list[str]:
    """The command line that starts (first claim) or resumes (later ones) the item's flow."""
    sticky = ["--workspace", str(root), "--store", url, "--harness", harness,
              "--lease", str(lease.token)]
    return [*(["--flow", lease.flow_id, "--resume"] if lease.flow_id else lease.argv), *sticky]


def say_lease(spec: dict[str, Any], lease: Any) -> None:
    """Put the lease's length in the spec's ``campaign`` block, and say so when this worker's
    ``ORCHESTRATOR_LEASE_S`` differs from the length the campaign was defined with (each
    worker's own setting sets its leases; one without it gets the campaign's)."""
    block = spec.get("campaign")
    if not isinstance(block, dict):
        return
    block["lease_s"] = lease.lease_s
    if lease.asked_s < lease.lease_s:
        from flow.core.proc import FOREGROUND_ENV

        block["lease_note"] = (
            f"the lease asked for, {lease.asked_s:g} s ({ENV_LEASE} or the campaign's), is "
            f"shorter than one call's foreground budget ({FOREGROUND_ENV}): raised to "
            f"{lease.lease_s:g} s, so that one call never outlasts its lease; set "
            f"{ENV_LEASE} to at least the budget")
        import sys

        sys.stderr.write(f"warning: {block['lease_note']}\n")
    elif lease.lease_s != lease.campaign_lease_s:
        block["lease_note"] = (
            f"this worker's leases last {lease.lease_s:g} s ({ENV_LEASE}); campaign "
            f"{lease.campaign!r} was defined with {lease.campaign_lease_s:g} s, which workers "
            f"without {ENV_LEASE} get")


def note_failure(url: str, lease: Any, err: OrchestratorError) -> None:
    """Keep a failed call's error on its item (the lease stays: the next call retries)."""
    from workspace import campaign as camp
    from workspace.pgconn import connect

    guard(url, "recording the item's error", camp.note_error, connect(url), lease.campaign,
          lease.item_id, lease.token, f"{err.code}: {err.message}")
    err.details.setdefault("campaign", {"name": lease.campaign, "item": lease.item_id})


def guard(url: str, doing: str, fn: Any, *a: Any) -> Any:
    """``fn(*a)`` with a database error turned into ``StoreUnavailable``."""
    import psycopg

    from workspace.pgerrors import unavailable

    try:
        return fn(*a)
    except psycopg.Error as exc:
        raise unavailable(url, exc, doing) from None
