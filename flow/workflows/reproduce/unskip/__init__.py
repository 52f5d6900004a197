"""The re-run without the skip marker (seed: Stage 1, "all skipped by @skipIfXpu"):
``marker`` edits and restores the decorator, ``plan`` chooses the bypass or the edit and
records it first, ``steps`` runs again and puts the file back."""
