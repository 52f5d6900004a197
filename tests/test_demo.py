"""``demo refactor``: the replay harness takes the bundled file to done through the CLI."""

from __future__ import annotations

from pathlib import Path

from tests.contract.driver import Driver


def test_demo_refactor_reaches_finalize_through_the_printed_commands(tmp_path: Path) -> None:
    """Every task is answered from the recordings via its feed_command, to done/finalize."""
    call = Driver(tmp_path).call(["demo", "refactor"])
    spec = call.spec
    assert (0, "done", "finalize", "refactored") == (call.code, spec["status"], spec["phase"],
                                                    spec["outcome"])
    assert "TR009" in Path(spec["summary_path"]).read_text()
    # The recorded coder's edit is in the demo's own copy, never in examples/.
    assert "TestSmallOpsDevice" in (tmp_path / "demo-checkout/test/test_small_ops.py").read_text()
    assert spec["demo"]["calls"] == call.stderr.count('"status"')


def test_demo_of_an_unknown_workflow_is_a_usage_error(tmp_path: Path) -> None:
    """Only the refactor demo exists; anything else says so with the command to run."""
    call = Driver(tmp_path).call(["demo", "reproduce"])
    assert (2, "usage") == (call.code, call.spec["error"]["code"])

