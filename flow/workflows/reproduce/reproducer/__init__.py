"""The reproducer as given (seed: Inputs and Stage 1 "Reproducer forms"): ``shellsplit``
splits a shell block into simple commands (``heredoc`` rewrites a here-document line that
goes on after ``;`` the way bash reads it); ``forms`` names the form and decides
``needs_tree``."""
