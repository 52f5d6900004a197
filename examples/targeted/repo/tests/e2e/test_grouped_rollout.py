"""Two GPUs: rollout answers every prompt once, group numbers in order."""

from miles import rollout
from tests.ci.ci_register import register_cuda_ci

register_cuda_ci(est_time=120, suite="stage-b-2-gpu-h200", labels=["rollout"])

if __name__ == "__main__":
    out = rollout.run([f"p{i}" for i in range(10)])
    numbers = [n for n, _, _ in out]
    assert len(out) == 10 and numbers == sorted(numbers)
