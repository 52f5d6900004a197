"""The CI babysitter (the refactoring seed's phase 8, ``--ci-check``), in the order a tick runs:

- ``patterns``  which conclusions are green, ignored, infra or failed (``reference/ci/patterns.toml``)
- ``observe``   one observation: the PR's checks and what classifying them needs (IO)
- ``logs``      pure: a job log trimmed to its failure lines
- ``classify``  pure: every check of a tick classified
- ``required``  pure: the verdicts that decide (required checks), optional failures apart
- ``decide``    pure: what the tick does next, from the classification and the flow's data
- ``feeds``     the debugger's result model; ``text`` the debugger's and the give-up texts
- ``end``       the end of a watch: report, done, stopped, closed
- ``declaration``  the declaration (``--ci-check``)
"""
