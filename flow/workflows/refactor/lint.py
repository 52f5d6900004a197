"""The test linter: device-mechanism rules on a (refactored) file's assessment.

``lint(assessment, plan=None) -> list[Finding]``; error-severity findings are the hard
gate of phase 5. Codes are stable:

L001 plain class with a setUp device guard        L006 hard-coded device in a device class
L002 device-class test without ``device``         L007 availability gate in a device class
L003 plain-class test taking ``device``            L008 restriction redundant under only_for
L004 ``@onlyCUDA``-like left (TR001's)            L009 device-specific class without only_for
L005 ``@onlyNativeDeviceTypes(And)`` left          L010 instantiation of an unknown / twice-instantiated class
L011 ``@onlyCPU``/``@onlyMPS``/``@onlyXPU`` (or another one-device ``@only*``) in a device class without only_for
L012 CUDA-gated test or hard-coded device in a plain class (the plan must move it, or dispute)
L014 a test widened to every accelerator calling a device API (``deviceapis``'s catalog)

TEST_LINTER forbids every ``@only*`` but ``@onlyAccelerator`` in an ACCELERATOR class, so
``@onlyNativeDeviceTypes`` goes for that reason (it excludes non-native device types, it is
not redundant) and an ``@onlyCPU`` test moves to a class of its own classification.
"""

from __future__ import annotations

from flow.workflows.refactor.analysis import AnalystReport
from flow.workflows.refactor.assess import Assessment, ClassInfo, Instantiation, TestInfo
from flow.workflows.refactor.findings import Finding, Severity

RESTRICTIONS = frozenset({"onlyCUDA", "onlyOn", "onlyCUDAAndPRIVATEUSE1", "onlyHPU"})
NATIVE = frozenset({"onlyNativeDeviceTypes", "onlyNativeDeviceTypesAnd"})
REDUNDANT_UNDER_ONLY_FOR = frozenset({"onlyCUDA", "onlyOn", "onlyAccelerator", "onlyNativeDeviceTypes"})
ONE_DEVICE = {"onlyCPU": "cpu", "onlyMPS": "mps", "onlyXPU": "xpu"}


def other_only(short: str) -> bool:
    """An ``@only*`` no rule rewrites (``@onlyPRIVATEUSE1``, one PyTorch adds later): TR011's to move."""
    return (short.startswith("only") and short[4:5].isupper() and short != "onlyAccelerator"
            and short not in RESTRICTIONS | NATIVE | ONE_DEVICE.keys())


def _f(path: str, code: str, severity: Severity, line: int, message: str) -> Finding:
    return Finding(check="lint", code=code, severity=severity, file=path, line=line, message=message)


def _device_insts(a: Assessment, cls: ClassInfo) -> list[Instantiation]:
    return [i for i in a.instantiations_of(cls.name) if i.kind == "device_type"]


def _plain_device(t: TestInfo) -> tuple[int, str] | None:
    """(line, what) of a test's first hard-coded device or CUDA gate, the L012 idiom."""
    gates = [g for g in t.gates if g.kind == "flag" or "cuda" in g.text]
    if not (t.device_literals or gates):
        return None
    if t.device_literals:
        return t.device_literals[0].line, f"hard-coded device {t.device_literals[0].value!r}"
    return gates[0].line, f"{gates[0].text} gate"


def plan_problems(report: AnalystReport, before: Assessment) -> list[str]:
    """L012 at plan time, for the analyst (only the plan can resolve it): a test of a plain class
    with a hard-coded device or a CUDA gate that the plan keeps ``cpu_only`` with no
    ``keeps_device`` reason."""
    plain = {c.name for c in before.classes if not _device_insts(before, c)}
    by_test = report.by_test()
    out = []
    for cls in before.classes:
        for t in cls.tests if cls.name in plain else []:
            found, c = _plain_device(t), by_test.get(f"{cls.name}.{t.name}")
            if found is None or c is None or c.strategy != "cpu_only" or c.keeps_device.strip():
                continue
            out.append(f"L012: {cls.name}.{t.name} has a {found[1]} (line {found[0]}) but the plan keeps it "
                       "cpu_only in a plain (GENERIC) class; plan it into a device class (device_agnostic or "
                       "device_specific), or give in its \"keeps_device\" the reason it must stay plain")
    return out


def _lint_class(a: Assessment, cls: ClassInfo, plan_strategy: str | None,
                kept: dict[str, str] | None = None) -> list[Finding]:
    kept = kept or {}
    out: list[Finding] = []
    insts = _device_insts(a, cls)
    only_for = any(i.only_for for i in insts)
    p = a.path
    if cls.setup_guard_line is not None:
        if insts:
            out.append(_f(p, "L001", "warning", cls.setup_guard_line,
                          f"setUp device guard in device-instantiated {cls.name} is redundant; let only_for select devices"))
        else:
            out.append(_f(p, "L001", "error", cls.setup_guard_line,
                          f"{cls.name} is a plain TestCase guarded in setUp; use "
                          f"instantiate_device_type_tests({cls.name}, globals(), only_for=...) instead"))
    if plan_strategy == "device_specific" and not only_for:
        out.append(_f(p, "L009", "error", cls.start,
                      f"device-specific class {cls.name} must be instantiated with "
                      f"instantiate_device_type_tests({cls.name}, globals(), only_for=\"cuda\")"))
    for t in cls.tests:
        if insts and not t.takes_device:
            out.append(_f(p, "L002", "error", t.def_line or t.start,
                          f"{cls.name}.{t.name} is device-instantiated but takes no `device` parameter; add it"))
        if not insts and t.takes_device:
            out.append(_f(p, "L003", "error", t.start,
                          f"{cls.name}.{t.name} takes `device` but {cls.name} is not instantiated by "
                          "instantiate_device_type_tests; drop the parameter or instantiate the class"))
        for d in t.decorators:
            short = d.name.rsplit(".", 1)[-1]
            if short in RESTRICTIONS:
                out.append(_f(p, "L004", "error", d.line, f"@{short} on {cls.name}.{t.name}; use @onlyAccelerator (enlarge the whitelist)"))
            elif short in NATIVE:
                out.append(_f(p, "L005", "error", d.line,
                              f"@{short} on {cls.name}.{t.name}: it excludes non-native device types, and "
                              "TEST_LINTER allows no @only* but @onlyAccelerator in an ACCELERATOR class; remove it"))
            if only_for and short in REDUNDANT_UNDER_ONLY_FOR and short not in RESTRICTIONS | NATIVE:
                out.append(_f(p, "L008", "warning", d.line, f"@{short} on {cls.name}.{t.name} is redundant: the class is only_for a device"))
        shorts = t.decorator_names()
        if insts and not only_for:
            for d in t.decorators:
                short = d.name.rsplit(".", 1)[-1]
                if short in ONE_DEVICE:
                    dev = ONE_DEVICE[short]
                    out.append(_f(p, "L011", "error", t.start,
                                  f"@{short} on {cls.name}.{t.name} in a class instantiated for every device; move it "
                                  f"to a class of its own ({cls.name}{dev.upper()}Only, hw_classification "
                                  f"{dev.upper()}, only_for=\"{dev}\"), or to a GENERIC class if the device does not matter"))
                elif other_only(short):
                    out.append(_f(p, "L011", "error", t.start,
                                  f"@{short} on {cls.name}.{t.name} in a class instantiated for every device: "
                                  "TEST_LINTER allows no @only* but @onlyAccelerator there; move it to a class "
                                  "instantiated for its one device, or widen it to @onlyAccelerator"))
        widened = (insts and not only_for) or "onlyAccelerator" in shorts
        if widened:
            from flow.workflows.refactor.deviceapis import advice

            for api in t.device_apis:
                kind, todo = advice(api.value)
                out.append(_f(p, "L014", "error", api.line,
                              f"{api.value} in {cls.name}.{t.name}, which runs on every accelerator: {todo}"
                              + (" (hw_classification CUDA, only_for=\"cuda\")" if kind == "device_specific" else "")))
        plain = _plain_device(t) if not insts else None
        if plain is not None:
            where, what = plain
            why = kept.get(f"{cls.name}.{t.name}", "").strip()
            if why:
                out.append(_f(p, "L012", "warning", where, f"{what} in {cls.name}.{t.name} of a plain (GENERIC) "
                                                           f"class, kept there by the plan: {why}"))
            else:
                out.append(_f(p, "L012", "error", where,
                              f"{what} in {cls.name}.{t.name} of a plain (GENERIC) class: plan it into a device class "
                              "(device_agnostic or device_specific), or dispute it with the reason it must stay"))
        if insts:
            for lit in t.device_literals:
                out.append(_f(p, "L006", "error", lit.line,
                              f"hard-coded device {lit.value!r} in {cls.name}.{t.name}; use the `device` parameter"))
            for gate in t.gates:
                out.append(_f(p, "L007", "warning", gate.line,
                              f"{gate.text} gate in device-instantiated {cls.name}.{t.name}; the instantiation already selects devices"))
    return out


def lint(assessment: Assessment, plan: AnalystReport | None = None) -> list[Finding]:
    """Lint ``assessment`` (of the refactored file); ``plan`` adds the strategy rules. Never raises."""
    strategies = plan.target_strategies() if plan is not None else {}
    kept = {f"{c.target_class}.{c.test_name}": c.keeps_device for c in plan.classifications
            if c.keeps_device.strip()} if plan is not None else {}
    out: list[Finding] = []
    for cls in assessment.classes:
        out += _lint_class(assessment, cls, strategies.get(cls.name), kept)
    defined = {c.name for c in assessment.classes}
    seen: set[tuple[str, str]] = set()
    for inst in assessment.instantiations:
        if inst.target not in defined:
            out.append(_f(assessment.path, "L010", "error", inst.line, f"{inst.kind} instantiation of unknown class {inst.target!r}; instantiate a class defined in this file"))
        elif (inst.target, inst.kind) in seen:
            out.append(_f(assessment.path, "L010", "error", inst.line, f"{inst.target} is instantiated twice ({inst.kind}); keep one call"))
        seen.add((inst.target, inst.kind))
    return sorted(out, key=lambda f: (f.line, f.code))
