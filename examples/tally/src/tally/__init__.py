"""tally: small money helpers (amounts are integer cents).

An example project for the fix-reproduce workflow: each bug listed in README.md is real
in this code, and each has a test (or an issue-style reproducer) that shows it.
"""
from __future__ import annotations

__version__ = "0.3.0"
