"""runs.find_run / get_run against the fake GitHub playing miles' Rerun Test gateway."""

from __future__ import annotations

from typing import Any

from flow.github.client import GitHubClient
from flow.workflows.targeted.runs import find_run, get_run, list_comments
from tests.fakegithub import FakeGitHub
from tests.targeted.rerunbot import MAIN_TIP, NUMBER, REPO, RerunBot

FILE = "tests/e2e/test_a.py"


def _ours(bot: RerunBot, reply: bool) -> Any:
    """Our comment and the run the gateway dispatched for it (its reply dropped unless
    ``reply``: the gateway dispatched but its reply never came)."""
    bot.gh.add_comment(NUMBER, f"/rerun-test {FILE}", login="me")
    if not reply:
        bot.gh.comments[NUMBER].pop()
    return bot.runs[-1]


def test_the_gateway_reply_names_our_run(fake_github: FakeGitHub, client: GitHubClient) -> None:
    """The run the gateway's reply links is ours, even when another PR's run of the same
    file is newer; its head_sha is main's tip."""
    bot = RerunBot(fake_github, "a" * 40, {})
    mine = _ours(bot, reply=True)
    bot.foreign_run(8, FILE)
    got = find_run(client, REPO, NUMBER, FILE, 0, set())
    assert (mine.id, MAIN_TIP) == (got.id, got.head_sha)


def test_without_a_reply_the_exact_title_is_paged_for(fake_github: FakeGitHub,
                                                      client: GitHubClient) -> None:
    """No reply: the workflow's runs are paged (Link rel=next) past 100 newer ones of other
    PRs, and the run titled with our file and PR number is ours; a claimed one is not."""
    bot = RerunBot(fake_github, "a" * 40, {})
    mine = _ours(bot, reply=False)
    for _ in range(120):
        bot.foreign_run(8, FILE)
    fake_github.reset_log()
    got = find_run(client, REPO, NUMBER, FILE, 0, set())
    assert (mine.id, None) == (got.id, find_run(client, REPO, NUMBER, FILE, 0, {mine.id}))
    assert 2 <= fake_github.count(r"/actions/workflows/run-ci-file\.yml/runs$")


def test_our_comment_past_the_first_page_of_comments_is_found(fake_github: FakeGitHub,
                                                              client: GitHubClient) -> None:
    """130 comments before ours: the PR's comments are read across pages, so our comment and
    the gateway's reply on page 2 still name our run."""
    bot = RerunBot(fake_github, "a" * 40, {})
    for i in range(130):
        bot.gh.add_comment(NUMBER, f"review note {i}", login="reviewer")
    mine = _ours(bot, reply=True)
    assert mine.id == find_run(client, REPO, NUMBER, FILE, 0, set()).id


def test_a_failed_job_past_the_first_page_of_jobs_is_seen(fake_github: FakeGitHub,
                                                          client: GitHubClient) -> None:
    """A run with 150 jobs whose only failure is the last: the jobs are read across pages,
    so the run's failed job (for its log) is that one."""
    bot = RerunBot(fake_github, "a" * 40, {})
    run = _ours(bot, reply=True)
    for i in range(150):
        bot.gh.add_job(run, f"shard-{i:03}", "success")
    late = bot.gh.add_job(run, "shard-last", "failure")
    bot.finish(run, "success")
    seen = get_run(client, REPO, run.id)
    assert ("failure", late.id, 154) == (seen.conclusion, seen.failed_job, len(seen.jobs))


def test_no_comment_yet_means_no_run(fake_github: FakeGitHub, client: GitHubClient) -> None:
    """Before our comment is on the PR nothing is claimed, whatever runs exist."""
    bot = RerunBot(fake_github, "a" * 40, {})
    bot.foreign_run(NUMBER, FILE)
    before = max((c.id for c in list_comments(client, REPO, NUMBER)), default=0)
    assert find_run(client, REPO, NUMBER, FILE, before, set()) is None
