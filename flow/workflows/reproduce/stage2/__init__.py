"""Stage 2, the source build at origin/main (seed: "Stage 2"): ``rules`` (the build plan with
its one ci_commit fallback, the decision table), ``build`` (the local profile's build as one
command, for a ``run`` task), ``venv`` (venv pieces Stage 3 shares), ``steps``."""
