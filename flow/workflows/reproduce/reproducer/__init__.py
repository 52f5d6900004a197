"""The reproducer as given (seed: Inputs and Stage 1 "Reproducer forms"): ``shellsplit``
splits a shell block into simple commands; ``forms`` names the form and decides ``needs_tree``."""
