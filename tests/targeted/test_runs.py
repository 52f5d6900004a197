"""runs.find_run against the fake GitHub playing miles' Rerun Test gateway."""

from __future__ import annotations

from flow.github.client import GitHubClient
from flow.targeted.runs import find_run, list_comments
from tests.fakegithub import FakeGitHub
from tests.targeted.rerunbot import MAIN_TIP, NUMBER, REPO, RerunBot

FILE = "tests/e2e/test_a.py"


def _ours(fake: FakeGitHub, bot: RerunBot, reply: bool) -> object:
    """Our comment, then its run (with the gateway's reply when ``reply``)."""
    bot.gh.add_comment(NUMBER, f"/rerun-test {FILE}", login="me")
    if reply:
        bot.react()
        return bot.runs[-1]
    bot.seen += 1  # the gateway dispatched but its reply never came
    return bot.foreign_run(NUMBER, FILE, "success")


def test_the_gateway_reply_names_our_run(fake_github: FakeGitHub, client: GitHubClient) -> None:
    """The run the gateway's reply links is ours, even when another PR's run of the same
    file is newer; its head_sha is main's tip."""
    bot = RerunBot(fake_github, "a" * 40, {})
    mine = _ours(fake_github, bot, reply=True)
    bot.foreign_run(8, FILE)
    got = find_run(client, REPO, NUMBER, FILE, 0, set())
    assert (mine.id, MAIN_TIP) == (got.id, got.head_sha)


def test_without_a_reply_the_exact_title_is_paged_for(fake_github: FakeGitHub,
                                                      client: GitHubClient) -> None:
    """No reply: the workflow's runs are paged past 100 newer ones of other PRs, and the
    run titled with our file and PR number is ours; a claimed one is not."""
    bot = RerunBot(fake_github, "a" * 40, {})
    mine = _ours(fake_github, bot, reply=False)
    for _ in range(120):
        bot.foreign_run(8, FILE)
    got = find_run(client, REPO, NUMBER, FILE, 0, set())
    assert (mine.id, None) == (got.id, find_run(client, REPO, NUMBER, FILE, 0, {mine.id}))


def test_no_comment_yet_means_no_run(fake_github: FakeGitHub, client: GitHubClient) -> None:
    """Before our comment is on the PR nothing is claimed, whatever runs exist."""
    bot = RerunBot(fake_github, "a" * 40, {})
    bot.foreign_run(NUMBER, FILE)
    before = max((c.id for c in list_comments(client, REPO, NUMBER)), default=0)
    assert find_run(client, REPO, NUMBER, FILE, before, set()) is None
