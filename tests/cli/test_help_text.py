"""What --help says about the flags a person most often gets wrong: --profile lists the profiles
its workflow knows, --stage shows its default, --ci-repo says it is a repository as OWNER/NAME;
`mcp` takes the command line's own flags, and a mistyped one is a JSON usage error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from flow.cli.argv import parser_for
from tests.contract.driver import ROOT, SCRIPT


def _help_of(command: str, option: str) -> tuple[str | None, str]:
    """(metavar, help text as --help prints it) of ``option`` in ``command``'s parser."""
    parser = parser_for(command)
    [action] = [a for a in parser._actions if option in a.option_strings]
    text = (action.help or "") % {"default": action.default}
    return action.metavar, " ".join(text.split())


def _loader(command: str) -> tuple[Path, str | None]:
    """The folder and default profile the workflow's own loader uses."""
    if command == "reproduce":
        from flow.workflows.reproduce import profiles

        return profiles.PROFILE_DIR, profiles.DEFAULT_PROFILE
    if command == "review-queue":
        from flow.workflows.review_queue import queue

        return queue.PROFILE_DIR, queue.DEFAULT_PROFILE
    from flow.workflows.targeted import config

    return config.PROFILE_DIR, None


@pytest.mark.parametrize("command", ["reproduce", "review-queue", "affected-tests",
                                     "ci-targeted"])
def test_profile_help_lists_the_profiles_the_workflow_loads(command: str) -> None:
    """--profile's help names every profile file the workflow's loader would find (its folder,
    not a copy of the names) and what no --profile means."""
    from flow.cli.argv import PROFILES

    folder, default = _loader(command)
    names = sorted(p.stem for p in folder.glob("*.toml"))
    _, text = _help_of(command, "--profile")
    assert (folder.name, True) == (PROFILES[command][0], bool(names))
    assert [] == [n for n in names if n not in text]
    assert f"one of {', '.join(names)}" in text
    if default is not None:
        assert f"(default: {default})" in text


def test_a_new_profile_file_shows_up_in_the_help(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The list is read from the reference folder, so an added profile is listed at once."""
    import reference

    for sub in ("reproduce", "review_queue", "targeted"):
        (tmp_path / sub).mkdir()
    (tmp_path / "reproduce" / "lab-cluster.toml").write_text("")
    monkeypatch.setattr(reference, "DIR", tmp_path)
    assert "one of lab-cluster" in _help_of("reproduce", "--profile")[1]


def test_stage_help_shows_its_default() -> None:
    """--stage says what no --stage means (auto), and that is the value a call gets."""
    from flow.cli.argv import parse

    _, text = _help_of("reproduce", "--stage")
    args, _ = parse(["reproduce", "--command", "x"])
    assert (True, "auto") == ("(default: auto)" in text, args.stage)


def test_ci_repo_help_says_it_is_a_repository() -> None:
    """--ci-repo OWNER/NAME: a GitHub repository whose CI saw the failure, with the short names
    the pytorch-xpu profile takes and the default."""
    metavar, text = _help_of("reproduce", "--ci-repo")
    assert ("OWNER/NAME", True, True, True) == (
        metavar, "GitHub repository" in text, "pytorch or torch-xpu-ops" in text,
        "(default: inferred" in text)


def test_mcp_with_a_mistyped_flag_is_a_json_usage_error() -> None:
    """`mcp --worksapce DIR` exits 2 with one JSON error (did you mean --workspace?) on stderr,
    stdout left empty for the protocol; it never starts serving."""
    proc = subprocess.run([sys.executable, str(SCRIPT), "mcp", "--worksapce", "w"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, cwd=ROOT,
                          timeout=120)
    error = json.loads(proc.stderr.strip().splitlines()[-1])["error"]
    assert (2, "", "usage", "--workspace") == (proc.returncode, proc.stdout, error["code"],
                                               error.get("did_you_mean"))
