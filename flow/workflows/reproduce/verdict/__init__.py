"""The output (seed: "Output"): ``models`` (the four verdicts), ``refined_command`` (its
contract), ``environment`` (where a verdict was reached), ``finalize`` (the fields beyond the
seed's), ``hints`` (how to get past a missing import), ``report`` (the verdict step),
``reuse`` (the flow id keyed by inputs and environment)."""
