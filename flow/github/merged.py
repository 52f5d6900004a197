"""One rule for "merged", shared by the ingest harvest and the review queue's selection.

A pull request is merged when GitHub says so (`merged_at` is set: the merge button, a merge
queue, `gh pr merge`), or when it is closed and carries the `Merged` label: PyTorch's merge
bot (pytorchmergebot) lands the commits itself, then closes the PR and labels it, and GitHub's
`merged_at` stays null. Both fields come with the PR listing and the PR itself, so the rule
costs no request. Pure; imports no PyGithub.
"""

from __future__ import annotations

from collections.abc import Iterable

MERGED_LABEL = "Merged"


def is_merged(state: str, merged_at: object, labels: Iterable[str]) -> bool:
    """Merged by GitHub (`merged_at` set), or closed by a merge bot with the `Merged` label."""
    return merged_at is not None or (state == "closed" and MERGED_LABEL in set(labels))
