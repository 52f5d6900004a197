"""Pure core of the PyTorch test-refactoring workflow (phases 1-7 of the seed).

Modules, each a function of its inputs returning typed results:

- ``fields``     which field (core / distributed / graph) a test file belongs to
- ``identity``   which flow a start command means (the checkout and the file's content count)
- ``rules``      the rule catalogue in ``reference/refactor/rules.json``
- ``assess``     phase 1: the stdlib-``ast`` assessment of a test file
- ``analysis``   phase 2: the analyst report model and its check against the assessment
- ``distribute`` phase 3: analyst report + catalogue -> ordered per-rule coder tasks
- ``devices``    which device strings are placements and which are PyTorch device checks
- ``codemods``   phase 4 (mechanical rules): libcst rewrites (TR001 + TR002 in one pass, TR009)
- ``imports``    the codemods' import edits and usort with PyTorch's settings
- ``sentinels``  phase 4 (TR010): dynamo sentinel files renamed by file name
- ``mechanical`` phase 3's IO: applies the codemods from snapshots, so a re-run repeats them
- ``verify`` / ``lint``  phase 5: deterministic checks reporting ``findings.Finding`` (pyflakes included)
- ``decisions``  disputes of findings, their decisions and waivers; local-test verdict checks
- ``interpreter`` which Python runs the tests (the checkout's environment when found)
- ``testenv``    the flow's test environment: that interpreter, its torch, the job settings, and
  the original's ``pytest --collect-only`` (before the plan: an original that does not import stops there)
- ``collect``    phase 5: the real ``pytest --collect-only`` confirmation of the count
- ``junit``      phase 6.5: JUnit XML parsing and the local pytest runner
- ``testids``    a test's own function behind its test id, the ids a function gets, the tests a
  change moves (``preexisting`` matches deferred failures with it; the PR lists the moves)
- ``summary``    phase 7: ``final_summary.md``; ``prtext`` the PR description it opens with;
  ``prchange`` what the change does as reviewers read it (wider coverage, label-only, CUDA
  markers taken out)
- ``hwclass``    PyTorch's HardwareClassification: strategies -> labels, a class read as TEST_LINTER does
- ``hwcodemod``  the verify-time codemods: HW001 (``hw_classification`` labels, the merged import),
  HW002 (same-call CUDA APIs to ``torch.accelerator``)
- ``deviceapis`` the device API catalog (``reference/refactor/device_apis.json``) and a test's calls into it
- ``testlinter`` TEST_LINTER's documented rules built in, the checkout's script's output, its
  allowlist, the checkout's line length; ``linting`` runs them (and the codemods) in verify
- ``hwruns``     phase 6.5: the ``--hw-classification`` runs and their counts
- ``declaration`` the engine wiring; its steps are ``steps`` (phases 1-4), ``fixloop`` (5-6:
  verify, review, fix rounds) and ``gates`` (6.5-7: the local test gate, the summary)

Nothing here imports libcst at package import; ``codemods`` imports it lazily.
"""
