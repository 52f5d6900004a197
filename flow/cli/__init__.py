"""The command line behind ``orchestrator.py``:

- ``argv``     the subcommand parsers (``reproduce``, ``refactor``, ``status``, ...)
- ``main``     dispatch: start, resume, feed or answer a flow under its lock
- ``ahead``    a new flow's first long run started ahead of the workflow's imports
- ``status``   every flow of a workspace at a glance
- ``inbox``    what needs a person first (``status --needs-me``, the dashboard's list)
- ``jobstate`` a flow's jobs as status shows them: running, finished (its result file), taken
- ``fleet``    every flow of a PostgreSQL store, and ``status --campaign``
- ``campaigns`` the campaign command: claim an item, drive its flow, renew and finish its lease
- ``schemas``  the JSON schemas of specs and feeds (``schema NAME``)
- ``graph``    a workflow's state machine as Mermaid text or a Graphviz picture (``graph NAME``)
- ``person``   what a terminal shows instead of the JSON object (help text, Mermaid text)
- ``demo``     the bundled demos, driven as a harness would

Nothing is imported here.
"""
