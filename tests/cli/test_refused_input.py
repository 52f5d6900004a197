"""Input the program refuses, on real processes: every numeric flag and MCP field outside its
range or not in ASCII digits, a repeated id in a batch or items file (one rule for the three
ways to give one), a campaign name that is no path segment, an output path or plugin setting
that cannot work. Each is exit 2 with an error object saying what was wrong and how to mend
it, and nothing is left behind."""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.contract.driver import Driver
from tests.contract.inproc import call

HUGE = "1" + "0" * 30
NOT_NUMBERS = ["1_0", "\u0661\u0662", "\uff11\uff12", HUGE, "nan", "1e3", " ", "0x10"]
FLAGS = [  # (argv before the flag, flag, what the range says)
    (["affected-tests", "--base", "HEAD"], "--depth", "from 1 to 50"),
    (["affected-tests", "--base", "HEAD"], "--hub-limit", "from 1 to 1000000"),
    (["ci-check", "--repo", "o/r"], "--pr-number", "from 1 to 2147483647"),
    (["review-queue"], "--limit", "from 1 to 10000"),
    (["reproduce", "--command", "pytest t.py"], "--repeat", "from 1 to 100"),
    (["reproduce", "--command", "pytest t.py"], "--timeout", "above 0, at most 86400"),
    (["serve"], "--port", "from 0 to 65535"),
    (["--flow", "toy/x", "--resume"], "--lease", "from 1 to 9223372036854775807"),
]


@pytest.mark.parametrize("before,flag,says,value", [
    (*case, value) for case in FLAGS for value in [*NOT_NUMBERS, "-1", "0"]
    if not (value == "0" and case[1] == "--port")])  # port 0: the system picks one
def test_every_numeric_flag_takes_ascii_digits_within_its_range(
        tmp_path: Path, before: list[str], flag: str, says: str, value: str) -> None:
    """``1_0``, Arabic-Indic or full-width digits, 10**30, ``nan``, an exponent, hex: each
    refused at parse time (``bad_number``, exit 2) quoting the value and the range."""
    code, spec = call(["--workspace", str(tmp_path / "ws"), *before, f"{flag}={value}"])
    error = spec["error"]
    assert (2, "bad_input", flag) == (code, error["code"], error["flag"]), spec
    assert says in error["message"] and repr(value) in error["message"]
    assert "ASCII digits" in error["hint"] and error["allowed"]
    assert not (tmp_path / "ws").exists() or [] == list((tmp_path / "ws").rglob("*.json"))


def test_seconds_take_a_decimal_point_but_no_exponent(tmp_path: Path) -> None:
    """``--timeout 1.5`` passes the parser; ``1e3`` and ``inf`` do not."""
    from flow.cli.argv import parse

    args, _ = parse(["reproduce", "--command", "pytest t.py", "--timeout", "1.5"])
    assert 1.5 == args.timeout
    for value in ("1e3", "inf", "-0.5", "86400.01"):
        code, spec = call(["--workspace", str(tmp_path), "reproduce", "--command", "x",
                           "--timeout", value])
        assert (2, "bad_input") == (code, spec["error"]["code"]), spec


def test_affected_tests_with_depth_ten_to_the_thirty_answers_at_once(tmp_path: Path) -> None:
    """The call that never answered: a process of its own, refused before any trace."""
    drv = Driver(tmp_path / "ws")
    got = drv.call(["affected-tests", "--base", "HEAD", "--json", "--depth", HUGE], timeout=60)
    assert got.spec is not None, got.stderr
    assert (2, "bad_input", {"ge": 1, "le": 50}) == (
        got.code, got.spec["error"]["code"], got.spec["error"]["allowed"])
    assert "Traceback" not in got.stderr


def test_the_mcp_tools_bound_the_same_numbers(tmp_path: Path) -> None:
    """The MCP server's start tool advertises the flags' ranges in its schema and refuses
    depth 10**30, pr_number 0 and repeat 101 with the CLI's own error, before any workflow
    runs."""
    from tests.mcp.client import Mcp, drive

    async def body(mcp: Mcp) -> None:
        tools = {t.name: t for t in (await mcp.client.list_tools()).tools}
        props = json.dumps(tools["start"].input_schema)
        assert '"maximum": 50' in props and '"maximum": 2147483647' in props
        for args, says in (({"workflow": "ci-targeted", "base": "HEAD", "depth": 10**30},
                            "--depth '1000000000000000000000000000000' is not a whole number "
                            "of import hops from 1 to 50"),
                           ({"workflow": "ci", "repo": "o/r", "pr_number": 0},
                            "--pr-number '0' is not a whole number from 1 to 2147483647"),
                           ({"workflow": "reproduce", "command": "pytest t.py", "repeat": 101},
                            "--repeat '101' is not a whole number of runs from 1 to 100")):
            spec, failed = await mcp.call("start", {"args": args})
            assert (True, "bad_input", says) == (failed, spec["error"]["code"],
                                                 spec["error"]["message"]), spec

    drive(tmp_path, body)
    assert [] == [p for p in tmp_path.rglob("flow_state.json")]


@pytest.mark.parametrize("name,value", [
    ("ORCHESTRATOR_LOCK_TIMEOUT", "\u0661\u0662"),
    ("ORCHESTRATOR_LOCK_TIMEOUT", "1_0"),
    ("ORCHESTRATOR_FOREGROUND_S", "\uff19\uff10"),
    ("ORCHESTRATOR_STORE_CONNECT_TIMEOUT", "1e999"),
    ("ORCHESTRATOR_FOREGROUND_S", "inf"),
])
def test_a_numeric_setting_outside_its_rule_is_a_setting_error(
        tmp_path: Path, name: str, value: str) -> None:
    """A setting in other digits, with underscores or infinite: exit 2 naming the setting
    (a process of its own, the setting in its environment), never a traceback."""
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow"})
    store = ["--store", "postgresql://u@127.0.0.1:1/db"] if "STORE" in name else []
    got = drv.call([*store, "start", "toy", "alpha", "--json"], extra_env={name: value})
    assert got.spec is not None, got.stderr
    assert 2 == got.code and got.spec["error"]["code"] in ("bad_setting", "usage"), got.spec
    assert name in got.spec["error"]["message"] and "Traceback" not in got.stderr
    assert [] == list((tmp_path / "ws").rglob("flow_state.json"))


def _batch(tmp_path: Path) -> Path:
    path = tmp_path / "batch.json"
    path.write_text(json.dumps([{"id": "a", "command": "pytest t.py::x"},
                                {"id": "b", "command": "pytest t.py::y"},
                                {"id": "a", "command": "pytest t.py::z"},
                                {"command": "pytest t.py::w"},
                                {"id": "entry-4", "command": "pytest t.py::v"}]))
    return path


def test_a_plain_batch_with_a_repeated_id_is_refused_whole(tmp_path: Path) -> None:
    """``reproduce --batch F``: exit 2, ``duplicate_ids`` naming 'a' and 'entry-4' (the
    entry without an id is entry-4 by its place), no flow started."""
    got = Driver(tmp_path / "ws").call(["reproduce", "--profile", "local", "--batch",
                                        str(_batch(tmp_path))])
    assert got.spec is not None, got.stderr
    assert (2, "duplicate_ids", ["a", "entry-4"]) == (
        got.code, got.spec["error"]["code"], got.spec["error"]["ids"]), got.spec
    assert "'a', 'entry-4'" in got.spec["error"]["message"]
    assert [] == list((tmp_path / "ws").rglob("flow_state.json"))


def test_a_campaign_batch_and_an_items_file_refuse_a_repeated_id_by_the_same_rule(
        tmp_path: Path, pg_url: str) -> None:
    """``--batch F --campaign N`` (it dropped the second 'a') and ``campaign N --items F``
    answer as the plain batch does; the store holds no campaign afterwards."""
    import psycopg

    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"id": "a", "argv": ["start", "toy", "x"]},
                                 {"id": "a", "argv": ["start", "toy", "y"]}]))
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow",
                                   "ORCHESTRATOR_STORE": pg_url})
    batch = drv.call(["reproduce", "--profile", "local", "--batch", str(_batch(tmp_path)),
                      "--campaign", "night"])
    listed = drv.call(["campaign", "night", "--items", str(items)])
    got = [(c.code, c.spec["error"]["code"], c.spec["error"]["ids"]) for c in (batch, listed)
           if c.spec is not None]
    assert [(2, "duplicate_ids", ["a", "entry-4"]), (2, "duplicate_ids", ["a"])] == got
    with psycopg.connect(pg_url) as conn:
        assert [] == conn.execute("SELECT name FROM campaigns").fetchall()


BAD_NAMES = ["team/nightly", "../x", "a b", ".hidden", "x" * 101, "n\u00e4me", "a'b"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_campaign_name_outside_the_rule_is_refused_by_cli_and_store(
        tmp_path: Path, pg_url: str, name: str) -> None:
    """``campaign NAME``, ``--campaign NAME`` and the store's own define refuse it
    (``bad_campaign_name``, exit 2); nothing is defined."""
    import psycopg

    from flow.core.errors import UsageError
    from workspace import campaign
    from workspace.pgconn import connect

    items = tmp_path / "items.json"
    items.write_text(json.dumps([{"id": "a", "argv": ["start", "toy", "x"]}]))
    env = {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow", "ORCHESTRATOR_STORE": pg_url}
    drv = Driver(tmp_path / "ws", env)
    calls = [drv.call(["campaign", name, "--items", str(items)]),
             drv.call([f"--campaign={name}", "reproduce", "--batch", str(items)]),
             drv.call(["status", f"--campaign={name}"])]
    codes = [(c.code, (c.spec or {}).get("error", {}).get("code")) for c in calls]
    assert [(2, "bad_campaign_name")] * 3 == codes, [c.spec for c in calls]
    assert all("Traceback" not in c.stderr for c in calls)
    for store_name in (name, "", "-x"):
        with pytest.raises(UsageError) as caught:
            campaign.define(connect(pg_url, fresh=True), store_name, "items",
                            [("a", {"argv": ["start", "toy", "x"]})])
        assert "bad_campaign_name" == caught.value.code
    with psycopg.connect(pg_url) as conn:
        assert [] == conn.execute("SELECT name FROM campaigns").fetchall()


def test_a_campaign_made_before_the_rule_with_a_slash_is_still_served(
        tmp_path: Path, pg_url: str) -> None:
    """A name with a slash already in the store: its dashboard page answers (it was 404),
    linked and typed, escaped or not."""
    import psycopg

    from tests.web.workspace import serving

    ok = Driver(tmp_path / "ws", {"ORCHESTRATOR_STORE": pg_url}).call(["status", "--json"])
    assert 0 == ok.code, ok.spec  # the schema is made by the program itself
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO campaigns (name, kind, lease_s) VALUES "
                     "('team/nightly', 'items', 600)")
    with serving(tmp_path / "viewer", ORCHESTRATOR_STORE=pg_url) as (url, _):
        index = urllib.request.urlopen(url, timeout=30).read().decode()
        assert "/campaign/team" in index and "nightly" in index
        for path in ("team%2Fnightly", "team/nightly"):
            page = urllib.request.urlopen(f"{url.rstrip('/')}/campaign/{path}", timeout=30)
            assert (200, True) == (page.status, "team/nightly" in page.read().decode())


def test_graph_output_that_cannot_be_written_is_bad_output_not_a_bug(tmp_path: Path) -> None:
    """``--output`` under /proc/self, under a file, in a folder that cannot be made: exit 2
    (``bad_output`` or ``bad_input``) naming the path, no traceback."""
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    drv = Driver(tmp_path / "ws")
    for target in ("/proc/self/x.svg", str(blocker / "x.svg"), "/proc/self/new/x.svg"):
        got = drv.call(["graph", "reproduce", "--format", "svg", "--output", target, "--json"])
        assert got.spec is not None, got.stderr
        assert (2, True) == (got.code, got.spec["error"]["code"] in ("bad_output",
                                                                     "bad_input")), got.spec
        assert target in got.spec["error"]["message"] and got.spec["error"]["hint"]
        assert "Traceback" not in got.stderr
    assert "x" == blocker.read_text()


@pytest.mark.parametrize("plugins", ["../../x", "/tmp/x.py", "a..b", "x-y", "tests.contract."])
def test_a_plugin_setting_that_is_a_path_is_a_setting_error(tmp_path: Path,
                                                             plugins: str) -> None:
    """``ORCHESTRATOR_PLUGINS`` naming a path or no module: exit 2 ``bad_setting`` saying
    to name a dotted module (it was a TypeError, exit 1)."""
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_PLUGINS": plugins})
    for argv in (["reproduce", "--command", "pytest t.py"], ["graph", "toy"],
                 ["start", "toy", "alpha"]):
        got = drv.call(argv)
        assert got.spec is not None, got.stderr
        assert (2, "bad_setting") == (got.code, got.spec["error"]["code"]), (argv, got.spec)
        assert "dotted module" in got.spec["error"]["message"]
        assert "Traceback" not in got.stderr


def test_a_good_plugin_and_names_still_work(tmp_path: Path) -> None:
    """The rules take what they should: the toy plugin, a campaign name with dots and
    dashes, a flag's top value."""
    from flow.cli.argv import parse
    from flow.core.bounds import campaign_name

    assert "nightly-2026.12_a" == campaign_name("nightly-2026.12_a")
    args, _ = parse(["affected-tests", "--depth", "50", "--hub-limit", "1000000"])
    assert (50, 1000000) == (args.depth, args.hub_limit)
    drv = Driver(tmp_path / "ws", {"ORCHESTRATOR_PLUGINS": " tests.contract.toyflow "})
    got = drv.call(["start", "toy", "alpha"])
    assert (0, "toy/alpha") == (got.code, got.spec["flow_id"]), got.spec
    assert os.path.isdir(tmp_path / "ws" / "toy")


@pytest.mark.parametrize("value", ["\u0661\u0662", "1_0", "99999999999999999999", "inf", "-1"])
def test_the_workflows_numeric_settings_take_the_same_rule(value: str) -> None:
    """The CI deadlines and rounds, the GitHub client's waits, the targeted poll deadline
    and the refactor gate's timeout and shards: each refuses other digits, underscores,
    infinity and a value past its range with an error naming the setting (a deadline of
    10**20 minutes overflowed the clock's arithmetic)."""
    from flow.core.errors import OrchestratorError
    from flow.github.client import connect
    from flow.workflows.ci.declaration import _max_rounds, _positive
    from flow.workflows.refactor.testenv import test_settings
    from flow.workflows.targeted.loop import POLL_HOURS_ENV, poll_hours

    checks = [
        ("ORCHESTRATOR_CI_RUN_DEADLINE_MINUTES",
         lambda env: _positive(env, "ORCHESTRATOR_CI_RUN_DEADLINE_MINUTES", 720, "minutes")),
        ("ORCHESTRATOR_CI_MAX_ROUNDS", _max_rounds),
        ("ORCHESTRATOR_GITHUB_BACKOFF", lambda env: connect("http://127.0.0.1:9", "tok",
                                                            env=env)),
        (POLL_HOURS_ENV, poll_hours),
        ("ORCHESTRATOR_REFACTOR_TEST_SHARDS", test_settings),
        ("ORCHESTRATOR_REFACTOR_TEST_TIMEOUT", test_settings),
    ]
    for name, read in checks:
        with pytest.raises(Exception) as caught:
            read({name: value})
        assert name in str(caught.value), (name, caught.value)
        assert isinstance(caught.value, OrchestratorError) or \
            type(caught.value).__module__.startswith("flow."), (name, repr(caught.value))
