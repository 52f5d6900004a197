"""TR010: rename dynamo skip / expected-failure sentinel files BY FILE NAME.

The files under ``test/dynamo_skips/`` and ``test/dynamo_expected_failures/`` are
sentinels (often 0 bytes) named ``<Class>.<test>``; for device-parametrized classes the
class carries the device suffix (``TestFooCPU``) and the test name the device (and dtype)
suffix (``test_bar_cpu_float32``). They are found and matched by name only; their
contents are never read.

``plan_renames(names, moves)`` is pure; ``apply_renames(directory, plan)`` does the IO.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flow.workflows.refactor.analysis import TestMove

#: Class-name suffix instantiate_device_type_tests appends -> test-name device token.
DEVICE_SUFFIXES: dict[str, str] = {"CPU": "cpu", "CUDA": "cuda", "XPU": "xpu", "MPS": "mps", "META": "meta", "HPU": "hpu"}
SENTINEL_DIRS: tuple[str, ...] = ("dynamo_skips", "dynamo_expected_failures")


class Rename(BaseModel):
    """Rename one sentinel file ``old`` -> ``new`` (bare file names)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    old: str
    new: str


class Unresolved(BaseModel):
    """A sentinel that names a moved test but cannot be renamed without judgment."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    reason: str


class SentinelPlan(BaseModel):
    """What ``plan_renames`` decided."""

    model_config = ConfigDict(extra="forbid")

    renames: list[Rename]
    unresolved: list[Unresolved]


def _split_class(cls: str) -> tuple[str, str | None]:
    """``TestFooCUDA`` -> (``TestFoo``, ``CUDA``); a class without a suffix -> (cls, None)."""
    for suffix in DEVICE_SUFFIXES:
        if cls.endswith(suffix) and len(cls) > len(suffix):
            return cls[: -len(suffix)], suffix
    return cls, None


def _match(name: str, moves_by_class: dict[str, list[TestMove]]) -> tuple[TestMove, str | None, str] | None:
    """Find the move a sentinel name refers to: (move, device suffix, test variant tail)."""
    if "." not in name:
        return None
    cls, test = name.split(".", 1)
    candidates: list[tuple[TestMove, str | None, str]] = []
    for m in moves_by_class.get(cls, []):
        if not m.old_device and test == m.test:
            candidates.append((m, None, ""))
    base, suffix = _split_class(cls)
    if suffix is not None:
        token = DEVICE_SUFFIXES[suffix]
        for m in moves_by_class.get(base, []):
            stem = f"{m.test}_{token}"
            if m.old_device and (test == stem or test.startswith(stem + "_")):
                candidates.append((m, suffix, test[len(m.test):]))
    # test_foo_bar_cpu must not be claimed by a move of test_foo: the longest name wins.
    return max(candidates, key=lambda c: len(c[0].test), default=None)


def plan_renames(names: Iterable[str], moves: Sequence[TestMove]) -> SentinelPlan:
    """Plan renames of sentinel file ``names`` for ``moves``. Pure; never raises.

    Device-parametrized before and after: ``OldCPU.test_x_cpu`` -> ``NewCPU.test_x_cpu``
    (every device variant). Device-parametrized -> plain: ``OldCPU.test_x_cpu`` ->
    ``New.test_x`` when the name carries no dtype tail (else unresolved: several
    variants would collapse onto one name). Plain -> device-parametrized: unresolved,
    since which device variant the skip was meant for is a judgment call.
    """
    by_class: dict[str, list[TestMove]] = {}
    for m in moves:
        by_class.setdefault(m.old_class, []).append(m)
    renames: list[Rename] = []
    unresolved: list[Unresolved] = []
    for name in sorted(names):
        hit = _match(name, by_class)
        if hit is None:
            continue
        move, suffix, tail = hit
        test = name.split(".", 1)[1]
        if move.old_device and move.new_device:
            new = f"{move.new_class}{suffix}.{test}"
        elif move.old_device:
            token = f"_{DEVICE_SUFFIXES[suffix or 'CPU']}"
            if suffix != "CPU" or tail != token:
                unresolved.append(Unresolved(name=name, reason=f"{move.new_class} is CPU-only; only a plain CPU variant maps onto {move.new_class}.{move.test}"))
                continue
            new = f"{move.new_class}.{move.test}"
        elif move.new_device:
            unresolved.append(Unresolved(name=name, reason=f"{move.new_class} is device-parametrized; choose the device variant(s) by hand"))
            continue
        else:
            new = f"{move.new_class}.{test}"
        if new != name:
            renames.append(Rename(old=name, new=new))
    targets = [r.new for r in renames]
    clashes = {t for t in targets if targets.count(t) > 1} | (set(targets) & (set(names) - {r.old for r in renames}))
    if clashes:
        keep = [r for r in renames if r.new not in clashes]
        unresolved += [Unresolved(name=r.old, reason=f"target {r.new!r} already exists or is claimed twice") for r in renames if r.new in clashes]
        renames = keep
    return SentinelPlan(renames=renames, unresolved=unresolved)


def list_sentinels(directory: Path) -> list[str]:
    """File names in ``directory`` (empty if it does not exist); contents never read."""
    return sorted(e.name for e in os.scandir(directory) if e.is_file()) if directory.is_dir() else []


def apply_renames(directory: Path, plan: SentinelPlan) -> list[Rename]:
    """Rename files in ``directory`` per ``plan``; returns the renames done.

    A planned file that is missing is skipped (it was planned from another listing);
    an existing target is never overwritten.
    """
    done: list[Rename] = []
    for r in plan.renames:
        src, dst = directory / r.old, directory / r.new
        if src.exists() and not dst.exists():
            src.rename(dst)
            done.append(r)
    return done
