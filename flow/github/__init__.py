"""The thin GitHub adapter over PyGithub.

PyGithub is imported only inside the submodules that talk HTTP (`client`, `reads`,
`actions`, `artifacts`), never here, so importing `flow.github` (for its errors or
snapshot models) stays cheap. Modules:

- `errors`    typed errors (MissingToken, BadSetting, UnknownRepo, NoPullRequest, RateLimited, ...)
- `models`    pydantic snapshots the adapter produces and `flow.workflows.ci.classify` reads
- `remote`    owner/repo and branch from a local git checkout's `origin`
- `token`     the token file a user names once: what it may hold, how it is read
- `access`    the API URL and token file a flow records at its start (cron-safe)
- `client`    connect(): settings, retries with backoff, error translation, rate-limit kinds
- `trouble`   what a step does when GitHub says no: sleep (limits, outages) or ask a person
- `cache`     the on-disk ETag cache for conditional requests
- `reads`     find the PR, read a head commit's checks, statuses and workflow runs
- `merged`    one rule for "merged": `merged_at`, or closed with a merge bot's `Merged` label
- `required`  which checks the base branch requires (protection + rules), or the fallback
- `actions`   job logs (raw; the ci workflow trims them), re-run failed jobs, comments,
              labels, mark ready
- `artifacts` reproduce Stage 3: Path A and Path B wheel lookups and downloads
"""
