"""Where a flow reaches GitHub, fixed when the flow starts and kept in its state.

A cron job (Codex's `user_cron_line`, a person's crontab) runs under a minimal environment:
no ORCHESTRATOR_GITHUB_API, no GITHUB_TOKEN. So a flow records, once, at its start:

- `api_url`: ORCHESTRATOR_GITHUB_API (else https://api.github.com). Every later tick uses
  this value, whatever its environment says: a firing without the variable never drifts to
  api.github.com, and one with another value never talks to a second server.
- `token_file`: ORCHESTRATOR_GITHUB_TOKEN_FILE, an absolute path the user names once. The
  token itself is never stored: each tick reads GITHUB_TOKEN / GH_TOKEN when set, else
  this file. The file holds the token alone on a line, or env-file lines
  (`GITHUB_TOKEN=...`, `export GH_TOKEN=...`, quotes allowed).

Imports no PyGithub.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from flow.github.errors import BadSetting
from flow.github.token import TOKEN_FILE_ENV, read_token_file

DEFAULT_API = "https://api.github.com"
API_ENV = "ORCHESTRATOR_GITHUB_API"
class Access(BaseModel):
    """The API base URL and (optionally) the token file's path; never the token."""

    model_config = ConfigDict(extra="forbid")
    api_url: str = DEFAULT_API
    token_file: str | None = None


def access_from(settings: Mapping[str, str]) -> Access:
    """The access a flow starting now records. BadSetting when the named token file is not an
    absolute path to a readable file (a cron job's working directory is not the user's)."""
    api = (settings.get(API_ENV) or DEFAULT_API).strip().rstrip("/")
    if not api.startswith(("http://", "https://")):
        raise BadSetting(API_ENV, api, "an http(s) URL such as https://api.github.com")
    raw = (settings.get(TOKEN_FILE_ENV) or "").strip()
    if not raw:
        return Access(api_url=api)
    path = Path(raw).expanduser()
    if not path.is_absolute():
        raise BadSetting(TOKEN_FILE_ENV, raw, "an absolute path (cron jobs start elsewhere)")
    read_token_file(str(path))  # refuses now what a later tick could not read
    return Access(api_url=api, token_file=str(path))


def connect_with(access: Access, settings: Mapping[str, str] | None = None, **kw: Any) -> Any:
    """A GitHubClient for the recorded access (the token from the environment, else the file)."""
    from flow.github.client import connect

    env = os.environ if settings is None else settings
    return connect(access.api_url, env=env, token_file=access.token_file, **kw)
