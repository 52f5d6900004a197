"""``graph WORKFLOW --flow ID`` takes the short ids ``--flow`` takes everywhere else (a tail of
a flow id, the beginning of one), on the file store and the PostgreSQL store: the flow it
names is drawn at its state, and the printed ``flow_id`` is the full one; several flows
matching is an ``ambiguous_flow`` error listing them (exit 2), none matching names the
closest. Real orchestrator calls in child processes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.driver import Driver, toy_at_review

TOY = {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow"}


@pytest.fixture(params=["file", "postgres"])
def driver(request: pytest.FixtureRequest, tmp_path: Path) -> Driver:
    env = dict(TOY)
    if request.param == "postgres":
        env["ORCHESTRATOR_STORE"] = request.getfixturevalue("pg_url")
    drv = Driver(tmp_path / "ws", env)
    toy_at_review(drv)  # toy/pic, waiting for its review
    assert 0 == drv.call(["start", "toy", "pick"]).code
    return drv


@pytest.mark.parametrize("given", ["pic", "toy/pic"])
def test_a_short_id_draws_the_flow_it_names(driver: Driver, given: str) -> None:
    out = driver.call(["graph", "toy", "--flow", given, "--json"])
    assert out.spec is not None, out.stderr
    assert (0, "toy/pic", "review", ["prepare", "work", "review"]) == (
        out.code, out.spec["flow_id"], out.spec["current"], out.spec["path"])


def test_a_picture_of_a_flow_named_by_its_tail_is_named_by_the_full_id(driver: Driver) -> None:
    out = driver.call(["graph", "toy", "--flow", "pick", "--format", "svg", "--json"])
    assert out.spec is not None, out.stderr
    assert (0, "toy.toy+pick.svg", True) == (out.code, Path(out.spec["picture"]).name,
                                            Path(out.spec["picture"]).is_file())


@pytest.mark.parametrize("given,code,candidates", [
    ("toy/pi", "ambiguous_flow", ["toy/pic", "toy/pick"]),
    ("pickx", "flow_not_found", ["toy/pick"]),
])
def test_a_short_id_naming_several_flows_or_none_is_refused(
        driver: Driver, given: str, code: str, candidates: list[str]) -> None:
    out = driver.call(["graph", "toy", "--flow", given, "--json"])
    assert out.spec is not None, out.stderr
    err = out.spec["error"]
    assert (2, code, True) == (out.code, err["code"], bool(err["hint"]))
    assert candidates == err["candidates"][:len(candidates)]
