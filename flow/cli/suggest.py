"""Help that suggests: what a mistyped option or command most likely meant.

A person (or a harness) that types ``--comand`` gets a usage error saying ``did you mean
--command?`` instead of a bare "unrecognized arguments"; a flag that belongs to another command
is named as such; a first word that is close to a command name (``reprodce``) is refused as a
mistyped command rather than taken for the seed's bare test FILE. The matching is
``difflib.get_close_matches`` over the names that parser (or the command table) knows, so a
suggestion is always a real option of the command being parsed.

Nothing here knows the command table itself: ``flow.cli.argv`` passes its names in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from flow.core.errors import UsageError

CUTOFF = 0.6  # difflib's own default: '--comand' -> '--command', '--stag' -> '--stage'


def closest(word: str, choices: Iterable[str], cutoff: float = CUTOFF) -> str | None:
    """The one choice most like ``word``, or None when none is close enough."""
    import difflib  # only a call that went wrong pays for it

    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return found[0] if found else None


def unknown_arguments(prog: str, command: str | None, extras: list[str], options: Iterable[str],
                      owners: Mapping[str, list[str]]) -> UsageError:
    """The usage error for arguments a parser left over: the first unknown option named, with
    the option of this parser it most likely meant (``did you mean --command?``), or the
    commands it belongs to when it is another command's flag. ``options``: the option strings
    of ``command``'s parser; ``owners``: option -> the commands that take it. A stray word that is no option is reported as argparse does."""
    flags = [a for a in extras if a.startswith("-") and a != "-"]
    if not flags:
        return UsageError(f"bad command line: unrecognized arguments: {' '.join(extras)}",
                          f"run '{prog} --help' for this command's flags")
    given = flags[0].split("=", 1)[0]
    others = [c for c in owners.get(given, []) if c != command]
    message = f"bad command line: unknown option {given!r} for '{prog}'"
    hint = f"run '{prog} --help' for this command's flags"
    best = closest(given, [o for o in options if o.startswith("--")] if given.startswith("--")
                   else options)
    if others:  # a real flag, of another command: that is the likelier intent
        message += f" ({given} is a flag of {', '.join(others)})"
        return UsageError(message, f"use {given} with {' or '.join(others)}, or {hint}")
    if best is None:
        return UsageError(message, hint)
    return UsageError(f"{message}; did you mean {best}?", f"did you mean {best}? {hint}",
                      did_you_mean=best)


def looks_like_a_command(word: str) -> bool:
    """A first word that may be a mistyped command, not the seed's bare test FILE: a file is
    given as a path (``test/test_ops.py``), so a word with no '/' and no '.' is no file."""
    return "/" not in word and "." not in word and not word.startswith("-")


def unknown_command(word: str, commands: Iterable[str], prog: str) -> UsageError | None:
    """The usage error for a first word close to a command name, or None when it is not
    close to any (the caller then takes it as a test FILE, as the seed does)."""
    if not looks_like_a_command(word):
        return None
    best = closest(word, commands)
    if best is None:
        return None
    return UsageError(f"unknown command {word!r}; did you mean {best}?",
                      f"did you mean {best}? run '{prog} --help' for the commands (a test "
                      "file to refactor is given as its path, e.g. test/test_ops.py)",
                      did_you_mean=best)
