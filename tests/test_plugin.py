"""The checkout as a Claude Code plugin: ``claude plugin validate`` passes with no warning
(no prompt template taken for a plugin subagent), and the prompt templates live outside
``agents/`` and still render."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_no_markdown_under_agents_but_the_skills() -> None:
    """Claude Code loads every ``*.md`` under a plugin's ``agents/`` as a subagent: only the
    skills (declared by plugin.json's ``skills``) may be Markdown there."""
    manifest = json.loads((ROOT / ".claude-plugin" / "plugin.json").read_text())
    skills = (ROOT / manifest["skills"]).resolve()
    stray = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "agents").rglob("*.md")
                   if not p.resolve().is_relative_to(skills))
    assert [] == stray


def test_every_prompt_template_renders_from_its_new_home() -> None:
    from agents.prompts import TEMPLATES

    names = sorted(p.stem for p in TEMPLATES.glob("*.md"))
    assert 14 == len(names) and TEMPLATES.parent.name == "reference", (TEMPLATES, names)
    for name in names:
        assert (TEMPLATES / f"{name}.md").read_text(encoding="utf-8").strip()


def test_claude_plugin_validate_passes_without_warnings(tmp_path: Path) -> None:
    """Claude Code's own validator, where Claude Code is installed (npm package
    @anthropic-ai/claude-code; .ci/test installs it when npm is there)."""
    claude = shutil.which("claude")
    if claude is None:
        pytest.skip("Claude Code is not installed (npm install -g @anthropic-ai/claude-code): "
                    "`claude plugin validate` cannot run here")
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    done = subprocess.run([claude, "plugin", "validate", str(ROOT)], capture_output=True,
                          text=True, env=env, timeout=120)
    out = done.stdout + done.stderr
    assert 0 == done.returncode, out
    assert "Validation passed" in out and "warning" not in out.lower(), out
    assert "Validating agent" not in out, out
