"""Prepare (seed: "Prepare"): ``rules`` (where the reproducer runs, the collect-only decision),
``steps`` (get the tree, place the run, the collect-only check)."""
