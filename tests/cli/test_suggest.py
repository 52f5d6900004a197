"""A mistyped option or command is a usage error (exit 2) that names what it most likely meant;
an unknown option never passes silently, a unique prefix still works."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.cli.argv import parse
from flow.core.errors import UsageError
from tests.contract.driver import Driver

TOY = {"ORCHESTRATOR_PLUGINS": "tests.contract.toyflow"}


def test_a_mistyped_option_answers_did_you_mean_and_starts_nothing(tmp_path: Path) -> None:
    """`reproduce --comand "pytest x"`: one JSON usage error, exit 2, `did you mean --command?`
    in message and hint (and as did_you_mean), no flow folder made."""
    call = Driver(tmp_path / "ws").call(["reproduce", "--comand", "pytest x"])
    assert call.spec is not None, call.stderr
    error = call.spec["error"]
    assert (2, "error", "usage", "--command") == (call.code, call.spec["status"], error["code"],
                                                   error.get("did_you_mean"))
    assert ("did you mean --command?" in error["message"],
            "did you mean --command?" in error["hint"]) == (True, True)
    assert not (tmp_path / "ws" / "reproduce").exists()


@pytest.mark.parametrize("argv, meant", [
    (["reproduce", "--comand=pytest x"], "--command"),
    (["reproduce", "--command", "x", "--stgae", "nightly"], "--stage"),
    (["reproduce", "--command", "x", "--failure-patern", "E"], "--failure-pattern"),
    (["status", "--jsn"], "--json"),
    (["--flow", "toy/x", "--resmue"], "--resume"),
    (["ci-check", "--pr-numbr", "5"], "--pr-number"),
    (["graph", "ci", "--fromat", "svg"], "--format"),
    (["mcp", "--worksapce", "w"], "--workspace"),
])
def test_each_command_suggests_its_own_closest_option(argv: list[str], meant: str) -> None:
    """The suggestion is an option of the command being parsed (its parser's option strings)."""
    with pytest.raises(UsageError) as err:
        parse(argv)
    assert (meant, f"did you mean {meant}?") == (err.value.details.get("did_you_mean"),
                                                 err.value.hint.split(" run ")[0])


def test_a_flag_of_another_command_names_the_commands_that_take_it() -> None:
    """`reproduce --pr-number 3` says which commands take --pr-number, and still names --help."""
    with pytest.raises(UsageError) as err:
        parse(["reproduce", "--command", "x", "--pr-number", "3"])
    assert ("ci-check" in err.value.message, "ci-targeted" in err.value.message,
            "--help" in err.value.hint) == (True, True, True)


def test_a_word_close_to_no_option_gets_no_guess() -> None:
    """An option like nothing the command takes is refused without a made-up suggestion."""
    with pytest.raises(UsageError) as err:
        parse(["status", "--zzzzzzzz"])
    assert (None, True) == (err.value.details.get("did_you_mean"),
                            "'--zzzzzzzz'" in err.value.message)


def test_a_unique_prefix_still_works_and_an_ambiguous_one_is_refused() -> None:
    """argparse's abbreviations stay: --stag is --stage; --comm (--command, --command-file)
    is a usage error, never a silent pick."""
    args, _ = parse(["reproduce", "--command", "x", "--stag", "nightly"])
    assert "nightly" == args.stage
    with pytest.raises(UsageError) as err:
        parse(["reproduce", "--comm", "x"])
    assert "ambiguous" in err.value.message


def test_a_mistyped_command_is_refused_not_taken_for_a_test_file(tmp_path: Path) -> None:
    """`reprodce --command x` is `did you mean reproduce?` (exit 2), not a refactor of a file
    named reprodce; a path (the seed's bare FILE) is still a refactor."""
    call = Driver(tmp_path / "ws").call(["reprodce", "--command", "pytest x"])
    assert call.spec is not None, call.stderr
    error = call.spec["error"]
    assert (2, "usage", "reproduce") == (call.code, error["code"], error.get("did_you_mean"))
    assert "did you mean reproduce?" in error["hint"]
    assert not (tmp_path / "ws").exists() or [] == list((tmp_path / "ws").iterdir())
    args, _ = parse(["test/test_ops.py"])
    assert ("refactor", ["test/test_ops.py"]) == (args.command, args.args)


@pytest.mark.parametrize("word, meant", [("stauts", "status"), ("shema", "schema"),
                                         ("ci-chek", "ci-check"), ("reprodce", "reproduce")])
def test_each_mistyped_command_names_the_command(word: str, meant: str) -> None:
    """A first word close to a command (no '/' or '.', so no file) names that command."""
    with pytest.raises(UsageError) as err:
        parse([word])
    assert meant == err.value.details.get("did_you_mean")


def test_start_with_a_mistyped_workflow_suggests_it(tmp_path: Path) -> None:
    """`start reprodce` answers `did you mean reproduce?` and lists the workflows."""
    call = Driver(tmp_path / "ws", TOY).call(["start", "reprodce"])
    assert call.spec is not None, call.stderr
    error = call.spec["error"]
    assert (2, "usage", "reproduce") == (call.code, error["code"], error.get("did_you_mean"))
    assert ("did you mean reproduce?" in error["hint"], "toy" in error["hint"]) == (True, True)
