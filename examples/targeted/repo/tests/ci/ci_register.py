"""Registration markers. CI reads the calls from each test file's source; at run time they
do nothing."""

from tests.ci.labels import KNOWN_LABELS


def register_cuda_ci(est_time, suite, *, labels=(), nightly=False, disabled=None):
    assert set(labels) <= set(KNOWN_LABELS)


def register_cpu_ci(est_time, suite, *, labels=(), nightly=False, disabled=None):
    assert set(labels) <= set(KNOWN_LABELS)
