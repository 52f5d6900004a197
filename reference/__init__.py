"""Data the workflows read: rule catalogues, field test lists, reproduce and review profiles,
label and failure-pattern tables, the refactor gate's pytest plugin, the agents' prompt
templates (``prompts/``). Each loader validates
what it reads; ``DIR`` is where this data lives, wherever the package is installed."""

from pathlib import Path

DIR = Path(__file__).resolve().parent
