"""Fuzzed feeds (hypothesis): anything that is not a valid result leaves the state unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.contract.inproc import call as _call

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                  max_size=4),
    max_leaves=12,
)
FEEDS = st.one_of(
    JSON.map(json.dumps),
    st.dictionaries(st.sampled_from(["ok", "value", "approved", "agent_id", "task_id", "x"]),
                    JSON, max_size=4).map(json.dumps),
    st.binary(max_size=64).map(lambda b: b.decode("latin-1")),
)


@pytest.fixture
def pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, dict[str, Any]]:
    monkeypatch.setenv("ORCHESTRATOR_PLUGINS", "tests.contract.toyflow")
    ws = tmp_path / "ws"
    code, spec = _call(["--workspace", str(ws), "start", "toy", "fuzz"])
    assert 0 == code
    return ws, spec


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(content=FEEDS)
def test_fuzzed_feed_is_refused_or_valid_and_never_corrupts(
        pending: tuple[Path, dict[str, Any]], content: str) -> None:
    """A refused feed leaves flow_state.json byte-identical; an accepted one is a valid part."""
    ws, spec = pending
    task = spec["tasks"][0]
    state_file = Path(spec["workspace"]) / "flow_state.json"
    before = state_file.read_bytes()
    Path(task["feed_file"]).write_text(content, encoding="latin-1")
    code, out = _call(["--workspace", str(ws), "--flow", spec["flow_id"], "--feed", "coder",
                       "--feed-file", task["feed_file"]])
    if code == 0:
        fed = json.loads(content)
        assert isinstance(fed.get("ok"), bool) and isinstance(fed.get("value"), int)
        pytest.skip("a valid result was generated; covered elsewhere")
    assert 2 == code and "error" == out["status"]
    assert before == state_file.read_bytes()
