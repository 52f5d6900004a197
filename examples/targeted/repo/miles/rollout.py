"""Produce one pretend response per prompt, group by group."""

from miles.batching import groups


def run(prompts):
    """A (group index, prompt, response) triple per prompt."""
    return [(n, p, p[::-1]) for n, group in enumerate(groups(prompts)) for p in group]
