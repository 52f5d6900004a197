"""Stage 3, CI environment alignment (seed: "Stage 3"): ``rules`` (ci_repo, build_env, what of
a job log to fold, the decision table), ``fetch`` (the CI run, its wheels, its job log) and
``artifacts`` (range probe, download, extraction), ``steps``."""
