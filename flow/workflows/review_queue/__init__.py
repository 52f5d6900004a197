"""The daily PR review batch (``--review-queue``), a sidecar of the refactoring seed:

- ``queue``     pure: the queue file's lines, the profile, selection, the review feeds
- ``github``    the GitHub reads and the one comment it posts
- ``publish``   the reviews and the queue file written back
- ``declaration``  the declaration: select, review, publish

Nothing is imported here: loading the workflow must not pull in PyGithub.
"""
