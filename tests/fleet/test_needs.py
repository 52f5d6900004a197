"""A machine that takes a campaign item without what the item's flow needs (the checkout,
the venv) refuses it with a JSON error naming what is missing and how to mend it, and the
item goes back to the pool: not lost, not done, taken by a machine that has it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psycopg

from tests import projectenv
from tests.contract.driver import ROOT, Driver
from tests.contract.scenarios import TOY
from tests.refactor.contract import SOURCE


def _items(path: Path, items: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(items))
    return path


def _item(url: str, item: str) -> tuple[Any, ...]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT state, done_count, holder, last_error FROM campaign_items "
                            "WHERE item_id = %s", (item,)).fetchone()


def _worker(ws: Path, url: str, name: str, **env: str) -> Driver:
    return Driver(ws, {**TOY.env, "ORCHESTRATOR_STORE": url, "ORCHESTRATOR_WORKER": name,
                       **env})


def test_an_item_whose_checkout_is_missing_goes_back_for_a_machine_that_has_it(
        tmp_path: Path, pg_url: str) -> None:
    """Worker x lacks item a's checkout: exit 4 machine_lacks naming the path, item a free
    with its error, x's next call takes item b; worker y has the checkout but not the test
    file: refused naming the file; worker w, whose machine has both, takes item a."""
    checkout = tmp_path / "checkout"
    items = _items(tmp_path / "items.json", [
        {"id": "a", "argv": ["refactor", "test/dynamo/test_misc.py", "--pytorch-dir",
                             str(checkout)]},
        {"id": "b", "argv": ["start", "toy", "b"]}])
    x = _worker(tmp_path / "X", pg_url, "x")
    refused = x.call(["campaign", "c", "--items", str(items)])
    assert 4 == refused.code, refused.stderr
    err = refused.spec["error"]
    assert "machine_lacks" == err["code"]
    assert [{"what": "the checkout the item names (--pytorch-dir)", "path": str(checkout),
             "kind": "dir"}] == err["missing"]
    assert str(checkout) in err["message"] and "pool" in err["hint"]
    assert {"name": "c", "item": "a", "given_back": True, "flow_id": None} == err["campaign"]
    state, done, holder, last = _item(pg_url, "a")
    assert ("free", 0, None) == (state, done, holder)
    assert last.startswith("machine_lacks: ") and str(checkout) in last
    assert not (tmp_path / "X" / "refactor").exists()  # nothing of the flow was begun

    nxt = x.call(["campaign", "c"])
    assert (0, "toy/b") == (nxt.code, nxt.spec["flow_id"]), nxt.stderr
    (checkout / "test/dynamo").mkdir(parents=True)  # machine y has the checkout, but not
    y = _worker(tmp_path / "Y", pg_url, "y")         # yet the file
    short = y.call(["campaign", "c"])
    assert (4, [str(checkout / "test/dynamo/test_misc.py")]) == (
        short.code, [m["path"] for m in short.spec["error"]["missing"]])
    (checkout / "test/dynamo/test_misc.py").write_text(SOURCE)
    took = _worker(tmp_path / "Y", pg_url, "w").call(["campaign", "c"])
    assert 0 == took.code, took.stderr
    assert ("refactor/graph/test_misc", True) == (
        took.spec["flow_id"], took.spec["status"] in {"need_agent", "waiting"})
    assert ("leased", 0, "w") == _item(pg_url, "a")[:3]


def test_an_item_given_back_is_not_called_held_by_a_lease(tmp_path: Path, pg_url: str) -> None:
    """After giving its only item back, the worker's next call is nothing_free saying the item
    is free but not for this machine, never that other workers' leases hold it."""
    checkout = tmp_path / "checkout"
    items = _items(tmp_path / "items.json", [
        {"id": "a", "argv": ["refactor", "test/dynamo/test_misc.py", "--pytorch-dir",
                             str(checkout)]}])
    x = _worker(tmp_path / "X", pg_url, "x")
    assert 4 == x.call(["campaign", "c", "--items", str(items)]).code
    again = x.call(["campaign", "c"])
    steps = " ".join(again.spec["next_steps"])
    assert (0, "nothing_free", True, False) == (
        again.code, again.spec["outcome"], "1 item is free but not for this machine" in steps,
        "leases" in steps), again.spec


def test_a_flow_taken_over_where_its_venv_is_missing_is_refused_and_kept(
        tmp_path: Path, pg_url: str) -> None:
    """A reproduce item begun by x with a venv's interpreter; x dies (its lease ends); y, in
    another workspace without that venv, is refused naming the interpreter, the flow's row
    stays byte for byte; z, once the venv is there, resumes the flow."""
    venv = projectenv.lending(tmp_path / "venv").parent
    items = _items(tmp_path / "items.json", [{"id": "calc", "argv": [
        "reproduce", "--profile", "local", "--source-dir", str(ROOT / "examples/calc"),
        "--ci-commit", "a" * 40, "--command", "pytest tests/test_calc.py::test_add"]}])
    env = {"ORCHESTRATOR_REPRODUCE_PYTHON": str(venv / "python")}
    began = _worker(tmp_path / "X", pg_url, "x", **env).call(
        ["campaign", "r", "--items", str(items)])
    assert 0 == began.code and began.spec["status"] != "error", began.stderr
    flow_id = began.spec["flow_id"]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE campaign_items SET lease_until = now() - interval '1 second'")
        row = bytes(conn.execute("SELECT state FROM flows").fetchone()[0])
    (venv / "python").rename(tmp_path / "python.away")  # machine y has no such venv

    refused = _worker(tmp_path / "Y", pg_url, "y").call(["campaign", "r"])
    assert 4 == refused.code, refused.stderr
    err = refused.spec["error"]
    assert "machine_lacks" == err["code"] and flow_id == err["campaign"]["flow_id"]
    assert str(venv / "python") in [m["path"] for m in err["missing"]]
    assert ("free", 0, None) == _item(pg_url, "calc")[:3]
    with psycopg.connect(pg_url) as conn:
        assert row == bytes(conn.execute("SELECT state FROM flows").fetchone()[0])

    (tmp_path / "python.away").rename(venv / "python")
    took = _worker(tmp_path / "Y", pg_url, "z").call(["campaign", "r"])
    assert (0, flow_id) == (took.code, took.spec["flow_id"]), took.stderr
    assert took.spec["status"] != "error"
    assert ("leased", 0, "z") == _item(pg_url, "calc")[:3]
    assert os.path.isdir(tmp_path / "Y" / flow_id)
