"""Bench: the targeted-CI plan on 40 real miles commits, scored against a ground truth, and
on 60 older ones (``--older``) judged by rules.

``python bench/targeted_accuracy.py --repo-dir CLONE [--json] [--show]``. CLONE is a clone
of radixark/miles that contains the fixed range (``git clone`` of the search tool's
``fetch github:radixark/miles`` mirror); CI does not need it. For each commit of
``RANGE`` (its parent as the base) the bench checks the commit out in a temporary git
worktree of CLONE (CLONE itself is not touched), runs ``affected_tests`` with the miles
profile and ``choose``, and compares the plan with ``targeted_ground_truth.toml``, which
we wrote by reading each commit's diff and the code it touches (what CI should run and
why, in our words).

Scores (and their targets):

- ``uncovered``: CUDA tests the ground truth says the commit exercises, or the trace
  reached, that the plan neither comments nor selects with a label on their CUDA suite
  (target 0);
- ``gpu_on_docs``: docs-only commits whose plan spends a GPU runner (target 0);
- ``files_missed``: commits whose ground truth is files mode (its tests fit the file
  limit) but whose plan is not (target 0);
- ``mode_agree``: commits whose plan mode equals the ground truth's; ``extra_files`` and
  ``missed_files``: ``/rerun-test`` files beyond / short of the ground truth's.

``--held-out`` runs ``HELD_OUT`` (HEAD~320..HEAD~241 of 31f1ca961, 80 commits) by the same
rules as ``--older`` plus the cases of ``targeted_held_out.toml`` (the CUDA tests that run
code a launch flag starts: session server, TITO, bridge LoRA), and reports the plans right,
the CUDA tests left uncovered (target 0), files a plan would run twice, and what the label
plans really cost (each registration once, the always-on ``labels=[]`` ones included).

``--older`` runs ``OLDER`` (HEAD~160..HEAD~101 of 31f1ca961) with no hand-written answer:
each commit is judged by the rules in ``judge`` (docs-only diffs get no GPU run; every
``/rerun-test`` file passes miles' own registration reader at that commit, run in the
checkout; ``nothing`` plans on diffs with Python code are listed for a person to read).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import orjson  # noqa: E402

from flow.workflows.targeted.config import load_profile  # noqa: E402
from flow.workflows.targeted.select import choose  # noqa: E402
from flow.workflows.targeted.trace import affected_tests  # noqa: E402

TRUTH = Path(__file__).with_name("targeted_ground_truth.toml")
HELD_OUT_CASES = Path(__file__).with_name("targeted_held_out.toml")
# HEAD~320 .. HEAD~241 of 31f1ca961 (first parent, 80 commits), held out while the rules
# were written: judged by rules, plus the cases of targeted_held_out.toml.
HELD_OUT = ("64c332164", "b05a4f2a0")
RANGE = ("bb6f7dbd3", "31f1ca961")  # 40 first-parent commits: bb6f7dbd3 .. 31f1ca961
# HEAD~160 .. HEAD~101 of 31f1ca961 (first parent, 60 commits): judged by rules only.
OLDER = ("f645c780a", "06286243c")
# miles' own registration reader, run in the checkout (its tests/ci/ci_register.py at that
# commit): registrations of the files on stdin, as JSON.
_READER = r"""
import json, sys
sys.path.insert(0, ".")
from tests.ci.ci_register import ut_parse_one_file
out = {}
for name in json.load(sys.stdin):
    try:
        out[name] = [{"backend": r.backend.name, "labels": list(r.labels),
                      "disabled": r.disabled, "est_time": r.est_time}
                     for r in ut_parse_one_file(name)]
    except Exception as exc:  # noqa: BLE001 - the reader's own refusal is the answer
        out[name] = str(exc)
print(json.dumps(out))
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def commits(repo: Path, span: tuple[str, str] = RANGE) -> list[str]:
    """The fixed range, oldest first, as full SHAs."""
    first, last = span
    out = _git(repo, "rev-list", "--first-parent", "--reverse", f"{first}~1..{last}")
    return out.split()


def walk(repo: Path, span: tuple[str, str]) -> Iterator[tuple[Path, str, Any, Any]]:
    """(worktree, sha, report, plan) for each commit of ``span`` against its parent, in a
    temporary worktree of ``repo`` (removed at the end; ``repo`` itself is not touched)."""
    cfg = load_profile("miles")
    shas = commits(repo, span)
    tmp = Path(tempfile.mkdtemp(prefix="targeted-acc-"))
    work, cache = tmp / "wt", tmp / "cache"
    try:
        _git(repo, "worktree", "add", "-q", "--detach", str(work), shas[0])
        for sha in shas:
            _git(work, "checkout", "-q", "--detach", sha)
            report = affected_tests(work, f"{sha}~1", config=cfg, cache_dir=cache)
            yield work, sha, report, choose(report, cfg)
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(work)],
                       capture_output=True, check=False)
        shutil.rmtree(tmp, ignore_errors=True)


def score(truth: dict, plan, report) -> dict:
    """One commit's scores (see the module docstring)."""
    files = {c.split(" ", 1)[1] for c in plan.comments}
    labelled = {k for c in report.labels if c.label in plan.labels for k in c.tests}
    cuda_rows = {t.path: f"{t.path}@{t.suite}" for t in report.tests
                 if t.backend == "cuda" and not t.disabled}
    expected = set(truth.get("tests", []))
    must = expected | set(cuda_rows)
    uncovered = sorted(p for p in must if p not in files and cuda_rows.get(p) not in labelled
                       and not (p not in cuda_rows and plan.labels))
    gpu = bool(plan.comments and any(t.backend != "cpu" for t in report.tests
                                     if t.path in files)) or bool(plan.labels)
    return {"mode": plan.mode, "want_mode": truth["mode"], "labels": plan.labels,
            "want_labels": truth.get("labels", []), "files": sorted(files),
            "uncovered": uncovered,
            "gpu_on_docs": bool(truth.get("docs_only")) and gpu,
            "files_missed": truth["mode"] == "files" and plan.mode != "files",
            "extra_files": sorted(files - expected) if truth["mode"] == "files" else [],
            "missed_files": sorted(expected - files - {k.rsplit("@", 1)[0] for k in labelled})}


def miles_reader(work: Path, files: list[str]) -> dict:
    """miles' own reading of each file's registrations at the checked-out commit."""
    if not files:
        return {}
    got = subprocess.run([sys.executable, "-c", _READER], cwd=work, input=orjson.dumps(files),
                         capture_output=True, check=True)
    return orjson.loads(got.stdout)


def cost(work: Path, plan, report) -> dict:
    """What the approval question would price the plan at: each /rerun-test file's
    estimate and the total (``files_total``), and the files where the plan's estimate is
    missing or 0 although miles' own reader finds an ``est_time`` (target: none)."""
    from flow.workflows.targeted.report import files_total

    files = [c.split(" ", 1)[1] for c in plan.comments]
    regs = miles_reader(work, files)
    theirs = {f: sum(r["est_time"] or 0 for r in regs.get(f, []) if not isinstance(r, str)
                     and not r["disabled"] and r["backend"] in ("CUDA", "CPU"))
              for f in files if not isinstance(regs.get(f), str)}
    mine = {f: report.file_est.get(f) for f in files}
    known = [v for v in mine.values() if v]
    return {"est_total": sum(known) if files else 0, "est_text": files_total(files, mine)
            if files else "", "est": mine,
            "unpriced": sorted(f for f in files if not mine.get(f) and theirs.get(f))}


def question_lines(plan, report) -> list[str]:
    """The approval question's price lines, as ``loop.question`` writes them."""
    from flow.workflows.targeted.loop import TargetedData, question, label_costs

    data = TargetedData(repo="radixark/miles", number=0, repo_dir=".", base="HEAD~1",
                        head_sha="0" * 40, plan=plan,
                        est={p: e for p, e in report.file_est.items() if e is not None},
                        costs=label_costs(report))
    return question(data, list(plan.comments), list(plan.labels)).splitlines()


def judge(work: Path, sha: str, plan, report) -> dict:
    """One older commit judged by rules, not by a hand-written answer: a docs-only diff (every
    path under docs/ or a .md/.mdx file, the seed's no-GPU rule) gets no GPU run; every
    ``/rerun-test`` file is one miles' resolver accepts (its own reader finds an enabled
    CUDA or a labeled CPU registration; "a disabled, unregistered or ROCm-only file fails
    the resolve job"); and a ``nothing`` plan on a diff with Python code is listed for a
    person to read (``nothing_on_code``), with the plan's reason."""
    changed = sorted({p for c in report.changed for p in (c.path, c.old_path) if p})
    docs_only = bool(changed) and all(p.startswith("docs/") or p.endswith((".md", ".mdx"))
                                      for p in changed)
    files = [c.split(" ", 1)[1] for c in plan.comments]
    regs = miles_reader(work, files)
    refused = sorted(f for f in files if isinstance(regs.get(f), str) or not any(
        not r["disabled"] and (r["backend"] == "CUDA" or (r["backend"] == "CPU" and r["labels"]))
        for r in regs.get(f, [])))
    code = [p for p in changed if p.endswith(".py") and not p.startswith("tests/fast/")]
    return {"mode": plan.mode, "labels": plan.labels, "files": files, "docs_only": docs_only,
            "gpu_on_docs": docs_only and bool(plan.comments or plan.labels),
            "refused": refused,
            "nothing_on_code": (plan.mode == "nothing" and bool(code)),
            "why": plan.reasons[:1] if plan.mode == "nothing" else [],
            "unimported": report.unimported, "unknown_suites": [u.suite for u in report.unknown_suites]}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repo-dir", required=True, help="a clone of radixark/miles")
    ap.add_argument("--json", action="store_true", help="one JSON object, per commit too")
    ap.add_argument("--show", action="store_true", help="print each commit's plan")
    ap.add_argument("--older", action="store_true", help="the older range HEAD~160..HEAD~101, "
                    "judged by rules (see judge) instead of the ground truth")
    ap.add_argument("--held-out", action="store_true", help="the held-out range "
                    "HEAD~320..HEAD~241, judged by rules and targeted_held_out.toml's cases")
    args = ap.parse_args()
    if args.older:
        return main_older(args)
    if args.held_out:
        return main_held_out(args)
    repo = Path(args.repo_dir).resolve()
    truth = {t["sha"]: t for t in tomllib.loads(TRUTH.read_text())["commit"]}
    rows = []
    started = time.perf_counter()
    for work, sha, report, plan in walk(repo, RANGE):
        t = next((v for k, v in truth.items() if sha.startswith(k)), None)
        row = {"sha": sha[:9], "title": _git(work, "log", "-1", "--format=%s")[:70]}
        row.update(score(t, plan, report) if t else {"mode": plan.mode, "no_truth": True})
        row.update(cost(work, plan, report))
        row["question"] = question_lines(plan, report) if plan.comments else []
        if args.show:
            row["plan"] = {"comments": plan.comments, "labels": plan.labels,
                           "reasons": plan.reasons}
            print(orjson.dumps(row).decode(), flush=True)
        rows.append(row)
    scored = [r for r in rows if "no_truth" not in r]
    summary = {
        "commits": len(rows), "scored": len(scored),
        "uncovered_cuda_tests": sum(len(r["uncovered"]) for r in scored),
        "gpu_runs_on_docs_only": sum(r["gpu_on_docs"] for r in scored),
        "docs_only": sum(1 for r in scored if truth_of(truth, r).get("docs_only")),
        "files_mode_missed": sum(r["files_missed"] for r in scored),
        "files_mode_expected": sum(1 for r in scored if r["want_mode"] == "files"),
        "mode_agree": sum(r["mode"] == r["want_mode"] for r in scored),
        "labels_agree": sum(sorted(r["labels"]) == sorted(r["want_labels"]) for r in scored),
        "extra_files": sum(len(r["extra_files"]) for r in scored),
        "missed_files": sum(len(r["missed_files"]) for r in scored),
        "modes": {m: sum(r["mode"] == m for r in rows) for m in ("files", "labels", "nothing")},
        **prices(rows),
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(orjson.dumps({"summary": summary, "commits": rows},
                           option=orjson.OPT_INDENT_2).decode())
    else:
        print(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode())
    return 0


def main_older(args: argparse.Namespace) -> int:
    """The older range, each commit against its parent, judged by ``judge``."""
    rows = []
    started = time.perf_counter()
    for work, sha, report, plan in walk(Path(args.repo_dir).resolve(), OLDER):
        row = {"sha": sha[:9], "title": _git(work, "log", "-1", "--format=%s")[:70],
               **judge(work, sha, plan, report), **cost(work, plan, report)}
        row["question"] = question_lines(plan, report) if plan.comments else []
        rows.append(row)
        if args.show:
            print(orjson.dumps(row).decode(), flush=True)
    summary = {
        "range": f"{OLDER[0]}..{OLDER[1]}", "commits": len(rows),
        "docs_only": sum(r["docs_only"] for r in rows),
        "gpu_runs_on_docs_only": sum(r["gpu_on_docs"] for r in rows),
        "rerun_lines": sum(len(r["files"]) for r in rows),
        "rerun_lines_refused_by_miles": sum(len(r["refused"]) for r in rows),
        "nothing_on_code": [r["sha"] for r in rows if r["nothing_on_code"]],
        "modes": {m: sum(r["mode"] == m for r in rows) for m in ("files", "labels", "nothing")},
        **prices(rows),
        "seconds": round(time.perf_counter() - started, 1),
    }
    out = {"summary": summary, "commits": rows} if args.json else summary
    print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
    return 0


def covered(plan, report, cfg, path: str) -> bool:
    """True when the plan runs ``path``'s CUDA registration: a ``/rerun-test`` for it, or a
    plan label selecting it on a CUDA suite (the label's registrations, reached or not)."""
    if f"/rerun-test {path}" in plan.comments:
        return True
    keys = {k for c in report.costs if c.label in plan.labels for k in c.keys}
    return any(k.rsplit("@", 1)[0] == path and getattr(cfg.suites.get(k.rsplit("@", 1)[1]),
                                                       "backend", None) == "cuda"
               for k in keys)


def held_out_row(work: Path, sha: str, plan, report, cfg, case: dict | None) -> dict:
    """One held-out commit: the rules of ``judge``, the CUDA tests the case or the trace
    says run the changed code that the plan leaves out, what the plan spends in all (the
    labels' true cost: each registration once, the always-on ones included), and files
    the plan would run twice (a comment for a file its own labels run)."""
    from flow.workflows.targeted.report import plan_spend
    from flow.workflows.targeted.select import not_twice

    row = judge(work, sha, plan, report)
    reached = {t.path for t in report.tests if t.backend == "cuda" and not t.disabled}
    must = reached | set((case or {}).get("tests", []))
    row["uncovered"] = sorted(p for p in must if not covered(plan, report, cfg, p))
    files = [c.split(" ", 1)[1] for c in plan.comments]
    seconds, regs, always, unknown = plan_spend(report.costs, plan.labels, files,
                                                report.file_est, report.key_est)
    row["spend"] = {"seconds": seconds, "label_registrations": regs, "always_on": always,
                    "unknown": unknown}
    row["labels_only_s"] = (plan_spend(report.costs, plan.labels, [], report.file_est,
                                       report.key_est)[0] if plan.labels else 0)
    row["run_twice"] = sorted(not_twice(set(plan.comments), plan.labels, report)[1]) \
        if plan.labels else []
    row["flag_tests"] = sorted({t.path for t in report.tests if t.why})
    row["case"] = bool(case)
    row["right"] = not (row["uncovered"] or row["refused"] or row["gpu_on_docs"])
    return row


def main_held_out(args: argparse.Namespace) -> int:
    """The held-out range, each commit against its parent (see ``held_out_row``)."""
    cases = {c["sha"]: c for c in tomllib.loads(HELD_OUT_CASES.read_text())["commit"]}
    cfg = load_profile("miles")
    rows = []
    started = time.perf_counter()
    for work, sha, report, plan in walk(Path(args.repo_dir).resolve(), HELD_OUT):
        case = next((v for k, v in cases.items() if sha.startswith(k)), None)
        row = {"sha": sha[:9], "title": _git(work, "log", "-1", "--format=%s")[:70],
               **held_out_row(work, sha, plan, report, cfg, case), **cost(work, plan, report)}
        row["question"] = question_lines(plan, report) if (plan.comments or plan.labels) else []
        rows.append(row)
        if args.show:
            print(orjson.dumps(row).decode(), flush=True)
    with_labels = [r for r in rows if r["labels"]]
    summary = {
        "range": f"{HELD_OUT[0]}..{HELD_OUT[1]}", "commits": len(rows),
        "plans_right": sum(r["right"] for r in rows),
        "wrong": {r["sha"]: r["uncovered"] or r["refused"] for r in rows if not r["right"]},
        "cuda_tests_uncovered": sum(len(r["uncovered"]) for r in rows),
        "cases": sum(r["case"] for r in rows),
        "cases_right": sum(r["right"] for r in rows if r["case"]),
        "docs_only": sum(r["docs_only"] for r in rows),
        "gpu_runs_on_docs_only": sum(r["gpu_on_docs"] for r in rows),
        "rerun_lines": sum(len(r["files"]) for r in rows),
        "rerun_lines_refused_by_miles": sum(len(r["refused"]) for r in rows),
        "files_run_twice": sum(len(r["run_twice"]) for r in rows),
        "commits_with_flag_edges": sum(bool(r["flag_tests"]) for r in rows),
        "modes": {m: sum(r["mode"] == m for r in rows) for m in ("files", "labels", "nothing")},
        "label_plans": len(with_labels),
        "labels_true_cost_s": sum(r["labels_only_s"] for r in with_labels),
        "labels_true_cost_always_on_regs": sum(r["spend"]["always_on"] for r in with_labels),
        "spend_total_s": sum(r["spend"]["seconds"] for r in rows),
        **prices(rows),
        "seconds": round(time.perf_counter() - started, 1),
    }
    out = {"summary": summary, "commits": rows} if args.json else summary
    print(orjson.dumps(out, option=orjson.OPT_INDENT_2).decode())
    return 0


def prices(rows: list[dict]) -> dict:
    """Every files plan's estimated total, the files priced 0 or unknown although miles
    registers an est_time (target 0), and the approval question of the largest plan."""
    priced = [r for r in rows if r.get("est_text")]
    largest = max(priced, key=lambda r: r["est_total"], default=None)
    return {"plan_totals": {r["sha"]: r["est_text"] for r in priced},
            "files_unpriced_where_miles_has_est_time": sum(len(r["unpriced"]) for r in rows),
            "largest_plan": ({"sha": largest["sha"], "question": largest["question"]}
                             if largest else None)}


def truth_of(truth: dict, row: dict) -> dict:
    return next((v for k, v in truth.items() if row["sha"].startswith(k[:9])), {})


if __name__ == "__main__":
    raise SystemExit(main())
