"""The pull request a refactor proposes (seed phase 7, "Finalize"), in the form PyTorch's
test-refactoring initiative uses: a ``[Testcase Refactoring]`` title saying what the change
does, "Part of pytorch/pytorch#185590", the ``module: tests/graph`` label request, the tests
that change class with their old and new test ids, a table of classes with their
classification and test counts, the test plan (the linter command and the
``--hw-classification`` runs with their counts) and what did not run.
One file per PR. Pure; never raises for a file that parses (``class_rows`` returns [] else).
"""

from __future__ import annotations

import ast
import re

from pydantic import BaseModel, ConfigDict, Field

from flow.workflows.refactor.hwclass import declared, is_test_class

TRACKING = "pytorch/pytorch#185590"
MOVED_ROWS = 25  # past this many moved tests, one row per pair of classes
LABEL = "module: tests/graph"


class ClassRow(BaseModel):
    """One test class of the final file: its label (None: none declared) and its test count."""

    model_config = ConfigDict(extra="forbid")

    name: str
    hw_classification: str | None
    tests: int


class MovedRow(BaseModel):
    """A test whose ids change, with the label of the class it is in now."""

    model_config = ConfigDict(extra="forbid")

    test: str
    old_class: str
    new_class: str
    old_ids: list[str]
    new_ids: list[str]
    label: str | None = None  # the new class's hw_classification
    old_pattern: str = ""  # the old class's ids of any test (``TestFooCPU.<test>_cpu``)
    new_pattern: str = ""


class PrInput(BaseModel):
    """What the PR description says."""

    model_config = ConfigDict(extra="forbid")

    rel: str  # the file, relative to the checkout
    classes: list[ClassRow] = Field(default_factory=list)
    linter: str = ""  # which TEST_LINTER judged the file
    linter_passed: bool | None = None  # None: it did not run
    hw_counts: dict[str, int] = Field(default_factory=dict)  # label -> tests run under it
    hw_note: str = ""  # why the --hw-classification runs did not happen, if they did not
    hw_todo: str = ""  # the check that applies when they did not (to do before the PR)
    hw_runner: str = "python"  # "python" (FILE --hw-classification) or "pytest" (the conftest's filter)
    hw_passed: bool | None = None  # the hw_classification check: every run's test accounted for
    local_tests: str = ""
    devices: list[str] = Field(default_factory=list)
    label_only: bool = False  # the change only labels the classes (``prchange.label_only``)
    coverage: list[str] = Field(default_factory=list)  # where tests now run on more device types
    refactor_failures: list[str] = Field(default_factory=list)  # fail only after the refactor
    preexisting: list[str] = Field(default_factory=list)  # deferred; the original fails them the same way
    #: each of ``preexisting`` -> the original's test id that fails (``TestFooCPU.test_x_cpu`` of a
    #: test now in a plain class), said where it differs from the test's id now
    preexisting_as: dict[str, str] = Field(default_factory=dict)
    deferred: list[str] = Field(default_factory=list)  # deferred without that check
    moved: list[MovedRow] = Field(default_factory=list)  # tests whose ids change (``testids.moved_tests``)
    #: this machine's paths (checkout, interpreter, flow folder, home) -> what the text says for
    #: each instead (a path in the checkout becomes relative): scrubbed before ``public``
    local: dict[str, str] = Field(default_factory=dict)
    cuda_decoupled: bool = False  # the change takes CUDA-only markers out (``prchange.cuda_decoupled``)
    #: deferred by a person once the fix rounds were spent -> the original's result of the test
    person_deferred: dict[str, str] = Field(default_factory=dict)


def class_rows(text: str) -> list[ClassRow]:
    """Every top-level class defining ``test_*``, with its declared label and test count."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    return [ClassRow(name=n.name, hw_classification=declared(n),
                     tests=sum(1 for s in n.body if isinstance(s, ast.FunctionDef) and s.name.startswith("test_")))
            for n in tree.body if isinstance(n, ast.ClassDef) and is_test_class(n)]


def _moves(p: PrInput) -> str:
    """What the moves do, in a few words: ``make TestFoo GENERIC`` for a class that keeps its
    name and changes instantiation, ``move 3 tests to CUDA TestFooCUDAOnly`` per class they
    move to; several classes are counted."""
    targets: dict[str, list[MovedRow]] = {}
    for m in p.moved:
        targets.setdefault(m.new_class, []).append(m)
    phrases = []
    for cls, rows in targets.items():
        label = f"{rows[0].label} " if rows[0].label else ""
        if all(r.old_class == cls for r in rows):
            phrases.append(f"make {cls} {rows[0].label or 'a plain class'}")
        else:
            phrases.append(f"move {plural(len(rows), 'test')} to {label}{cls}")
    if len(phrases) > 2:
        return f"move {plural(len(p.moved), 'test')} between {len(targets)} classes"
    return " and ".join(phrases)


def title(p: PrInput) -> str:
    """What the PR does: ``[Testcase Refactoring] Label <file> with hw_classification`` for a
    change that only labels the classes; ``Decouple <file> from CUDA-specific`` only when the
    change takes CUDA-only markers out (and what moved, if any); otherwise what moved
    (``Make TestFoo GENERIC in <file>``, ``Move 3 tests to GENERIC TestFoo in <file>``)."""
    head = "[Testcase Refactoring] "
    if p.label_only:
        return f"{head}Label {p.rel} with hw_classification"
    what = _moves(p)
    if p.cuda_decoupled:
        return f"{head}Decouple {p.rel} from CUDA-specific" + (f" and {what}" if what else "")
    if what:
        return f"{head}{what[0].upper()}{what[1:]} in {p.rel}"
    return f"{head}Label {p.rel} with hw_classification and align its tests with their labels"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


_ABSOLUTE = re.compile(r"(?<![\w.~-])/(?:[^\s/:()'\"`,]+/)*([^\s/:()'\"`,]+)")


def public(text: str) -> str:
    """``text`` without this machine's absolute paths (each one shortened to its last part):
    a PR description names the checkout's files relatively and nothing of the local disk."""
    return _ABSOLUTE.sub(lambda m: m.group(1), text)


def _tests(names: list[str]) -> str:
    """``TestFooCPU.test_x_cpu`` for each JUnit name (``test.test_foo.TestFooCPU.test_x_cpu``)."""
    return ", ".join(f"`{_cell('.'.join(n.split('.')[-2:]))}`" for n in names)


def plural(n: int, word: str) -> str:
    """``1 test``, ``2 tests``, ``0 tests``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def render_pr(p: PrInput) -> list[str]:
    """The PR description as Markdown lines, its title first; no line names a path of this
    machine (``p.local`` first, then any absolute path, each shortened to its last part)."""
    return [scrub(line, p.local) for line in _render_pr(p)]


def scrub(line: str, local: dict[str, str]) -> str:
    """``line`` without this machine's paths: each of ``local`` (longest first, one with spaces
    too) replaced by what stands for it (a path under it made relative), then any other
    absolute path shortened to its last part (``public``)."""
    for path in sorted(local, key=len, reverse=True):
        root = path.rstrip("/")
        if root:
            line = line.replace(root + "/", "").replace(root, local[path])
    return public(line)


def _render_pr(p: PrInput) -> list[str]:
    out = [f"### {title(p)}", "", f"Part of {TRACKING}.", "",
           f"Label request: `{LABEL}`.", ""]
    if p.label_only:
        out += [f"This PR labels every test class of `{p.rel}` (one file) with the "
                "`hw_classification` that TEST_LINTER checks; no test changes class, instantiation "
                "or decorator.", ""]
    else:
        out += [f"This PR migrates `{p.rel}` (one file) to the hardware classification that "
                "TEST_LINTER checks: every test class declares `hw_classification`, and its "
                "instantiation, `device` parameters and `@only*` decorators follow that label.", ""]
    if p.coverage:
        out += ["Wider device coverage (reviewers: these tests now run where they did not before):", ""]
        out += [f"- {_cell(line)}" for line in p.coverage]
        # The coverage line of a class whose only_for became an except_for names it.
        added = any("`except_for=" in line for line in p.coverage)
        out += ["", "Where a device type cannot run them, the way TEST_LINTER allows is "
                "`except_for=[...]` on that class's `instantiate_device_type_tests` (never "
                "`only_for` on an ACCELERATOR class), or a skip decorator on the test "
                "(`@skipMPS`, `@skipXPU`, ...); "
                + ("this PR sets the `except_for` listed above, and no other." if added
                   else "none was added here."), ""]
    if p.moved:
        out += [f"Tests that change class ({len(p.moved)}): their test ids change, so entries keyed on "
                "the old ids (`test/slow_tests.json`, disabled-test issues) do not follow them:", "",
                "| Test | Before | After |", "|---|---|---|"]
        if len(p.moved) <= MOVED_ROWS:
            out += [f"| `{_cell(m.test)}` | {', '.join(f'`{_cell(i)}`' for i in m.old_ids)} | "
                    f"{', '.join(f'`{_cell(i)}`' for i in m.new_ids)}" + (f" ({m.label})" if m.label else "") + " |"
                    for m in p.moved]
        else:  # one row per pair of classes, the ids as a pattern, every test named
            pairs: dict[tuple[str, str], list[MovedRow]] = {}
            for m in p.moved:
                pairs.setdefault((m.old_class, m.new_class), []).append(m)
            out += [f"| {plural(len(rows), 'test')}: {', '.join(f'`{_cell(r.test)}`' for r in rows)} | "
                    f"`{_cell(rows[0].old_pattern)}` | `{_cell(rows[0].new_pattern)}`"
                    + (f" ({rows[0].label})" if rows[0].label else "") + " |" for rows in pairs.values()]
        out.append("")
    out += ["| Class | hw_classification | Tests |", "|---|---|---|"]
    out += [f"| {_cell(c.name)} | {c.hw_classification or 'none declared'} | {c.tests} |" for c in p.classes]
    total = sum(c.tests for c in p.classes)
    out += [f"| total | | {total} |", "", "Test plan:", "", "```"]
    out.append(f"python tools/linter/adapters/test_linter.py {p.rel}")
    run = "pytest" if p.hw_runner == "pytest" else "python"
    for label in sorted(p.hw_counts):
        out.append(f"{run} {p.rel} --hw-classification {label}   # {plural(p.hw_counts[label], 'test')}")
    out += ["```", ""]
    verdict = {True: "no message", False: "messages remain (see Checks)", None: "not run"}[p.linter_passed]
    out.append(f"- TEST_LINTER ({_cell(p.linter or 'not run')}): {verdict}.")
    if p.hw_counts:
        # The runs count tests as instantiated here (per device type and dtype), the table
        # counts test methods: the two numbers differ and are both said as what they are.
        counted = sum(p.hw_counts.values())
        verdict = ("each in exactly one label's run, none unclassified" if p.hw_passed
                   else "not all accounted for (see the hw_classification check)")
        out.append(f"- `--hw-classification` runs: {plural(counted, 'test')} as instantiated here (from the "
                   f"{plural(total, 'test method')} above), {verdict}.")
    else:
        # never a reason made up: the one recorded where the runs were decided against
        out.append(f"- `--hw-classification` runs: NOT RUN: {_cell(p.hw_note or 'they were never started')}.")
        if p.hw_todo:
            out.append(f"- To do before this PR is sent: {_cell(p.hw_todo)}.")
    if p.local_tests:
        out.append(f"- Local tests: {_cell(p.local_tests)}.")
    if p.preexisting:
        def was(name: str) -> str:
            before = ".".join(p.preexisting_as.get(name, "").split(".")[-2:])
            return f" (before: `{_cell(before)}`)" if before and before != ".".join(name.split(".")[-2:]) else ""

        out.append(f"- Failing before this change too (the original file, run the same way, fails "
                   f"{'it' if len(p.preexisting) == 1 else 'them'}): "
                   + ", ".join(f"{_tests([n])}{was(n)}" for n in p.preexisting) + ".")
    if p.deferred:
        out.append(f"- Failing here and not fixed by this PR (deferred without a check against the "
                   f"original): {_tests(p.deferred)}.")
    if p.person_deferred:
        out.append("- Failing here and not fixed by this PR (deferred by a person after the fix rounds "
                   "were spent): " + "; ".join(f"{_tests([n])} (the original: {_cell(why or 'not known')})"
                                               for n, why in p.person_deferred.items()) + ".")
    accel = [d for d in p.devices if d != "cpu"]
    kinds = sorted({c.hw_classification for c in p.classes} & {"ACCELERATOR", "CUDA", "MPS", "XPU"})
    if not accel and kinds:
        out.append(f"- Not run here: the {', '.join(kinds)} classes' tests on an accelerator (this "
                   "machine has none: they ran on CPU only or were skipped). CI runs them.")
    return out


def blockers(p: PrInput) -> list[str]:
    """Why the PR is not ready to open ([] when it is): a test plan that did not run, or ran
    and did not account for every test, or a TEST_LINTER that still has messages. The next
    steps never say "open the PR" while one stands."""
    out = []
    if p.hw_passed is None:
        out.append(f"the --hw-classification test plan did not run ({p.hw_note or 'never started'})"
                   + (f"; {p.hw_todo}" if p.hw_todo else ""))
    elif not p.hw_passed:
        out.append("the --hw-classification runs did not account for every test (see the "
                   "hw_classification check and the notes)")
    if p.linter_passed is False:
        out.append("TEST_LINTER still reports messages (see the test_linter check)")
    if p.refactor_failures:
        out.append(f"{plural(len(p.refactor_failures), 'test')} fail only in the refactored file (the "
                   f"original does not fail them): {', '.join(p.refactor_failures)}")
    return out
