"""The GitHub token file a user names once (``ORCHESTRATOR_GITHUB_TOKEN_FILE``): what it may
hold and how it is read. The value is never logged or stored; ``access`` records the path,
``client`` reads the token through it on each tick. Imports no PyGithub.
"""

from __future__ import annotations

from pathlib import Path

from flow.github.errors import BadSetting

TOKEN_FILE_ENV = "ORCHESTRATOR_GITHUB_TOKEN_FILE"
_TOKEN_KEYS = ("GITHUB_TOKEN", "GH_TOKEN")


def read_token_file(path: str) -> str | None:
    """The token the file holds (a bare token line, or GITHUB_TOKEN= / GH_TOKEN= lines), or
    None when it holds none. BadSetting when it cannot be read. The value is never logged."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise BadSetting(TOKEN_FILE_ENV, path, f"a readable file ({exc.strerror or exc})") from None
    bare: str | None = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export "):].strip()
        key, sep, value = line.partition("=")
        if sep and key.strip() in _TOKEN_KEYS:
            return value.strip().strip("'\"") or None
        if not sep and bare is None and " " not in line:
            bare = line
    return bare
