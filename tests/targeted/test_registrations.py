"""Registrations read from top-level register_*_ci calls; unreadable ones carry a reason."""

from __future__ import annotations

import pytest

from flow.workflows.targeted.config import Implicit, TargetedConfig, load_profile
from flow.workflows.targeted.registrations import Registration, Unreadable, read_source

FULL = ('register_cuda_ci(est_time=500, suite="stage-c-2-gpu-h200", num_gpus=2,\n'
        '    labels=["megatron"], hardware=["hopper", "blackwell"])\n')

VALID = [
    ("cuda with every field", FULL,
     [Registration(path="t.py", backend="cuda", suite="stage-c-2-gpu-h200", est_time=500,
                   num_gpus=2, labels=["megatron"], hardware=["hopper", "blackwell"])]),
    ("nightly and disabled", 'register_cuda_ci(est_time=9, suite="s", nightly=True, '
     'disabled="flaky, see #12")\n',
     [Registration(path="t.py", backend="cuda", suite="s", est_time=9, nightly=True,
                   disabled="flaky, see #12")]),
    ("cpu and rocm in one file", 'register_cpu_ci(suite="stage-b-cpu", labels=("k8s",))\n'
     'register_rocm_ci(suite="nightly-stage-c-2-gpu-mi300", est_time=5)\n',
     [Registration(path="t.py", backend="cpu", suite="stage-b-cpu", labels=["k8s"]),
      Registration(path="t.py", backend="rocm", suite="nightly-stage-c-2-gpu-mi300",
                   est_time=5)]),
    ("attribute call", 'import ci\nci.register_cpu_ci(suite="stage-b-cpu")\n',
     [Registration(path="t.py", backend="cpu", suite="stage-b-cpu")]),
    # miles: register_cuda_ci(est_time, suite, *, labels, ...) with est_time a float
    ("est_time and suite by position, est_time a float",
     'register_cuda_ci(60.5, "stage-b-2-gpu-h200", labels=["short"])\n',
     [Registration(path="t.py", backend="cuda", suite="stage-b-2-gpu-h200", est_time=60.5,
                   labels=["short"])]),
    ("est_time by position, suite by keyword, labels None",
     'register_cpu_ci(30, suite="stage-a-cpu", labels=None)\n',
     [Registration(path="t.py", backend="cpu", suite="stage-a-cpu", est_time=30)]),
]


def _plain(got):
    """Registrations without their call's line span (pinned by its own test)."""
    return [r.model_copy(update={"span": []}) for r in got]


def test_registration_records_its_call_lines():
    """Each registration keeps the first and last line of its call."""
    got = read_source("t.py", b"import x\nregister_cpu_ci(\n  1,\n  'stage-a-cpu',\n)\n",
                      TargetedConfig())
    assert [[2, 5]] == [r.span for r in got]


@pytest.mark.parametrize("name,source,expected", VALID, ids=[v[0] for v in VALID])
def test_valid_declaration_is_read(name, source, expected):
    """A top-level literal declaration becomes Registration rows."""
    assert expected == _plain(read_source("t.py", source.encode(), TargetedConfig()))


INVALID = [
    ("none", "def test_x(): ...\n", "none: no top-level"),
    ("syntax error", "register_cuda_ci(est_time=1,\n", "syntax error: line"),
    ("three positional arguments", 'register_cuda_ci(60, "s", ["x"])\n',
     "only est_time, suite may be positional"),
    ("one value twice", 'register_cuda_ci(60, "s", suite="t")\n', "suite given twice"),
    ("non-literal value", 'T = 60\nregister_cuda_ci(est_time=T, suite="s")\n',
     "est_time not a literal"),
    ("unknown keyword", 'register_cuda_ci(est_time=6, suite="s", lables=["x"])\n',
     "lables: Extra inputs are not permitted"),
    ("wrong type", 'register_cuda_ci(est_time="60", suite="s")\n', "est_time"),
    ("missing suite", "register_cuda_ci(est_time=60)\n", "suite: Field required"),
    ("call nested in a function is not top-level",
     'def f():\n    register_cuda_ci(est_time=6, suite="s")\n', "none: no top-level"),
]


@pytest.mark.parametrize("name,source,reason", INVALID, ids=[v[0] for v in INVALID])
def test_unreadable_declaration_has_reason(name, source, reason):
    """An unreadable declaration is an Unreadable whose reason names the problem."""
    got = read_source("t.py", source.encode(), TargetedConfig())
    assert (True, True) == (isinstance(got, Unreadable), reason in got.reason)


def test_function_names_are_configurable():
    """A config naming other registration functions reads those calls instead."""
    cfg = TargetedConfig(registration={"ci_gpu": "cuda"})
    got = _plain(read_source("t.py", b'ci_gpu(suite="g", est_time=3)\n', cfg))
    assert [Registration(path="t.py", backend="cuda", suite="g", est_time=3)] == got


def test_implicit_location_needs_no_call():
    """A test under an implicit location (miles' tests/fast/) is registered by where it is,
    with the est_time miles' reader gives it (1.0 s)."""
    cfg = load_profile("miles")
    got = read_source("tests/fast/test_a.py", b"def test(): ...\n", cfg)
    expected = [Registration(path="tests/fast/test_a.py", backend="cpu", suite="stage-a-cpu",
                             est_time=1.0, implicit=True)]
    assert expected == got


def test_implicit_rule_is_config():
    """Implicit rules come from the config, not from a hard-coded directory."""
    cfg = TargetedConfig(implicit=[Implicit(path="unit/**", suite="quick")])
    got = read_source("unit/test_a.py", b"", cfg)
    assert [Registration(path="unit/test_a.py", backend="cpu", suite="quick",
                         implicit=True)] == got
