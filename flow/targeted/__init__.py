"""Targeted CI: trace which registered CI tests a diff can reach, and pick how to run them.

The pure core of the ``ci-targeted`` workflow (seed ``pr-ci-targeted.md``, issue 6):

- ``config``: ``TargetedConfig`` from a pyproject table, a named profile, or defaults.
- ``import_graph``: the file-level import graph built with ``ast`` (cached by content);
  ``resolve`` turns one file's imports and strings into the files they name.
- ``registrations``: ``register_*_ci(...)`` declarations read from top-level calls.
- ``trace``: ``affected_tests(...) -> AffectedReport``; ``report`` renders it.
- ``select``: the seed's step 2 as ``choose(report, config) -> Plan``.
- ``timing``: ``est_time`` from a measured runtime, and the PR-description timing line.

Nothing here is imported eagerly: import the submodule you need.
"""
