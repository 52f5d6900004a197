"""Sidecar workflows that run beside the refactoring flow (the seed's sidecars).

- ``review_queue``  the daily PR review batch (``--review-queue``): select, review, publish;
  its pure decisions live in ``review_core``, its GitHub calls in ``review_github``.
- ``ingest``        the reviewer-feedback ingest (``--ingest-feedback``, ``--apply-ingest``).

Nothing is imported here: loading a sidecar must not pull in PyGithub.
"""
