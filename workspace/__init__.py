"""Where flows live (the state store):

- ``interface``  the store interface the stores implement (defined in ``flow.core.store``)
- ``store``      the file store: one flow's folder (state, audit log, spec cache, logs)
- ``lock``       the file store's per-flow lock
- ``selection``  which store a call uses (``--store`` / ``ORCHESTRATOR_STORE``)
- ``pgstore``    the PostgreSQL store: state, audit, spec cache and lock in a database;
                 ``pgbeat`` the heartbeat of a call that holds a flow's lock (and lease)
- ``pgconn``     one connection per process to it; ``pgschema`` its versioned schema;
                 ``pgerrors`` its URL rules and errors; ``pgoutputs`` a flow's outputs
                 (verdicts, reports, summaries, accepted feeds) kept beside its state
- ``campaign``   campaigns: items split among workers by leases in the PostgreSQL store;
                 ``campaignstatus`` what an operator reads about one
- ``paths``, ``atomic``, ``jsonio``, ``migrations``  where files are, atomic writes and
                 JSON (the engine's ``flow.core.atomic`` and ``flow.core.jsonio``), migrations
                 of the state's shape

Nothing is imported here.
"""
