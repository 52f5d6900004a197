"""Average reward of a finished rollout; knows nothing about batching."""


def mean_reward(rewards):
    """The arithmetic mean, 0.0 for no rewards."""
    return sum(rewards) / len(rewards) if rewards else 0.0
