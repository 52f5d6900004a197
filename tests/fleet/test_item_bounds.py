"""``campaign NAME --items FILE`` is read like a batch file: a regular file of bounded size
(no FIFO that hangs, no ``/dev/zero`` that fills memory), a bounded number of items, each a
printable id and the start words of a flow; every refusal is ``bad_input`` (exit 2), before
any item is defined or leased."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psycopg
import pytest

from flow.cli.campaigns import MAX_ITEMS
from tests.contract.driver import Call, Driver

TOY_ENV = {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow", "ORCHESTRATOR_WORKER": "w1"}


def _campaign(tmp: Path, url: str, items: str) -> Call:
    return Driver(tmp / "ws", {**TOY_ENV, "ORCHESTRATOR_STORE": url}).call(
        ["campaign", "c1", "--items", items])


def _rows(url: str) -> list[Any]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT * FROM campaign_items").fetchall()


def _refused(call: Call, words: str) -> None:
    assert call.spec is not None, call.stderr
    assert (2, "bad_input") == (call.code, call.spec["error"]["code"]), call.spec
    assert words in call.spec["error"]["message"], call.spec["error"]["message"]


@pytest.mark.parametrize("what", ["fifo", "/dev/zero", "folder"])
def test_an_items_file_that_is_no_regular_file_is_refused_at_once(
        tmp_path: Path, pg_url: str, what: str) -> None:
    """A FIFO nobody writes, an endless device, a folder: refused, saying which."""
    path = tmp_path / "items.json"
    if what == "fifo":
        os.mkfifo(path)
    elif what == "folder":
        path.mkdir()
    else:
        path = Path(what)
    _refused(_campaign(tmp_path, pg_url, str(path)), "is not a regular file")
    assert [] == _rows(pg_url)


def test_a_million_items_are_refused_fast(tmp_path: Path, pg_url: str) -> None:
    """Past the size limit: refused before parsing (within the driver's bound)."""
    path = tmp_path / "items.json"
    path.write_text(json.dumps([{"id": str(n), "argv": ["start", "toy", str(n)]}
                                for n in range(1_000_000)]))
    _refused(_campaign(tmp_path, pg_url, str(path)), "more than the limit")
    assert [] == _rows(pg_url)


def test_more_items_than_the_limit_are_refused(tmp_path: Path, pg_url: str) -> None:
    """Under the size limit but over the count: refused naming both numbers."""
    path = tmp_path / "items.json"
    path.write_text(json.dumps([{"id": str(n), "argv": ["start", "toy", "x"]}
                                for n in range(MAX_ITEMS + 1)]))
    _refused(_campaign(tmp_path, pg_url, str(path)), f"{MAX_ITEMS + 1} items")
    assert [] == _rows(pg_url)


@pytest.mark.parametrize(("item", "words"), [
    ({"id": "a\u0000b", "argv": ["start", "toy", "a"]}, "printable"),
    ({"id": "a\nb", "argv": ["start", "toy", "a"]}, "printable"),
    ({"id": "a\u2028b", "argv": ["start", "toy", "a"]}, "printable"),
    ({"id": "x" * 201, "argv": ["start", "toy", "a"]}, "printable"),
    ({"id": "nul-word", "argv": ["start", "toy", "a\u0000"]}, "NUL"),
    ({"id": "st", "argv": ["status"]}, "start no flow"),
    ({"id": "gr", "argv": ["graph", "toy"]}, "start no flow"),
    ({"id": "fl", "argv": ["--flow", "toy/a", "--resume"]}, "start no flow"),
    ({"id": "ca", "argv": ["campaign", "other"]}, "start no flow"),
    ({"id": "so", "argv": ["start", "toy", "a", "--store", "/tmp/elsewhere"]}, "--store"),
    ({"id": "nw", "argv": ["start", "nosuchflow"]}, "no known workflow"),
    ({"id": "bf", "argv": ["reproduce", "--no-such-flag"]}, "bad command line"),
])
def test_an_item_with_a_bad_id_or_start_words_is_refused_and_nothing_leased(
        tmp_path: Path, pg_url: str, item: dict[str, Any], words: str) -> None:
    """One bad item refuses the file: no item is defined, so none can stay leased."""
    path = tmp_path / "items.json"
    path.write_text(json.dumps([{"id": "ok", "argv": ["start", "toy", "ok"]}, item]))
    _refused(_campaign(tmp_path, pg_url, str(path)), words)
    assert [] == _rows(pg_url)


def test_an_item_defined_before_the_check_is_refused_when_claimed_and_not_kept(
        tmp_path: Path, pg_url: str) -> None:
    """An item already in the store whose start words are ["status"]: the worker that claims
    it answers bad_input, the item is finished as refused (not leased), the next is taken."""
    from workspace import campaign as camp
    from workspace.pgconn import connect

    camp.define(connect(pg_url, fresh=True), "old", "items",
                [("st", {"argv": ["status"]}), ("ok", {"argv": ["start", "toy", "ok"]})])
    drv = Driver(tmp_path / "ws", {**TOY_ENV, "ORCHESTRATOR_STORE": pg_url})
    first = drv.call(["campaign", "old"])
    _refused(first, "start no flow")
    assert {"name": "old", "item": "st", "refused": True} == first.spec["error"]["campaign"]
    with psycopg.connect(pg_url) as conn:
        state, result = conn.execute("SELECT state, result FROM campaign_items WHERE "
                                     "item_id = 'st'").fetchone()
    assert ("done", "refused") == (state, result["outcome"])  # jsonb: read as a dict
    second = drv.call(["campaign", "old"])
    assert second.spec is not None and "ok" == second.spec["campaign"]["item"], second.spec
