"""The orchestrator's library, in layers from the bottom up:

- ``core``       the machine and its contract: the workflow declaration, outcomes, state,
                 the engine that drives a flow, spec rendering, background jobs, the process
                 runner, redaction, errors and feed reading. It knows no workflow.
- ``github``     the thin GitHub adapter over PyGithub the workflows share.
- ``workflows``  one package per workflow (reproduce, refactor, ci, targeted, ingest,
                 review_queue) and the registry that finds them; each uses the core and is
                 never used by it.
- ``cli``        the command line: parsers, dispatch, status, schemas, graphs, demos.
- ``mcp``        the same calls as typed tools of an MCP server.

Nothing is imported here.
"""
