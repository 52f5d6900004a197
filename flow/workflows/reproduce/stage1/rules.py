"""Stage 1's rules (seed: "Stage 1: Nightly Wheel", its Install and Decision sections).

Pure: version parsing, the same-build-day check, pip command lines as argument lists
(never a shell string), and the Stage 1 decision table. Where the reproducer runs is
Prepare's rule (``prepare.rules``).
"""
from __future__ import annotations

import re
from datetime import date

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.run.decision import Decision, Next, StageMode, from_run
from flow.workflows.reproduce.run.interpret import RunOutcome
from flow.workflows.reproduce.verdict.models import ORIGIN_MAIN, CannotVerify, NotReproduced, Stage

_DEV = re.compile(r"\.dev(\d{8})")


class WheelVersion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    text: str
    release: str            # "2.9.0"
    build_day: date | None  # from .devYYYYMMDD, None for a release
    local: str | None       # "xpu" from "+xpu"


def parse_version(text: str) -> WheelVersion:
    """Parse ``2.9.0.dev20250101+xpu``. Raises ValueError on a version with no release part
    or a dev tag that is not a date."""
    public, _, local = text.strip().partition("+")
    m = re.match(r"^(\d+(?:\.\d+)*)", public)
    if not m:
        raise ValueError(f"version {text!r} has no release number; expected e.g. 2.9.0.dev20250101+xpu")
    day = None
    dm = _DEV.search(public)
    if dm:
        try:
            day = date(int(dm.group(1)[:4]), int(dm.group(1)[4:6]), int(dm.group(1)[6:]))
        except ValueError as exc:
            raise ValueError(f"version {text!r}: dev tag {dm.group(1)} is not a YYYYMMDD date") from exc
    return WheelVersion(text=text.strip(), release=m.group(1), build_day=day, local=local or None)


class SameDay(BaseModel):
    """Result of the same-build-day check over the profile's package set."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ok: bool
    days: dict[str, date | None]
    missing: list[str]
    reason: str


def listed(installed: dict[str, str], packages: list[str]) -> str:
    """``pkg=version, ...`` in ``packages`` order (``not installed`` for a missing one)."""
    return ", ".join(f"{p}={installed.get(p, 'not installed')}" for p in packages)


def same_build_day(installed: dict[str, str], packages: list[str]) -> SameDay:
    """All of ``packages`` installed and built the same day? A missing package or a mixed
    set is not ok (the caller uninstalls all and reinstalls them together). A set of
    releases (no dev tags) counts as one day."""
    missing = [p for p in packages if p not in installed]
    days = {p: parse_version(installed[p]).build_day for p in packages if p in installed}
    distinct = set(days.values())
    if missing:
        return SameDay(ok=False, days=days, missing=missing, reason=f"not installed: {missing}")
    if len(distinct) > 1:
        return SameDay(ok=False, days=days, missing=[],
                       reason=f"mixed build days: {listed(installed, packages)}")
    return SameDay(ok=True, days=days, missing=[], reason="same build day")


def pip_for(python: str, target: str | None = None) -> list[str]:
    """The pip prefix: ``python -m pip``, or, with ``target``, ``python -m pip --python
    TARGET`` (pip >= 22.3 installs into another interpreter's environment)."""
    return [python, "-m", "pip", *(["--python", target] if target else [])]


def pip_install(pip: list[str], packages: list[str], *, index_url: str | None = None,
                find_links: str | None = None, no_index: bool = False, pre: bool = False,
                upgrade: bool = False, force_reinstall: bool = False) -> list[str]:
    """``<pip> install ...`` as an argument list (``pip`` from ``pip_for``)."""
    argv = [*pip, "install"]
    argv += ["--pre"] if pre else []
    argv += ["--upgrade"] if upgrade else []
    argv += ["--force-reinstall"] if force_reinstall else []
    argv += ["--index-url", index_url] if index_url else []
    argv += ["--find-links", find_links] if find_links else []
    argv += ["--no-index"] if no_index else []
    return argv + list(packages)


def pip_uninstall(pip: list[str], packages: list[str]) -> list[str]:
    return [*pip, "uninstall", "-y", *packages]


def pip_index_versions(pip: list[str], package: str, index_url: str) -> list[str]:
    """Informational query of available versions (the seed's first command)."""
    return [*pip, "index", "versions", package, "--pre", "--index-url", index_url]


def versions_query(python: str, packages: list[str]) -> list[str]:
    """A command printing ``{name: version}`` JSON for the installed ``packages`` (absent
    ones left out), read from distribution metadata so it works from any cwd."""
    code = ("import json,sys,importlib.metadata as m\n"
            "out={}\n"
            "for p in sys.argv[1:]:\n"
            "    try: out[p]=m.version(p)\n"
            "    except m.PackageNotFoundError: pass\n"
            "print(json.dumps(out))")
    return [python, "-c", code, *packages]


def install_plan(pip: list[str], check: SameDay, packages: list[str], *,
                 index_url: str | None = None, find_links: str | None = None,
                 no_index: bool = False, pre: bool = True) -> list[list[str]]:
    """Commands to run after the post-install check: none when ok, else uninstall all and
    reinstall the set together (seed: "If they diverge, uninstall all three and reinstall")."""
    if check.ok:
        return []
    return [pip_uninstall(pip, packages),
            pip_install(pip, packages, index_url=index_url, find_links=find_links,
                        no_index=no_index, pre=pre)]


def stage1(outcome: RunOutcome, mode: StageMode, refined: str, *, rerun_done: bool = False,
           install_blocker: str | None = None, label: str = "the nightly wheel") -> Decision:
    """Stage 1 table: env problem -> CANNOT_VERIFY; FAILED -> REPRODUCED(nightly);
    PASSED + auto -> stage 2; PASSED + nightly -> NOT_REPRODUCED([nightly])."""
    if install_blocker:
        return CannotVerify(stage=Stage.NIGHTLY, blocker=install_blocker)
    on_pass: Decision = (
        Next(stage=Stage.SOURCE_BUILD) if mode is StageMode.AUTO else
        NotReproduced(checked_stages=[Stage.NIGHTLY],
                      reason=f"passes on {label} ({outcome.detail})"))
    return from_run(outcome, Stage.NIGHTLY, refined, ORIGIN_MAIN, rerun_done, on_pass)
