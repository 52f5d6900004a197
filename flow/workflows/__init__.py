"""One package per workflow, each a declaration plus its steps (the seeds in ``../shared/seeds``):

- ``reproduce``     does a bug still reproduce? (fix-reproduce.md)
- ``refactor``      decouple a PyTorch test file from one accelerator, then babysit its CI
                    (pytorch-test-refactoring.md, phases 1-7)
- ``ci``            the CI babysitter of that seed's phase 8
- ``targeted``      run only the CI a diff reaches (pr-ci-targeted.md)
- ``ingest``        reviewer feedback on merged PRs -> ruleset edits (the refactoring seed's sidecar)
- ``review_queue``  the daily PR review batch (the other sidecar)

``registry`` names them for the command line and the MCP server; ``astnames`` is a helper
two of them share. Nothing is imported here: loading one workflow loads no other.
"""
