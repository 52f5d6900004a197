"""The dashboard: a read-only local web page over a workspace or a PostgreSQL store
(``orchestrator.py serve``).

A front end beside ``flow.cli`` and ``flow.mcp``: it reads what the engine wrote and never
writes, locks or runs a flow.

- ``server``    bind 127.0.0.1 on a free port, print the URL as one JSON object, serve
- ``app``       the Starlette routes, the escaped templates, the security headers
- ``hosts``     the Host names answered (DNS rebinding), the warning for an open --host
- ``index``     one summary per flow, re-read only when that flow changed
- ``pages``     what a flow's page shows, read from that flow
- ``pagecache`` a flow's page rendered once per saved version of it, its ETag
- ``source``    where they are read from: the flow folders, or the PostgreSQL store
- ``campaigns`` a campaign of the PostgreSQL store: items, leases, outcomes, report
- ``outputs``   a flow's outputs: verdict, batch buckets, refactor summary and diff, CI rounds
- ``templates`` and ``static``: the HTML, the style sheet, the one script and the icon

Nothing is imported here.
"""
