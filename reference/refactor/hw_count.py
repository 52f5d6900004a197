"""Count a PyTorch test file's tests per ``hw_classification`` label, in one interpreter and
without running them: ``python hw_count.py FILE LABEL...``.

The refactor's local test gate (seed phase 6.5) has just run the whole file; what it still
needs is PyTorch's own count line for each label, the one ``python FILE --hw-classification
LABEL`` prints before it runs that label's tests::

    HW classification mode active (['GENERIC']): total=3, passed=2, unclassified=0, mismatched=1

This script runs FILE as ``__main__`` with ``common_utils.run_tests`` replaced: where the file
calls ``run_tests()``, it does what ``run_tests()`` does up to its test loader (parse the
command line, refuse a class that does not extend common_utils' ``TestCase``: exit 1 with no
count line, as ``run_tests()`` does), then loads the module once per label with upstream's
``HardwareClassificationTestLoader``, whose filter prints that line, and exits 0 without
running a test. The counts are upstream's filter over the classes the file instantiates, as
the per-label commands count them; one interpreter start instead of one per label, and the
file's tests are not run a second time.

A label this torch does not know gets no line (the other labels are counted) and is named
on stderr; a file that never calls ``run_tests()`` exits 3 saying so. Standard library and the test
interpreter's torch only: it runs in whatever interpreter runs the tests, which need not
have the orchestrator installed.
"""

from __future__ import annotations

import os
import runpy
import sys
import unittest

NOT_CALLED = 3


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: hw_count.py FILE LABEL...", file=sys.stderr)
        return 2
    file, labels = os.path.abspath(argv[0]), argv[1:]
    from torch.testing._internal import common_utils

    known = common_utils.HardwareClassification.__members__
    unknown = [label for label in labels if label.upper() not in known]
    if unknown:  # as `python FILE --hw-classification NAME` refuses it: that label has no line
        print(f"no such hw_classification in this torch: {', '.join(unknown)} "
              f"(it has {', '.join(known)})", file=sys.stderr)
    wanted = [known[label.upper()] for label in labels if label.upper() in known]

    def count(argv: object = None) -> None:
        parse = getattr(common_utils, "parse_cmd_line_args", None)
        if parse is not None:
            parse()
        module = sys.modules["__main__"]
        if not common_utils.lint_test_case_extension(unittest.TestLoader().loadTestsFromModule(module)):
            sys.stdout.flush()
            os._exit(1)
        for label in wanted:
            common_utils.HardwareClassificationTestLoader({label}).loadTestsFromModule(module)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # nothing the file would do after run_tests() runs: no test, no teardown

    common_utils.run_tests = count
    sys.argv = [file]
    sys.path[0] = os.path.dirname(file)  # as `python FILE` puts the file's folder first
    runpy.run_path(file, run_name="__main__")
    print(f"{file} ended without calling run_tests(): no count", file=sys.stderr)
    return NOT_CALLED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
