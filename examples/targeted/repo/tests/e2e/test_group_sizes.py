"""Eight GPUs: groups never exceed the configured size."""

from miles.batching import GROUP_SIZE, groups
from tests.ci.ci_register import register_cuda_ci

register_cuda_ci(300, "stage-c-8-gpu-h200", labels=["rollout", "short"])

if __name__ == "__main__":
    assert all(len(g) <= GROUP_SIZE for g in groups(list(range(37))))
