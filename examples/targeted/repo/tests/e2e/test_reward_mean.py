"""Two GPUs: the mean reward of a small rollout."""

from miles.scoring import mean_reward
from tests.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=60, suite="stage-b-2-gpu-h200", labels=["scoring"])

if __name__ == "__main__":
    assert mean_reward([1.0, 0.0, 0.5]) == 0.5
