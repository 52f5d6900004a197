"""One run of the reproducer and what it means, shared by every stage (seed: Stage 1 "Run
test"): ``deciding`` spells it (interpreter, flags, clean environment, report; standard
library, shared with ``headstart``), ``block`` (what a shell block's setup leaves for its
step), ``runner`` runs it (IO), ``interpret`` reads its
output, ``imports`` records which files the run imported (through ``importhook``, the
folder the run gets on ``PYTHONPATH``), ``decision`` holds the rows every stage's table shares, ``attempts`` runs a stage
(``--repeat``) and acts on its table."""
