"""Launch-flag edges: a test that passes a flag runs the module the flag starts, though no
import chain short of the launcher hub says so.

Fixtures in our own words, shaped like a trainer launched through a command line: the
launcher names ``train.py`` in a string, the trainer reaches a manager that spawns a
side server only when ``--use-sidecar`` is set, and a model builder that takes the adapter
path only for ``--export-mode bridge`` with an adapter rank. The tests pass those flags
from a runner helper, as e2e tests do.
"""

from __future__ import annotations

from flow.workflows.targeted.config import FlagEdge, load_profile
from flow.workflows.targeted.flags import conditions, passes, read_gates
from flow.workflows.targeted.report import render_text
from flow.workflows.targeted.select import choose
from flow.workflows.targeted.trace import affected_tests

from .test_miles_idioms import CI, cuda

CFG = load_profile("miles")

TRAINER = {
    "miles/utils/__init__.py": "",
    "miles/utils/launch.py": "import subprocess\n"
                             "def run_training(flags):\n"
                             "    subprocess.run(f'python3 {ROOT}/train.py ' + flags, shell=True)\n"
                             "ROOT = '.'\n",
    "train.py": "from miles.ray import manager\nmanager.main()\n",
    "miles/ray/__init__.py": "",
    "miles/ray/manager.py":
        "import multiprocessing\n"
        "from miles.sidecar.server import run_sidecar\n"
        "from miles.model import build\n"
        "def start_sidecar(args):\n"
        "    if not getattr(args, 'use_sidecar', False):\n"
        "        return\n"
        "    proc = multiprocessing.Process(target=run_sidecar, args=(args,))\n"
        "    proc.start()\n"
        "def main(args=None):\n"
        "    start_sidecar(args)\n"
        "    build(args)\n",
    "miles/sidecar/__init__.py": "",
    "miles/sidecar/server.py": "from miles.sidecar.core import handle\n"
                               "def run_sidecar(args):\n    handle(args)\n",
    "miles/sidecar/core.py": "def handle(args):\n    return 1\n",
    "miles/model.py":
        "from miles.adapters import is_adapter_on\n"
        "from miles.bridge_helpers import build_via_bridge\n"
        "def build(args):\n"
        "    if is_adapter_on(args) and args.export_mode == 'bridge':\n"
        "        return build_via_bridge(args)\n"
        "    return None\n",
    # the predicate lives elsewhere and is re-exported, as miles' lora helpers are
    "miles/adapters.py": "from miles.adapter_flags import is_adapter_on  # noqa: F401\n",
    "miles/adapter_flags.py": "def is_adapter_on(args):\n"
                              "    '''True when an adapter is trained.'''\n"
                              "    return getattr(args, 'adapter_rank', 0) > 0 or "
                              "getattr(args, 'adapter_path', None) is not None\n",
    "miles/bridge_helpers.py": "def build_via_bridge(args):\n    return 2\n",
    "miles/arguments.py":
        "def add(parser):\n"
        "    parser.add_argument('--use-sidecar', action='store_true', "
        "help='start the sidecar; see --use-sidecar')\n"
        "    parser.add_argument('--export-mode', choices=['raw', 'bridge'], default='raw')\n"
        "    parser.add_argument('--adapter-rank', type=int, default=0)\n"
        "def check(args):\n"
        "    if args.adapter_rank and args.export_mode != 'bridge':\n"
        "        raise ValueError('--adapter-rank needs --export-mode bridge')\n",
    "miles/utils/testing/__init__.py": "",
    "miles/utils/testing/sidecar_runner.py":
        "from miles.utils.launch import run_training\n"
        "INVARIANT = {'use_sidecar': True, 'debug_only': True}\n"
        "def run(model):\n"
        "    run_training(f'--model {model} --use-sidecar ')\n",
}
SIDECAR_TESTS = {
    "tests/e2e/sidecar/__init__.py": "",
    "tests/e2e/sidecar/_common.py": "from miles.utils.testing.sidecar_runner import run\n",
    "tests/e2e/sidecar/test_small.py":
        cuda(body="from tests.e2e.sidecar._common import run\n", labels='["sglang"]'),
    "tests/e2e/sidecar/test_large.py":
        cuda(body="from tests.e2e.sidecar._common import run\n", labels='["sglang"]'),
    "tests/e2e/test_plain.py": cuda(body="from miles.utils.launch import run_training\n"
                                         "FLAGS = '--model m '\n"),
}
ADAPTER_TESTS = {
    "tests/e2e/test_bridge_adapter.py": cuda(
        body="from miles.utils.launch import run_training\n"
             "ARGS = '--export-mode bridge ' '--adapter-rank 8 '\n", labels='["lora"]'),
    "tests/e2e/test_bridge_only.py": cuda(
        body="from miles.utils.launch import run_training\n"
             "ARGS = ['--export-mode', 'bridge']\n"),
    "tests/e2e/test_raw_adapter.py": cuda(
        body="from miles.utils.launch import run_training\n"
             "ARGS = '--adapter-rank 8 --export-mode raw'\n", labels='["lora"]'),
}


def plan_of(repo, head: dict[str, str | None], cfg=CFG, extra: dict | None = None):
    first = repo.commit({**CI, **TRAINER, **SIDECAR_TESTS, **ADAPTER_TESTS, **(extra or {})})
    repo.commit(head)
    report = affected_tests(repo.path, first, config=cfg)
    return report, choose(report, cfg)


def test_a_sidecar_change_runs_the_tests_passing_the_flag_that_starts_it(repo):
    """core.py is loaded only by the sidecar server, which the manager spawns only under
    --use-sidecar: the two tests whose runner passes the flag are planned, each with the
    gate in its why; the test launching without the flag is not."""
    report, plan = plan_of(repo, {"miles/sidecar/core.py": "def handle(args):\n    return 2\n"})
    assert ["/rerun-test tests/e2e/sidecar/test_large.py",
            "/rerun-test tests/e2e/sidecar/test_small.py"] == plan.comments
    why = {t.path: t.why for t in report.tests}
    assert why["tests/e2e/sidecar/test_small.py"] == (
        "flag: miles/ray/manager.py:5 starts miles/sidecar/server.py when --use-sidecar; "
        "the test passes it (in miles/utils/testing/sidecar_runner.py)")
    assert "tests/e2e/test_plain.py" not in why
    text = render_text(report, plan)
    assert "Tests reached through a launch flag" in text
    assert "tests/e2e/sidecar/test_large.py  <- flag: miles/ray/manager.py:5" in text
    assert [("miles/sidecar/server.py", ["tests/e2e/sidecar/test_large.py",
                                         "tests/e2e/sidecar/test_small.py"])] == [
        (e.module, e.tests) for e in report.flag_edges]


def test_a_value_and_a_predicate_both_narrow_the_tests(repo):
    """build_via_bridge runs for --export-mode bridge with an adapter rank (the predicate is
    read through its re-export): only the test passing both is planned."""
    report, plan = plan_of(repo, {"miles/bridge_helpers.py": "def build_via_bridge(args):\n"
                                                             "    return 3\n"})
    assert ["/rerun-test tests/e2e/test_bridge_adapter.py"] == plan.comments
    why = next(t.why for t in report.tests if t.path == "tests/e2e/test_bridge_adapter.py")
    assert "when --adapter-rank and --export-mode bridge, or --adapter-path and " \
           "--export-mode bridge" in why


def test_a_module_also_started_without_the_flag_gets_no_flag_edge(repo):
    """When another runtime file uses the module whatever the flags say, the flag says
    nothing about which tests run it: no test is added through the flag."""
    extra = {"miles/ray/always.py": "from miles.sidecar.server import run_sidecar\n"
                                    "def go(args):\n    run_sidecar(args)\n"}
    report, plan = plan_of(repo, {"miles/sidecar/core.py": "def handle(args):\n    return 2\n"},
                           extra=extra)
    assert ([], []) == ([t.path for t in report.tests if t.why], report.flag_edges)
    assert "tests/e2e/sidecar/test_small.py" not in {t.path for t in report.tests}


def test_a_hand_written_edge_from_the_profile(repo):
    """A module loaded in a way no gate shows (a computed import) is tied to its flag by
    the profile; the test passing the flag is planned with the profile's reason."""
    cfg = CFG.model_copy(update={"flag_edges": [FlagEdge(
        flag="--use-sidecar", starts=["miles/plugin_x.py"], why="loaded by name")]})
    extra = {"miles/plugin_x.py": "X = 1\n",
             "miles/ray/plugins.py": "import importlib\n"
                                     "def load(name):\n"
                                     "    return importlib.import_module('miles.plugin_' + name)\n"}
    report, plan = plan_of(repo, {"miles/plugin_x.py": "X = 2\n"}, cfg=cfg, extra=extra)
    assert {"tests/e2e/sidecar/test_large.py", "tests/e2e/sidecar/test_small.py"} <= {
        c.split(" ", 1)[1] for c in plan.comments}
    why = next(t.why for t in report.tests if t.path == "tests/e2e/sidecar/test_small.py")
    assert why.startswith("flag: the profile says --use-sidecar starts miles/plugin_x.py "
                          "(loaded by name)")


def test_learning_can_be_switched_off(repo):
    """learn_flag_edges = false: the import trace alone, as before."""
    cfg = CFG.model_copy(update={"learn_flag_edges": False})
    report, _ = plan_of(repo, {"miles/sidecar/core.py": "def handle(args):\n    return 2\n"},
                        cfg=cfg)
    assert [] == [t.path for t in report.tests if t.why]


def test_what_counts_as_passing_a_flag():
    """Definitions, help, assert and raise messages and log lines pass nothing; a string,
    a list, an f-string value and a dict of arguments do."""
    prose = (b"import logging\nlogger = logging.getLogger()\n"
             b"p.add_argument('--use-x', action='store_true', help='set --use-x')\n"
             b"assert ok, 'pass --use-x first'\nlogger.info('--use-x is on')\n"
             b"def f():\n    '''Run with --use-x.'''\n    raise SystemExit('--use-x missing')\n")
    assert not passes(prose, "use_x", None)
    assert passes(b"CMD = 'python3 train.py --use-x '\n", "use_x", None)
    assert passes(b"ARGV = ['--mode', 'bridge']\n", "mode", "bridge")
    assert not passes(b"ARGV = ['--mode', 'raw']\n", "mode", "bridge")
    assert passes(b"def f(m):\n    return f'--mode {m} --k'\n", "mode", "bridge")
    assert passes(b"A = {'use_x': True}\n", "use_x", None)
    assert not passes(b"A = {'use_x': False}\n", "use_x", None)


def test_gate_conditions_in_their_spellings():
    """The conditions read from if tests and early exits, as alternatives of atoms."""
    import ast

    def cond(src: str, positive: bool = True):
        return conditions(ast.parse(src, mode="eval").body, positive)

    assert [[["x", None]]] == cond("args.x")
    assert [[["x", None]]] == cond("self.args.x is not None")
    assert [[["m", "a"]], [["m", "b"]]] == cond("args.m in ('a', 'b')")
    assert [[["m", "a"], ["x", None]]] == cond("args.m == 'a' and role == 'actor' and args.x")
    assert [[["()", "on"]], [["m", "a"]]] == cond("on(args) or args.m == 'a'")
    assert None is cond("role == 'actor' or args.x")  # one unreadable alternative
    assert [[["x", None]]] == cond("not getattr(args, 'x', False)", positive=False)
    assert None is cond("args.m != 'a'")
    gates = read_gates(b"from a import f\nfrom b import g\n"
                       b"def run(args):\n    g()\n    if not args.x:\n        return\n"
                       b"    f()\n    g()\n")
    assert [[["a", 0, ["f"]]]] == [g["t"] for g in gates["g"]]  # g is used outside too
    assert [["b", 0, ["g"]]] == gates["u"]


def test_a_flag_more_tests_pass_than_fit_the_files_is_a_hub(repo):
    """Two tests pass --use-sidecar; with room for one file the flag names no specific
    path: its edge is not followed, and the plan meets the sidecar server as a hub with
    both tests behind it (labels cover them)."""
    cfg = CFG.model_copy(update={"max_files": 1})
    first = repo.commit({**CI, **TRAINER, **SIDECAR_TESTS, **ADAPTER_TESTS})
    repo.commit({"miles/sidecar/core.py": "def handle(args):\n    return 2\n"})
    report = affected_tests(repo.path, first, config=cfg)
    plan = choose(report, cfg)
    assert ([], [(["tests/e2e/sidecar/test_large.py", "tests/e2e/sidecar/test_small.py"],
                  False)]) == ([t.path for t in report.tests if t.why],
                               [(e.tests, e.followed) for e in report.flag_edges])
    hub = report.hubs[0]
    assert ("miles/sidecar/server.py", 1, 2) == (hub.path, hub.hop, hub.reach)
    assert hub.met.startswith("hop 1 from miles/sidecar/core.py; a launch flag: "
                              "miles/ray/manager.py:5")
    assert ("labels", True) == (plan.mode, "run-ci-sglang" in plan.labels)
    assert "not followed (a hub: 2 tests pass the flag): miles/ray/manager.py:5" in \
        render_text(report, plan)
