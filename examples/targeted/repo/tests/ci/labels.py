"""The domain labels a registration may carry (a PR label run-ci-<name> selects them)."""

KNOWN_LABELS = {
    "short": "quick smoke runs on two GPUs",
    "rollout": "generation and grouping of prompts",
    "scoring": "reward bookkeeping",
}
