"""The fix-reproduce workflow (seed: fix-reproduce.md), folder by folder in the seed's order.

Rules are pure functions of what a step saw (the seed's tables); steps do the IO through
``run.runner`` and hand what they saw to their stage's rules.

- ``identity``      the inputs read and checked, the flow id they hash to (standard library)
- ``declaration``   the declaration: states, transitions, feeds, the flow's data, start
- ``context``       what every step reads from its flow (profile, interpreter, launcher)
- ``profiles``      ``reference/reproduce/*.toml``, validated; ``recipes`` fills their commands
- ``reproducer/``   Inputs: ``shellsplit`` (with ``heredoc``) splits an issue's shell block, ``forms`` names its
                    form and decides ``needs_tree``
- ``preflight``     Preflight: NO_REPRODUCER(no_command) before any stage
- ``prepare/``      Prepare: ``rules`` (where the reproducer runs, the collect-only decision),
                    ``steps`` (get the tree, place the run, collect-only)
- ``run/``          one run and what it means, shared by every stage: ``deciding`` (how
                    the deciding run is spelled: interpreter, flags, environment, report),
                    ``block`` (what a shell block's setup leaves for its step),
                    ``runner`` (IO), ``interpret`` (output -> outcome), ``decision`` (the
                    rows every table shares), ``attempts`` (``--repeat``, the stage's table,
                    the next trigger)
- ``unskip/``       "all skipped by @skipIfXpu": ``marker`` (the decorator edit and its
                    restore), ``plan`` (bypass or edit, recorded first), ``steps`` (the re-run)
- ``stage1/``       Stage 1, the nightly wheel: ``rules`` (same build day, pip argv, the
                    table), ``steps`` (install, setup steps, run)
- ``stage2/``       Stage 2, the source build: ``rules`` (the build plan with its ci_commit
                    fallback, the table), ``build`` (the local profile's build command),
                    ``venv`` (venv pieces Stage 3 shares), ``steps``
- ``stage3/``       Stage 3, CI environment alignment: ``rules`` (ci_repo, build_env, job-log
                    folding, the table), ``fetch`` and ``artifacts`` (the CI run and its
                    wheels: IO), ``steps``
- ``verdict/``      Output: ``models`` (the four verdicts), ``refined_command``,
                    ``environment`` (where it was reached), ``finalize`` (the fields beyond
                    the seed's), ``report`` (the verdict step), ``reuse`` (the flow id)
- ``batch/``        the sweep of many reproducers: ``entries`` (the file, buckets, reports),
                    ``steps``
- ``headstart``     the first Stage 1 run worked out from the command line alone, so the
                    command line can start it before the workflow is imported
- ``errors``        the exception tree of this workflow

Nothing here imports libcst or PyGithub at import time.
"""
