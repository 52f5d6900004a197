"""Reviewer feedback on merged ``[Test]`` PRs -> approved ruleset edits (``--ingest-feedback``,
``--apply-ingest``), a sidecar of the refactoring seed:

- ``model``     the flow's data and feed models
- ``harvest``   reading merged PRs and their review threads from GitHub
- ``findings``  the findings file a person ticks, and reading the ticks back
- ``declaration``  the declaration: harvest, triage, analyse, draft; confirm, edit

Nothing is imported here: loading the workflow must not pull in PyGithub.
"""
