"""Changed lines gated to Blackwell, in every spelling the tracer must read as Blackwell-only.

Cases as data: each source ends with the line ``y = 1`` inside one branch; the case says
whether that line runs only on Blackwell (compute capability 10 or 12).
"""

from __future__ import annotations

import pytest

from flow.workflows.targeted.blackwell import gated_lines, may_gate

HEAD = "import torch\ncap = torch.cuda.get_device_capability()\nmajor = cap[0]\n"
CASES = [
    ("major >= 10", "if major >= 10:\n    y = 1\n", True),
    ("a tuple membership on cap[0]", "if cap[0] in (10, 12):\n    y = 1\n", True),
    ("a set membership on major", "if major in {10, 12}:\n    y = 1\n", True),
    ("a list of (major, minor) pairs", "if cap in [(10, 0), (12, 0)]:\n    y = 1\n", True),
    ("the capability call against a tuple",
     "if torch.cuda.get_device_capability() >= (10, 0):\n    y = 1\n", True),
    ("not in: the else runs on Blackwell", "if cap[0] not in (10, 12):\n    y = 0\nelse:\n"
     "    y = 1\n", True),
    ("Hopper among the majors", "if cap[0] in (9, 10):\n    y = 1\n", False),
    ("a membership test of something else", "if mode in (10, 12):\n    y = 1\n", False),
    ("not in: its body runs off Blackwell", "if major not in (10, 12):\n    y = 1\n", False),
    *[(f"a helper named for the architecture: {c}", f"if {c}:\n    y = 1\n", True)
      for c in ("is_blackwell()", "is_sm100()", "is_sm120()", "_on_b200()", "IS_GB200",
                "sm_100_available()")],
    ("major == 12 (RTX Blackwell)", "if major == 12:\n    y = 1\n", True),
    ("cap[0] == 12", "if cap[0] == 12:\n    y = 1\n", True),
    ("major == 9 is Hopper", "if major == 9:\n    y = 1\n", False),
    ("an architecture string", 'arch = "sm_90"\nif arch == "sm_100":\n    y = 1\n', True),
    ("an architecture string, reversed", 'arch = "sm_90"\nif "sm_120" == arch:\n    y = 1\n',
     True),
    ("an architecture string inside a name", 'arch = "sm_90"\nif "sm_120" in arch:\n    y = 1\n',
     True),
    ("a tuple of Blackwell architecture strings",
     'arch = "sm_90"\nif arch in ("sm_100", "sm_120"):\n    y = 1\n', True),
    ("a Hopper string among them", 'arch = "sm_90"\nif arch in ("sm_90", "sm_100"):\n    y = 1\n',
     False),
    ("!= an architecture string: the else", 'arch = "sm_90"\nif arch != "sm_100":\n    y = 0\n'
     'else:\n    y = 1\n', True),
    ("!= an architecture string: its body", 'arch = "sm_90"\nif arch != "sm_100":\n    y = 1\n',
     False),
    ("a name that only contains the digits", "if use_b2000_mode:\n    y = 1\n", False),
]


@pytest.mark.parametrize("source, blackwell", [(s, b) for _, s, b in CASES],
                         ids=[name for name, _, _ in CASES])
def test_a_spelling_of_the_blackwell_gate(source: str, blackwell: bool) -> None:
    """The last line is Blackwell-only exactly when the case says so."""
    text = (HEAD + source).encode()
    last = (HEAD + source).count("\n")
    assert blackwell == (may_gate(text) and last in gated_lines(text))
