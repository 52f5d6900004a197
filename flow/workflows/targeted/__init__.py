"""Targeted CI: trace which registered CI tests a diff can reach, and pick how to run them.

The pure core of the ``ci-targeted`` workflow (seed ``pr-ci-targeted.md``):

- ``config``: ``TargetedConfig`` from a named profile, a pyproject table, a detected
  profile, or defaults (suites with hardware and runner, labels, no-GPU allowlist).
- ``import_graph``: the file-level import graph from ``lexer`` facts (cached by content);
  ``resolve`` turns one file's imports and strings into the files they name; ``syspath``
  reads the folders a conftest or script puts on ``sys.path``.
- ``registrations``: ``register_*_ci(...)`` declarations read from top-level calls.
- ``trace``: ``affected_tests(...) -> AffectedReport``; ``report`` renders it;
  ``blackwell`` finds changed lines that run only on Blackwell GPUs.
- ``select``: the seed's step 2 as ``choose(report, config) -> Plan``, never empty.
- ``runs``: finding the Rerun Test run each ``/rerun-test`` comment started, or the
  gateway's refusal of it.
- ``timing``: ``est_time`` from a measured runtime, and the PR-description timing line.

Nothing here is imported eagerly: import the submodule you need.
"""
