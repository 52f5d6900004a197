"""Version parsing, the same-build-day check on a real local wheel index, pip argument
lists, and the cwd rules that avoid the in-tree-import trap."""
from __future__ import annotations

import json
import subprocess
from datetime import date
from pathlib import Path

import pytest

from flow.workflows.reproduce.errors import InTreeImportTrap, UnresolvedNodeId
from flow.workflows.reproduce.prepare.rules import choose_cwd
from flow.workflows.reproduce.reproducer.forms import parse_reproducer
from flow.workflows.reproduce.stage1.rules import (
    install_plan, parse_version, pip_for, pip_index_versions, pip_install, pip_uninstall,
    same_build_day, versions_query,
)
from tests.reproduce.conftest import PYTHON, build_wheel, run

SET = ["torch", "torchvision", "torchaudio"]


@pytest.mark.parametrize("text,release,day,local", [
    ("2.9.0.dev20250101+xpu", "2.9.0", date(2025, 1, 1), "xpu"),
    ("0.24.0.dev20250102+xpu", "0.24.0", date(2025, 1, 2), "xpu"),
    ("2.13.0+cpu", "2.13.0", None, "cpu"),
    ("2.5.1", "2.5.1", None, None),
])
def test_parse_version(text: str, release: str, day: date | None, local: str | None) -> None:
    """Nightly versions carry their build day in the dev tag."""
    v = parse_version(text)
    assert (release, day, local) == (v.release, v.build_day, v.local)


@pytest.mark.parametrize("text", ["nightly", "2.9.0.dev20251399+xpu"])
def test_parse_version_refuses(text: str) -> None:
    """A version with no release or a dev tag that is not a date is refused, quoted."""
    with pytest.raises(ValueError, match=text.split("+")[0][:6]):
        parse_version(text)


@pytest.mark.parametrize("installed,ok,missing", [
    ({"torch": "2.9.0.dev20250101+xpu", "torchvision": "0.24.0.dev20250101+xpu",
      "torchaudio": "2.8.0.dev20250101+xpu"}, True, []),
    ({"torch": "2.9.0.dev20250101+xpu", "torchvision": "0.24.0.dev20250102+xpu",
      "torchaudio": "2.8.0.dev20250101+xpu"}, False, []),
    ({"torch": "2.9.0.dev20250101+xpu", "torchvision": "0.24.0.dev20250101+xpu"}, False, ["torchaudio"]),
    ({"torch": "2.5.1", "torchvision": "0.20.1", "torchaudio": "2.5.1"}, True, []),
])
def test_same_build_day(installed: dict[str, str], ok: bool, missing: list[str]) -> None:
    """All three from one day is ok; a mixed or incomplete set is not."""
    result = same_build_day(installed, SET)
    assert (ok, missing) == (result.ok, result.missing)


def test_pip_argument_lists() -> None:
    """pip commands are argument lists; a hostile package string stays one argument."""
    pip = pip_for("/v/bin/python")
    assert [
        ["/v/bin/python", "-m", "pip", "install", "--pre", "--upgrade", "--index-url",
         "https://download.pytorch.org/whl/nightly/xpu", "torch", "torchvision", "torchaudio"],
        ["/v/bin/python", "-m", "pip", "uninstall", "-y", "torch; rm -rf /"],
        ["/v/bin/python", "-m", "pip", "index", "versions", "torch", "--pre", "--index-url", "I"],
        ["py", "-m", "pip", "--python", "/t/python", "install", "--find-links", "/w", "--no-index", "x"],
    ] == [
        pip_install(pip, SET, index_url="https://download.pytorch.org/whl/nightly/xpu", pre=True, upgrade=True),
        pip_uninstall(pip, ["torch; rm -rf /"]),
        pip_index_versions(pip, "torch", "I"),
        pip_install(pip_for("py", "/t/python"), ["x"], find_links="/w", no_index=True),
    ]


def _installed(python: str) -> dict[str, str]:
    code, output = run(versions_query(python, SET), cwd="/")
    assert 0 == code, output
    return json.loads(output)


@pytest.mark.slow
def test_mixed_set_reinstalled_from_local_index(tmp_path: Path) -> None:
    """A mixed-day install from a --find-links index is detected and the reinstall plan
    leaves all three packages from the same (newest) day."""
    index = tmp_path / "wheels"
    for day in ("20250101", "20250102"):
        build_wheel(index, "torch", f"2.9.0.dev{day}+xpu")
        build_wheel(index, "torchvision", f"0.24.0.dev{day}+xpu")
        build_wheel(index, "torchaudio", f"2.8.0.dev{day}+xpu")
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    target = str(venv / "bin" / "python")
    pip = pip_for(PYTHON, target)
    code, output = run(pip_install(pip, ["torch==2.9.0.dev20250101+xpu", "torchvision", "torchaudio"],
                                   find_links=str(index), no_index=True, pre=True))
    assert 0 == code, output
    before = same_build_day(_installed(target), SET)
    for argv in install_plan(pip, before, SET, find_links=str(index), no_index=True):
        assert 0 == run(argv)[0]
    after = same_build_day(_installed(target), SET)
    assert (False, True, {date(2025, 1, 2)}) == (before.ok, after.ok, set(after.days.values()))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A pytorch-like tree: an in-tree torch package and torch-xpu-ops tests."""
    root = tmp_path / "pytorch"
    (root / "torch").mkdir(parents=True)
    (root / "torch" / "__init__.py").write_text("")
    (root / "third_party" / "torch-xpu-ops" / "test" / "xpu").mkdir(parents=True)
    (root / "test").mkdir()
    (root / "test" / "test_foo.py").write_text(
        "class TestFoo(TestCase):\n    def test_bar(self, device, dtype):\n        pass\n")
    (tmp_path / "scratch").mkdir()
    return root


# (reproducer, cwd relative to tmp, rewritten pytest args with {tree})
CWD_ROWS = [
    ("pytest -v test/xpu/test_ops_xpu.py::T::t", "pytorch/third_party/torch-xpu-ops/test/xpu",
     ["-v", "test_ops_xpu.py::T::t"]),
    ("pytest test/test_nn.py::T::t -k x", "scratch", ["{tree}/test/test_nn.py::T::t", "-k", "x"]),
    ('python -c "import torch"', "scratch", None),
    ("pytest test_nn.py::T::t", "scratch", ["{tree}/test_nn.py::T::t"]),
    ("cd /opt/proj && pytest tests/test_a.py", "/opt/proj", None),
    ("TestFooXPU::test_bar_xpu_float32", "scratch", ["{tree}/test/test_foo.py::TestFooXPU::test_bar_xpu_float32"]),
    ("pytest -sv TestFoo::test_bar", "scratch", ["-sv", "{tree}/test/test_foo.py::TestFoo::test_bar"]),
    ("git clone x\ncd x\npip install .\npython repro.py", "scratch/x", None),
]


@pytest.mark.parametrize("text,cwd,args", CWD_ROWS)
def test_choose_cwd(tree: Path, text: str, cwd: str, args: list[str] | None) -> None:
    """xpu-ops tests run from their test/xpu dir; other tree tests by absolute path from a
    scratch dir; everything else from the scratch dir (plus the block's own cd)."""
    base = tree.parent
    choice = choose_cwd(parse_reproducer(text), scratch=str(base / "scratch"), tree=str(tree),
                        package="torch")
    expected_args = [a.format(tree=tree) for a in args] if args is not None else None
    assert (str(base / cwd), expected_args) == (choice.cwd, choice.pytest_args)


def test_unresolvable_bare_node(tree: Path) -> None:
    """A bare node id no file defines is refused, never guessed."""
    with pytest.raises(UnresolvedNodeId, match="TestNope::test_x"):
        choose_cwd(parse_reproducer("TestNope::test_x"), scratch=str(tree.parent / "scratch"),
                   tree=str(tree), package="torch")


def test_in_tree_import_trap(tree: Path) -> None:
    """A cwd holding the package (the source tree root) is refused with the shadowing path."""
    rep = parse_reproducer(f"cd {tree}\npython repro.py")
    with pytest.raises(InTreeImportTrap, match="would load the tree"):
        choose_cwd(rep, scratch=str(tree.parent / "scratch"), tree=str(tree), package="torch")


def test_in_tree_import_trap_is_real(tree: Path) -> None:
    """Why the rule exists: from the tree root, `import torch` loads the tree's package."""
    code, output = run([PYTHON, "-c", "import torch; print(torch.__file__)"], cwd=tree)
    assert (0, str(tree / "torch" / "__init__.py")) == (code, output.strip())
