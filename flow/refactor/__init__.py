"""Pure core of the PyTorch test-refactoring workflow (phases 1-7 of the seed).

Modules, each a function of its inputs returning typed results:

- ``fields``     which field (core / distributed / graph) a test file belongs to
- ``rules``      the rule catalogue in ``reference/refactor/rules.json``
- ``assess``     phase 1: the stdlib-``ast`` assessment of a test file
- ``analysis``   phase 2: the analyst report model and its check against the assessment
- ``distribute`` phase 3: analyst report + catalogue -> ordered per-rule coder tasks
- ``codemods``   phase 4 (mechanical rules): libcst rewrites (TR001, TR002, TR009)
- ``sentinels``  phase 4 (TR010): dynamo sentinel files renamed by file name
- ``mechanical`` phase 3's IO: applies the codemods from snapshots, so a re-run repeats them
- ``verify`` / ``lint``  phase 5: deterministic checks reporting ``findings.Finding``
- ``collect``    phase 5: the real ``pytest --collect-only`` confirmation of the count
- ``junit``      phase 6.5: JUnit XML parsing and the local pytest runner
- ``summary``    phase 7: ``final_summary.md``
- ``workflow``   the engine wiring; its steps are ``steps`` (phases 1-4) and ``gates`` (5-7)

Nothing here imports libcst at package import; ``codemods`` imports it lazily.
"""
