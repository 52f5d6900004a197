"""The command line behind ``orchestrator.py``:

- ``argv``     the subcommand parsers (``reproduce``, ``refactor``, ``status``, ...)
- ``suggest``  what a mistyped option or command most likely meant (did you mean ...?)
- ``main``     dispatch: start, resume, feed or answer a flow under its lock
- ``flowids``  the one flow a short ``--flow`` id (no workflow folder, a prefix) names
- ``ahead``    a new flow's first long run started ahead of the workflow's imports
- ``status``   every flow of a workspace at a glance
- ``inbox``    what needs a person first (``status --needs-me``, the dashboard's list)
- ``jobstate`` a flow's jobs as status shows them: running, finished (its result file), taken
- ``fleet``    every flow of a PostgreSQL store, and ``status --campaign``
- ``campaigns`` the campaign command: define, claim an item, drive its flow
- ``leases``   a leased flow's calls: the token checked and renewed, the item finished
- ``schemas``  the JSON schemas of specs and feeds (``schema NAME``)
- ``graph``    a workflow's state machine as Mermaid text or a Graphviz picture (``graph NAME``)
- ``person``   what a terminal shows instead of the JSON object (help, errors, graph, demo, serve)
- ``demo``     the bundled demos, driven as a harness would

Nothing is imported here.
"""
