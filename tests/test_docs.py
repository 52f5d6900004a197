"""The docs say what the code does: runnable commands run, the contract's tables match the code.

README.md and every page of docs/ are read. A fenced ``bash`` block right after a line
``<!-- runnable -->`` runs in a scratch copy of the working tree (made a git repository, as a
clone is) and must exit 0; ``<!-- runnable: expect "TEXT" -->`` also wants TEXT on stdout, and
``after-install`` drops the README's leading venv-and-install step (the suite runs in an
environment that already has the install: its ``.venv`` is this one). docs/contract.md's
tables of statuses, fields, task fields, exit codes and error codes are held against
``orchestrator.py schema`` and the exception tree.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
INSTALL = "python3 -m venv .venv && .venv/bin/pip install -e . && "
MARK = re.compile(r"^<!-- runnable(?::\s*(?P<opts>.*?))?\s*-->$")


class Block(NamedTuple):
    page: str
    line: int
    command: str
    expect: str | None
    after_install: bool


def runnable_blocks() -> list[Block]:
    """Every fenced bash block marked runnable, in page order."""
    blocks: list[Block] = []
    for page in PAGES:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = MARK.match(line.strip())
            if not m:
                continue
            assert i + 1 < len(lines) and lines[i + 1].strip() == "```bash", (
                f"{page.name}:{i + 1}: a runnable mark must stand right above a ```bash fence")
            end = lines.index("```", i + 2)
            opts = m.group("opts") or ""
            expect = re.search(r'expect\s+"([^"]+)"', opts)
            blocks.append(Block(page.relative_to(ROOT).as_posix(), i + 2,
                                "\n".join(lines[i + 2:end]),
                                expect.group(1) if expect else None,
                                "after-install" in opts))
    return blocks


def scratch_copy(dest: Path) -> Path:
    """The working tree's tracked and unignored files copied to dest, committed to git."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard",
                             "-z"], capture_output=True, check=True).stdout
    for rel in filter(None, listed.decode().split("\0")):
        src = ROOT / rel
        if not src.is_file():
            continue  # deleted in the working tree, not yet committed
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target)
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"],
                 ["-c", "user.name=docs", "-c", "user.email=docs@example.invalid",
                  "-c", "commit.gpgsign=false", "commit", "-q", "-m", "scratch copy"]):
        subprocess.run(["git", "-C", str(dest), *args], check=True, capture_output=True, env=env)
    venv = dest / ".venv"
    if sys.prefix != sys.base_prefix:
        venv.symlink_to(sys.prefix, target_is_directory=True)
    else:
        (venv / "bin").mkdir(parents=True)
        (venv / "bin" / "python").symlink_to(sys.executable)
    return dest


BLOCKS = runnable_blocks()


def test_the_readme_marks_its_main_jobs_runnable() -> None:
    """The verdict, the refactor demo and the targeted plan of the README are all run here."""
    readme = " ".join(b.command for b in BLOCKS if b.page == "README.md")
    for words in ("reproduce --profile local", "demo refactor", "affected-tests"):
        assert words in readme


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.page}:{b.line}" for b in BLOCKS])
def test_a_runnable_command_of_the_docs_runs(block: Block, tmp_path: Path) -> None:
    """A command the docs mark runnable exits 0 from a fresh shell (and prints what it says)."""
    tree = scratch_copy(tmp_path / "clone")
    command = block.command
    if block.after_install:
        assert command.startswith(INSTALL), f"{block.page}:{block.line} has no install step"
        command = command[len(INSTALL):]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    done = subprocess.run(["bash", "-c", command], cwd=tree, env=env, capture_output=True,
                          text=True, timeout=900)
    where = f"{block.page}:{block.line}: {shlex.quote(command)[:200]}"
    assert 0 == done.returncode, f"{where}\nstdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-2000:]}"
    if block.expect:
        assert block.expect in done.stdout, f"{where}\nstdout: {done.stdout[-2000:]}"


def table(page: str, heading: str) -> list[list[str]]:
    """The rows of the first table under ``heading`` (cells stripped, header and rule dropped)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    section = text.split(heading, 1)[1]
    rows: list[list[str]] = []
    for line in section.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("|"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        elif rows:
            break
    return rows[2:]


def first_words(rows: list[list[str]]) -> list[str]:
    return [row[0].strip("`") for row in rows]


def schema(name: str) -> dict:
    out = subprocess.run([sys.executable, str(ROOT / "orchestrator.py"), "schema", name],
                         capture_output=True, text=True, check=True,
                         cwd=ROOT, timeout=120)
    return json.loads(out.stdout)["schema"]


def test_the_contract_lists_every_status_the_schema_allows() -> None:
    """The statuses table names exactly the statuses of ``schema spec``."""
    allowed = schema("spec")["properties"]["status"]["enum"]
    assert sorted(allowed) == sorted(first_words(table("docs/contract.md", "### Statuses")))


def test_the_contract_lists_every_field_the_schema_requires() -> None:
    """The always-present fields are exactly the required fields of ``schema spec``."""
    required = schema("spec")["required"]
    assert sorted(required) == sorted(first_words(
        table("docs/contract.md", "### Fields every object carries")))


def test_the_contract_lists_every_task_field() -> None:
    """Every field a task must carry is documented, and nothing the task model lacks."""
    task = schema("task")
    documented = first_words(table("docs/contract.md", "### Tasks"))
    assert sorted(task["required"]) == sorted(documented)
    assert set(documented) <= set(task["properties"])


def test_the_contract_states_the_exit_codes_and_every_error_class() -> None:
    """Exit codes 0-4 are explained, and each error class's code is listed with its exit."""
    from flow.core import errors

    assert ["0", "1", "2", "3", "4"] == first_words(table("docs/contract.md", "## Exit codes"))
    classes: set[tuple[str, str]] = set()
    todo = [errors.OrchestratorError]
    while todo:
        cls = todo.pop()
        if cls.__module__ == errors.__name__:
            classes.add((cls.code, str(cls.exit_code)))
        todo.extend(cls.__subclasses__())
    rows = table("docs/contract.md", "### Error codes of the exception tree")
    assert classes == {(row[0].strip("`"), row[1]) for row in rows}


def test_every_feed_refusal_the_contract_names_is_one_the_code_raises() -> None:
    """The feed refusal codes listed on the contract page are raised by the engine."""
    text = (ROOT / "docs/contract.md").read_text(encoding="utf-8")
    listed = re.findall(r"`([a-z_]+)`", text.split("Feed refusals, all exit 2:", 1)[1]
                        .split("\n\n", 1)[0])
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "flow").rglob("*.py"))
    missing = [code for code in listed if f'"{code}"' not in source]
    assert listed and [] == missing


def test_every_docs_page_is_linked_from_the_readme() -> None:
    """A page in docs/ that the README does not link is a page nobody finds."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    unlinked = [p.name for p in (ROOT / "docs").glob("*.md") if f"(docs/{p.name})" not in readme]
    assert [] == unlinked
