"""Title-cases words."""


def title(text: str) -> str:
    return text.capitalize()  # BUG: only the first word
