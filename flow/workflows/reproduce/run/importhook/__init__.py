"""The folder the deciding run gets on ``PYTHONPATH`` (seed: Stage 1 "Working directory";
``run.imports``): ``sitecustomize`` records which files the run's modules came from and
steps aside before the run's own code. Never imported by the orchestrator itself."""
