"""Reads a list of names, one a line."""


def names(text: str) -> list[str]:
    return [line for line in text.split("\n")]  # BUG: keeps the empty last line
