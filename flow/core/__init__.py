"""The machine and its contract (``../shared/design/protocol.md``), knowing no workflow:

- ``workflow``  a workflow declared as data: states, transitions, one step per state, feed
                models; the same declaration builds the ``transitions`` machine and its graph
- ``outcome``   what a step returns: ``Go``, ``Ask`` (tasks), ``Human``, ``Sleep``, ``Done``
- ``state``     the persisted state of one flow (``flow_state.json``)
- ``feeds``     the base models of fed results; ``feedfile`` the bounded feed-file reader
- ``boundedfile`` reading a file someone else names: regular, bounded, never blocking
- ``engine``    the driver: runs steps, emits tasks, applies feeds and answers, saves
- ``store``     the interface of where a flow lives (the stores in ``workspace`` implement it)
- ``render``    the JSON specs a harness follows (task fields by the harness's adapter the
                command line hands over); ``commands`` the absolute commands in them
- ``jsonio``    the one way JSON is written; ``atomic`` atomic and no-follow file writes;
                ``naming`` file-safe names, paths kept inside a folder, UTC stamps
- ``jobs``      background jobs a flow owns beyond one call
- ``proc``      the one door for child processes, and the foreground budget
- ``supervisor`` a child run to its end (capped log, process group, deadline); the job
                supervisor, started lean in an interpreter of its own
- ``redact``    which settings are secrets, and masking them in what is read back
- ``bounds``    the rules for what a person types: numbers in ASCII digits within each
                flag's range, numeric settings, campaign names, ids used once
- ``errors``    the exception tree every refusal is made of

Nothing is imported here: ``--resume`` and ``--feed`` import only what they use.
"""
