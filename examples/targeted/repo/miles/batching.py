"""Split a list of prompts into fixed-size groups for the rollout workers."""

GROUP_SIZE = 4


def groups(prompts, size=GROUP_SIZE):
    """Consecutive groups of at most ``size`` prompts, in order."""
    return [prompts[i:i + size] for i in range(0, len(prompts), size)]
