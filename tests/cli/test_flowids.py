"""`--flow ID` without the workflow folder, or a prefix, finds the one flow it names; several
or none (but close ones) is a clear error listing them (exit 2), every flow untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.driver import Driver
from tests.contract.inproc import call

CALC = Path(__file__).resolve().parents[2] / "examples" / "calc"
FAILING = "pytest tests/test_calc.py::test_mean_of_ints_keeps_the_fraction"


@pytest.fixture
def toys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace with the toy flows alpha-1, alpha-2 and solitary."""
    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", "tests.contract.toyflow")
    ws = tmp_path / "ws"
    for name in ("alpha-1", "alpha-2", "solitary"):
        code, spec = call(["--workspace", str(ws), "start", "toy", name])
        assert 0 == code, spec
    return ws


def _states(ws: Path) -> dict[str, bytes]:
    return {str(p.relative_to(ws)): p.read_bytes() for p in sorted(ws.rglob("flow_state.json"))}


@pytest.mark.parametrize("given", ["solitary", "solit", "toy/solit", "alpha-2"])
def test_a_short_id_naming_one_flow_resumes_it(toys: Path, given: str) -> None:
    """The id without its workflow folder, or the start of one, resumes that flow."""
    code, spec = call(["--workspace", str(toys), "--flow", given, "--resume"])
    expected = "toy/alpha-2" if given == "alpha-2" else "toy/solitary"
    assert (0, expected) == (code, spec["flow_id"]), spec


def test_a_short_id_feeds_the_flow_it_names(toys: Path) -> None:
    """--feed with a short id acts on the full flow (the feed file is the flow's own)."""
    _, first = call(["--workspace", str(toys), "--flow", "toy/solitary", "--resume"])
    task = first["tasks"][0]
    Path(task["feed_file"]).write_text('{"ok": true, "value": 1}')
    code, spec = call(["--workspace", str(toys), "--flow", "solitary", "--feed", task["feed_as"],
                       "--feed-file", task["feed_file"]])
    assert (0, "toy/solitary") == (code, spec["flow_id"]), spec


def test_several_matches_are_listed_and_nothing_changes(toys: Path) -> None:
    """`--flow alpha` matches two flows: ambiguous_flow (exit 2) listing both; no state moves."""
    before = _states(toys)
    code, spec = call(["--workspace", str(toys), "--flow", "alpha", "--resume"])
    error = spec["error"]
    assert (2, "ambiguous_flow", ["toy/alpha-1", "toy/alpha-2"]) == (
        code, error["code"], error["candidates"])
    assert "toy/alpha-1" in error["message"] and error["hint"]
    assert before == _states(toys)


def test_no_match_but_close_ones_are_suggested(toys: Path) -> None:
    """A typo of a flow id is flow_not_found (exit 2) with `did you mean` and the candidates."""
    code, spec = call(["--workspace", str(toys), "--flow", "toy/aplha-1", "--resume"])
    error = spec["error"]
    assert (2, "flow_not_found", "toy/alpha-1") == (code, error["code"], error["candidates"][0])
    assert "did you mean toy/alpha-1" in error["hint"]


def test_nothing_close_is_the_plain_not_found(toys: Path) -> None:
    """An id like no flow at all keeps the usual flow_not_found, with no candidates."""
    code, spec = call(["--workspace", str(toys), "--flow", "zzzzzzzz", "--resume"])
    assert (2, "flow_not_found", None) == (code, spec["error"]["code"],
                                           spec["error"].get("candidates"))


def test_a_moved_aside_flow_is_never_matched(toys: Path) -> None:
    """After --restart, the old copy (<id>.old-<stamp>) is not a second match."""
    code, _ = call(["--workspace", str(toys), "start", "toy", "solitary", "--restart"])
    assert 0 == code and list((toys / "toy").glob("solitary.old-*"))
    code, spec = call(["--workspace", str(toys), "--flow", "solitary", "--resume"])
    assert (0, "toy/solitary") == (code, spec["flow_id"]), spec


@pytest.mark.parametrize("given, ids, expected", [
    ("abc", ["r/abcdef-1"], []),                       # a prefix under four characters: none
    ("abcd", ["r/abcdef-1", "r/abcdzz-2"], ["r/abcdef-1", "r/abcdzz-2"]),
    ("core/t", ["refactor/core/t", "refactor/core/tx"], ["refactor/core/t"]),  # whole tail wins
    ("t", ["refactor/core/t", "refactor/core/tx"], ["refactor/core/t"]),
])
def test_matching_rules(given: str, ids: list[str], expected: list[str]) -> None:
    """A whole tail of an id beats a prefix; a prefix needs four characters."""
    from flow.cli.flowids import matches, tails

    assert (expected, ["a/b/c", "b/c", "c"]) == (matches(given, ids), tails("a/b/c"))


def test_a_reproduce_flow_is_found_by_its_hash_alone(tmp_path: Path) -> None:
    """The hash of reproduce/<hash> (what a person copies from a log) resumes that flow."""
    drv = Driver(tmp_path / "ws")
    first = drv.call(["reproduce", "--profile", "local", "--source-dir", str(CALC),
                      "--command", FAILING])
    assert first.spec is not None and first.code == 0, first.stderr
    flow_id = first.spec["flow_id"]
    again = drv.call(["--flow", flow_id.split("/", 1)[1], "--resume"])
    short = drv.call(["--flow", flow_id.split("/", 1)[1][:8], "--resume"])
    assert (0, flow_id, 0, flow_id) == (again.code, (again.spec or {}).get("flow_id"),
                                        short.code, (short.spec or {}).get("flow_id"))


def test_a_short_id_finds_its_flow_in_the_postgresql_store(tmp_path: Path, pg_url: str,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """The same lookup over the PostgreSQL store's flows (moved-aside ones left out)."""
    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", "tests.contract.toyflow")
    ws = str(tmp_path / "ws")
    for argv in (["start", "toy", "pg-one"], ["start", "toy", "pg-one", "--restart"],
                 ["start", "toy", "pg-two"]):
        code, spec = call(["--workspace", ws, "--store", pg_url, *argv])
        assert 0 == code, spec
    code, spec = call(["--workspace", ws, "--store", pg_url, "--flow", "pg-one", "--resume"])
    assert (0, "toy/pg-one") == (code, spec["flow_id"]), spec
    code, spec = call(["--workspace", ws, "--store", pg_url, "--flow", "pg-", "--resume"])
    assert (2, "flow_not_found") == (code, spec["error"]["code"])  # under four characters
    code, spec = call(["--workspace", ws, "--store", pg_url, "--flow", "toy/pg", "--resume"])
    assert (2, "ambiguous_flow", ["toy/pg-one", "toy/pg-two"]) == (
        code, spec["error"]["code"], spec["error"]["candidates"])
