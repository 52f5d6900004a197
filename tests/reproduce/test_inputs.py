"""The reproduce start's inputs are checked before anything runs: --ci-repo as OWNER/NAME,
--repeat / --timeout bounds, --source-dir a folder, --command-file / --batch regular text
files of bounded size, batch entries' ids and ci_repo, and the batch's limits."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flow.workflows.reproduce.batch.entries import BatchEntry, InvalidEntry, parse_batch
from tests.contract.inproc import call

CALC = Path(__file__).resolve().parents[2] / "examples" / "calc"
CMD = "pytest tests/test_calc.py::test_add"


def _start(ws: Path, *extra: str) -> tuple[int, dict[str, object]]:
    return call(["--workspace", str(ws), "reproduce", "--profile", "local",
                 "--source-dir", str(CALC), *extra])


@pytest.mark.parametrize("extra, said", [
    (["--ci-repo", "../../../x", "--command", CMD], "is not OWNER/NAME"),
    (["--ci-repo", "o/..", "--command", CMD], "is not OWNER/NAME"),
    (["--ci-repo", "o/r\n", "--command", CMD], "is not OWNER/NAME"),
    (["--repeat", "-3", "--command", CMD], "--repeat '-3' is not a whole number of runs from 1 to 100"),
    (["--repeat", "1000000000", "--command", CMD], "--repeat '1000000000' is not a whole number"),
    (["--repeat", "1_0", "--command", CMD], "--repeat '1_0' is not a whole number"),
    (["--timeout", "nan", "--command", CMD], "--timeout 'nan' is not a number of seconds above 0"),
    (["--timeout", "-5", "--command", CMD], "--timeout '-5' is not a number of seconds above 0"),
    (["--timeout", "1e9", "--command", CMD], "--timeout '1e9' is not a number of seconds above 0, at most 86400"),
    (["--timeout", "86400.5", "--command", CMD], "at most 86400"),
    (["--timeout", "0", "--command", CMD], "--timeout '0' is not a number of seconds above 0"),
    (["--timeout", "inf", "--command", CMD], "--timeout 'inf' is not"),
    (["--command-file", "/dev/zero"], "is not a regular file (a character device)"),
    (["--batch", "/dev/zero"], "is not a regular file (a character device)"),
])
def test_a_bad_input_is_refused_before_anything_runs(tmp_path: Path, extra: list[str],
                                                     said: str) -> None:
    """Each bad input is a workflow input error (exit 2) saying what is wrong; no flow is left."""
    code, spec = _start(tmp_path / "ws", *extra)
    error = spec["error"]
    assert isinstance(error, dict)
    assert (2, True) == (code, said in error["message"]), error
    assert [] == [p for p in (tmp_path / "ws").rglob("flow_state.json")]


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_a_source_dir_that_is_missing_or_a_file_is_an_error(tmp_path: Path, kind: str) -> None:
    """--source-dir naming nothing or a file is refused (not NO_REPRODUCER later)."""
    target = tmp_path / "src"
    if kind == "file":
        target.write_text("x")
    code, spec = call(["--workspace", str(tmp_path / "ws"), "reproduce", "--profile", "local",
                       "--source-dir", str(target), "--command", CMD])
    error = spec["error"]
    assert isinstance(error, dict)
    assert (2, True) == (code, ("a file" if kind == "file" else "missing") in error["message"])


def test_a_fifo_command_file_is_named_a_fifo_not_missing(tmp_path: Path) -> None:
    """A FIFO as --command-file is refused at once as a FIFO (no wait, not 'does not exist')."""
    fifo = tmp_path / "cmd"
    os.mkfifo(fifo)
    code, spec = _start(tmp_path / "ws", "--command-file", str(fifo))
    error = spec["error"]
    assert isinstance(error, dict) and (2, True) == (code, "(a FIFO)" in error["message"])


@pytest.mark.parametrize("content", [b"\xff\xfe\x00binary\x80", b"[" * 200_000 + b"]" * 200_000,
                                     ("\n".join(f"pytest t.py::t{i}" for i in range(5000))).encode()])
def test_a_binary_deep_or_huge_batch_is_a_clear_refusal(tmp_path: Path, content: bytes) -> None:
    """A binary batch, one nested 200,000 deep and one of 5,000 entries: exit 2 with a
    message, never a traceback (exit 1)."""
    batch = tmp_path / "b.txt"
    batch.write_bytes(content)
    code, spec = _start(tmp_path / "ws", "--batch", str(batch))
    assert (2, "error") == (code, spec["status"]), spec


@pytest.mark.parametrize("entry_id", [".", "..", ".hidden", "a/b", "x" * 101])
def test_a_batch_entry_id_that_could_leave_its_log_folder_is_invalid(entry_id: str) -> None:
    """Entry ids '.', '..' and other dot-led or slashed ids are invalid entries."""
    (item,) = parse_batch(json.dumps([{"id": entry_id, "command": CMD}]))
    assert isinstance(item, InvalidEntry)


@pytest.mark.parametrize("repo, ok", [("../../x", False), ("o/..", False), ("o/.", False),
                                      ("pytorch", True), ("intel/torch-xpu-ops", True),
                                      ("o/.github", True)])
def test_a_batch_entry_ci_repo_is_owner_name(repo: str, ok: bool) -> None:
    """An entry's ci_repo is pytorch, torch-xpu-ops or a full OWNER/NAME ('..' is no name)."""
    (item,) = parse_batch(json.dumps([{"command": CMD, "ci_repo": repo}]))
    assert ok == isinstance(item, BatchEntry)


def test_a_profile_nested_100000_deep_is_a_clear_refusal(tmp_path: Path) -> None:
    """A TOML profile nested 100,000 deep is refused with a message (exit 2), not a traceback."""
    profile = tmp_path / "deep.toml"
    profile.write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    code, spec = call(["--workspace", str(tmp_path / "ws"), "reproduce", "--profile",
                       str(profile), "--source-dir", str(CALC), "--command", CMD])
    error = spec["error"]
    assert isinstance(error, dict) and (2, True) == (code, "nested too deep" in error["message"])


@pytest.mark.parametrize("extra", [[], ["--stage", "nightly", "--repeat", "2"]])
def test_no_reproducer_at_all_is_a_usage_error_not_a_verdict(tmp_path: Path,
                                                             extra: list[str]) -> None:
    """reproduce without --command, --command-file or --batch: usage error (exit 2) whose hint
    names --command; no flow and no NO_REPRODUCER verdict (that is for a reproducer given
    empty, see test_workflow's no-command row)."""
    code, spec = _start(tmp_path / "ws", *extra)
    error = spec["error"]
    assert isinstance(error, dict)
    assert (2, "error", "usage", True) == (code, spec["status"], error["code"],
                                           "--command" in error["hint"])
    assert (None, []) == (spec.get("verdict"), list((tmp_path / "ws").rglob("flow_state.json")))
