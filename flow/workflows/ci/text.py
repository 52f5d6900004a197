"""The ci workflow's texts: the debugger's failures and history blocks, the give-up comment.

Pure functions of the flow's data. Everything they quote came from GitHub or an agent:
the caller fences the prompt blocks with `agents.prompts.Untrusted`.
"""

from __future__ import annotations

from flow.workflows.ci.decide import CiData, Failure, FixRound
from workspace.jsonio import dumps


def failures_text(failures: list[Failure]) -> str:
    """One numbered block per failure: check, job, why, link, the failing log lines."""
    blocks = []
    for i, f in enumerate(failures, 1):
        head = f"[{i}] check: {f.check_name}\n    job: {f.job}\n    why: {f.reason}"
        if f.details_url:
            head += f"\n    details: {f.details_url}"
        lines = "\n".join(f"    | {ln}" for ln in f.failing_lines) or "    (no log lines read)"
        more = "\n    (log trimmed to its last failing lines)" if f.log_truncated else ""
        blocks.append(f"{head}\n    failing lines:\n{lines}{more}")
    return "\n\n".join(blocks) or "(no failures recorded)"


def history_text(history: list[FixRound]) -> str:
    """What each earlier round reported. Sorted keys: a reload re-renders the same prompt."""
    if not history:
        return "(this is the first round)"
    return "\n".join(
        f"round {r.round} on {r.head_sha[:12]}: failures {', '.join(r.failures)}; "
        f"pushed {r.pushed_commit or 'nothing'}\n"
        f"  fixes_applied: {dumps(r.fixes_applied, indent=False).decode()}\n"
        f"  unrelated: {dumps(r.unrelated, indent=False).decode()}"
        for r in history)


def stop_comment(d: CiData, marker: str) -> str:
    """The PR comment posted when the flow stops without green; `marker` makes it findable."""
    assert d.end is not None, "only a finished flow has a stop comment"
    from agents.prompts import fence  # check names and reasons come from GitHub: data

    lines = [marker, f"**CI babysitter stopped: {d.end.outcome}.** {d.end.reason}.", "",
             "Still failing:"]
    lines += [f"- {fence(f.check_name, inline=True, limit=120)} ({f.category}): "
              f"{fence(f.reason, inline=True)}" for f in d.end.still_failing]
    lines += ["", f"Fix rounds used: {d.fix_round} of {d.max_rounds}. CI is not green."]
    return "\n".join(lines)
