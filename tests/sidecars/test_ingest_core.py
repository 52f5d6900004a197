"""Pure parts of the ingest sidecar: thread selection and the findings file format."""

from __future__ import annotations

from pathlib import Path

import pytest

from flow.core.errors import WorkflowInputError
from flow.github.merged import is_merged
from flow.workflows.ingest.findings import add_section, approved, parse
from flow.workflows.ingest.harvest import bot_summaries, is_candidate, replied_threads
from flow.workflows.ingest.model import Comment, PrFeedback, Proposal


def _c(cid: int, author: str = "reviewer") -> Comment:
    return Comment(id=cid, author=author, body=f"c{cid}", updated_at="2026-01-01T00:00:00Z")


@pytest.mark.parametrize(("parents", "processed", "threads"), [
    ({1: None, 2: 1, 3: None}, set(), [(1, [2])]),           # 3 has no reply
    ({1: None, 2: 1, 3: 1}, set(), [(1, [2, 3])]),
    ({1: None, 2: 1}, {1, 2}, []),                           # all processed
    ({1: None, 2: 1, 3: 1}, {1, 2}, [(1, [2, 3])]),         # a new reply brings the thread back
    ({1: None}, set(), []),
    ({2: 1, 3: 1}, set(), [(1, [2, 3])]),                    # root 1 deleted: replies kept
    ({2: 1}, {2}, []),                                       # ... unless already processed
])
def test_replied_threads(parents: dict[int, int | None], processed: set[int],
                         threads: list[tuple[int, list[int]]]) -> None:
    """Only threads with a reply and an unprocessed comment are kept, whole; a deleted root's
    replies are a thread of their own (root None, root_id its id)."""
    got = replied_threads([_c(i) for i in parents], parents, processed)
    assert threads == [(t.root.id if t.root else t.root_id, [r.id for r in t.replies]) for t in got]


def test_bot_summaries_skip_people_and_processed() -> None:
    """Only claude[bot] comments not yet processed count as summaries."""
    comments = [_c(1, "claude[bot]"), _c(2), _c(3, "claude[bot]")]
    assert [3] == [c.id for c in bot_summaries(comments, {1})]


@pytest.mark.parametrize(("login", "title", "labels", "expected"), [
    ("KarhouTam", "[Test] x", ["Merged"], True),
    ("KarhouTam", "[Test] x", [], False),
    ("KarhouTam", "Test x", ["Merged"], False),
    ("octocat", "[Test] x", ["Merged"], False),
    ("KarhouTam", "[Test] x", ["merged"], False),
])
def test_is_candidate(login: str, title: str, labels: list[str], expected: bool) -> None:
    """Author, the [Test] title prefix and merged (here: the bot's Merged label) are all required."""
    assert expected == is_candidate("KarhouTam", login, title, labels)


@pytest.mark.parametrize(("state", "merged_at", "labels", "expected"), [
    ("closed", "2026-01-01T00:00:00Z", [], True), ("closed", None, ["Merged"], True),
    ("closed", None, [], False), ("open", None, ["Merged"], False)])
def test_one_rule_for_merged(state: str, merged_at: str | None, labels: list[str], expected: bool) -> None:
    """merged_at set, or closed with the merge bot's Merged label; a label on an open PR is not."""
    assert expected == is_merged(state, merged_at, labels)


@pytest.mark.parametrize(("text", "expected"), [
    ("- [x] **F1** rule `TR003`: a\n    detail\n", [(True, "F1", "detail")]),
    ("- [X] **F1** rule `new`: a\n", [(True, "F1", "")]),
    ("- [ ] **F1** rule `TR003`: a\n    - [x] **F2** rule `TR001`: smuggled\n",
     [(False, "F1", "- [x] **F2** rule `TR001`: smuggled")]),  # four spaces: F1's details
    ("    - [x] **F1** rule `TR003`: a\n", []),
    ("\t- [x] **F1** rule `TR003`: a\n", []),                # a tab is four columns too
    ("- [x] F1 rule TR003: no bold key\n", []),
    ("- [v] **F1** rule `TR003`: a\n", []),                   # GitHub ticks x or X only
    ("-[x] **F1** rule `TR003`: a\n", []),                    # nor a box glued to the dash
])
def test_parse(text: str, expected: list[tuple[bool, str, str]]) -> None:
    """Only boxes with a bold key indented under four spaces count; deeper lines are details."""
    assert expected == [(ok, f.key, f.details) for ok, f in parse(text)]


@pytest.mark.parametrize("box", [
    "- [x]", "- [X]", "* [x]", "* [X]", "+ [x]", "+ [X]", "1. [x]", "7. [X]", "2) [x]",
    " - [x]", "  * [X]", "   + [x]", "  1. [x]", "   10) [X]", "-  [x] ", "*\t[x]",
])
def test_every_checkbox_form_github_ticks_is_read_as_ticked(box: str) -> None:
    """A tick counts in each form GitHub draws as a ticked box, indented up to three spaces."""
    text = ("# Findings\n\n"
            "- [ ] **F1** rule `TR003`: left alone by the reviewer\n"
            "    Proposed edit:\n    nothing to change\n\n"
            f"{box} **F2** rule `TR001`: imports move to the top of the file\n"
            "    Proposed edit:\n    keep the import block sorted\n")
    assert [(False, "F1"), (True, "F2")] == [(ok, f.key) for ok, f in parse(text)]


def test_keys_continue_after_a_key_ticked_in_another_form() -> None:
    """A later harvest numbers its findings after keys written with '*' or '1.' boxes too."""
    pr = PrFeedback(number=1, title="[Test] t", url="u")
    prop = [Proposal(rule_id="TR001", summary="s", proposed_edit="e")]
    text = "# H\n\n* [x] **F4** rule `TR001`: starred\n\n  2. [X] **F6** rule `TR002`: numbered\n"
    after = add_section(text, "# H\n", pr, prop, "ingest/harvest-c")
    assert after is not None
    assert ["F4", "F6", "F7"] == [f.key for _, f in parse(after)]


def test_nothing_ticked_names_the_checkbox_lines_it_read(tmp_path: Path) -> None:
    """Refused when no finding is ticked: the error lists each checkbox-looking line, by
    number, and how it was read, so a person can mend the tick that was not taken."""
    path = tmp_path / "PR-3.md"
    path.write_text("# Findings\n\n"
                    "- [ ] **F1** rule `TR003`: nobody ticked this one\n"
                    "    Proposed edit:\n    - [x] a box inside the proposal text\n\n"
                    "- [v] **F2** rule `TR001`: ticked with the wrong letter\n"
                    "- [x] F3 rule TR002: ticked, but the key lost its bold\n"
                    "Plain prose with no box at all.\n")
    with pytest.raises(WorkflowInputError) as caught:
        approved(path)
    expected = [(3, "finding F1, not ticked"), (5, "not a finding: indented four spaces"),
                (7, "not a checkbox"), (8, "not a finding: no '**F<n>** rule")]
    read = caught.value.details["lines_read"]
    assert expected == [(r["line"], r["read_as"][:len(want)])
                        for r, (_, want) in zip(read, expected, strict=True)]
    message = caught.value.message
    assert "none ticked" in message and all(f"line {n} (" in message for n in (3, 5, 7, 8))


def test_a_file_without_any_checkbox_says_so(tmp_path: Path) -> None:
    """A findings file with no box at all is refused with that said plainly."""
    path = tmp_path / "PR-4.md"
    path.write_text("# Findings\n\nThe harvest found nothing worth a rule.\n")
    with pytest.raises(WorkflowInputError, match="found no checkbox line"):
        approved(path)


def test_add_section_continues_keys_and_is_idempotent() -> None:
    """A second harvest's findings get F2.., ticks stay; the same harvest twice adds nothing."""
    pr = PrFeedback(number=1, title="[Test] t", url="u")
    prop = [Proposal(rule_id="TR001", summary="s", proposed_edit="e")]
    first = add_section(None, "# H\n", pr, prop, "ingest/harvest-a")
    assert first is not None
    ticked = first.replace("- [ ]", "- [x]")
    second = add_section(ticked, "# H\n", pr, prop, "ingest/harvest-b")
    assert second is not None
    assert [(True, "F1"), (False, "F2")] == [(ok, f.key) for ok, f in parse(second)]
    assert None is add_section(second, "# H\n", pr, prop, "ingest/harvest-b")
