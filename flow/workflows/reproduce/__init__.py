"""Pure core of the fix-reproduce workflow (seed: fix-reproduce.md).

Modules, each a function of its inputs with IO passed in or kept in thin adapters:

- ``shellsplit``: split a shell block into simple commands (quotes, continuations,
  comments, here-docs) without running a shell.
- ``forms``: recognise the reproducer form, split shell blocks, decide ``needs_tree``.
- ``verdict``: the four output models, exactly the seed's fields.
- ``refined_command``: render the single shell string of the output contract.
- ``interpret``: read a run (pytest text/JUnit, exit code) into a ``RunOutcome``.
- ``skipmarker``: remove an XPU skip decorator from one test with libcst.
- ``stages``: the Stage 1/2/3 decision tables and the ci_commit fallback.
- ``ci_env``: ci_repo inference, the build_env table, CI job-log folding.
- ``wheels``: same-build-day check, pip argument lists, the cwd / in-tree-import rules.
- ``artifacts``: range probe, download with retries, wheel extraction (urllib only).
- ``commands``: fill a profile's git recipes per argument (never a shell string).
- ``sourcebuild``: the local profile's Stage 2 (source dir -> wheel -> fresh venv).
- ``profiles``: load and validate ``reference/reproduce/*.toml``.
- ``batch``: batch files of reproducers, buckets, Markdown and JSON reports.
- ``envinfo``: the verdict's ``environment`` (interpreter, versions, tree state) and
  ``rerun_after_fix``; ``reuse``: the flow id keyed by inputs and environment.
- ``runner``: runs through ``flow.proc`` (reproducer runs in a clean shell, as jobs).
- ``localbuild``: the local Stage 2 build command (editable install into a fresh venv).

Steps (IO through ``runner``): ``workflow`` (wiring), ``stepsflow`` (Prepare, collect,
Stage 1, shared helpers), ``unskipflow``, ``buildflow`` (Stage 2), ``ciflow`` (Stage 3),
``verdictflow`` (the verdict's extra fields), ``batchflow``.

Nothing here imports libcst or PyGithub at import time.
"""
