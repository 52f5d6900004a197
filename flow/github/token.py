"""The GitHub token file a user names once (``ORCHESTRATOR_GITHUB_TOKEN_FILE``): what it may
hold and how it is read, and what a token may be. The value is never logged or stored;
``access`` records the path, ``client`` reads the token through it on each tick. The file is
read as feed files are (``flow.core.boundedfile``): a regular file of at most
``TOKEN_FILE_MAX`` bytes, opened non-blocking, so ``/dev/zero`` or a FIFO is refused, not read
forever. A token is checked before any request (``clean_token``): surrounding whitespace (a
stray ``\r`` from a Windows-edited file) is stripped, and one that still holds a control
character or a space is refused without showing it, since requests would otherwise quote it
whole in an ``InvalidHeader`` message. Imports no PyGithub.
"""

from __future__ import annotations

from flow.core.boundedfile import UnreadableFile, read_regular
from flow.github.errors import BadSetting, GitHubError

TOKEN_FILE_ENV = "ORCHESTRATOR_GITHUB_TOKEN_FILE"
_TOKEN_KEYS = ("GITHUB_TOKEN", "GH_TOKEN")
TOKEN_FILE_MAX = 64 * 1024  # a token file holds a line or a few; anything larger is not one


class BadToken(BadSetting):
    """A token that cannot go into an HTTP header (a control character, a space or a character
    outside printable ASCII, such as U+2028, inside)."""

    code = "github_bad_token"

    def __init__(self, source: str) -> None:
        GitHubError.__init__(  # BadSetting's own message would quote the value
            self,
            f"the GitHub token from {source} holds a control character, a space or a "
            "non-ASCII character inside it (the value is not shown)",
            f"write the token again without line breaks or spaces inside (check {source} for a "
            "pasted \\r or a second line), then re-run",
            setting=source,
        )


def clean_token(token: str, source: str) -> str:
    """``token`` without surrounding whitespace; ``BadToken`` when anything but printable
    ASCII is left inside (it could never be sent, and an HTTP library would echo it)."""
    value = token.strip()
    if any(not 0x21 <= ord(c) <= 0x7E for c in value):
        raise BadToken(source)
    return value


def read_token_file(path: str) -> str | None:
    """The token the file holds (a bare token line, or GITHUB_TOKEN= / GH_TOKEN= lines), or
    None when it holds none. BadSetting when it cannot be read. The value is never logged,
    and this process masks it wherever it shows (``flow.core.redact.remember``)."""
    token = _token_in_file(path)
    if token is not None:
        from flow.core.redact import remember

        remember(token)
    return token


def _token_in_file(path: str) -> str | None:
    try:
        text = read_regular(path, TOKEN_FILE_MAX).decode("utf-8")
    except UnreadableFile as exc:
        raise BadSetting(TOKEN_FILE_ENV, path, f"a readable token file (it {exc.reason})") from None
    except UnicodeDecodeError:
        raise BadSetting(TOKEN_FILE_ENV, path, "a UTF-8 text file") from None
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
