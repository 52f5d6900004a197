"""Stage 1, the nightly wheel (seed: "Stage 1: Nightly Wheel"): ``rules`` (versions, the
same-build-day check, pip command lines, the decision table), ``steps`` (install, setup, run)."""
