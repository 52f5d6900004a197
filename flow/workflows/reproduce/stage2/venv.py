"""Venv pieces shared by Stage 3's CI-wheel venv (``ciflow``) and the example tests: a
``--without-pip`` venv, wheels installed into it by the current pip (``--python``), and
a ``.pth`` placed *after* the venv's own site-packages that lends another environment's
packages (test tools, dependencies), so the freshly installed package wins over any
copy there.

Stage 2 of the ``local`` profile is ``localbuild`` (editable where the project allows,
the project's build backend, isolation unless offline). The pytorch-xpu profile's
source build is the xpu-build-pytorch skill, emitted as an agent task (the seed: "Do not
hand-roll the build here").
"""
from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flow.workflows.reproduce.stage1.rules import pip_for

TOOLS_PTH = "zz_reproduce_tools.pth"


class VenvPlan(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    venv_python: str
    wheel_dir: str
    create: list[str]
    build: list[str]
    purelib_query: list[str]   # prints the venv's site-packages (where the .pth goes)


def venv_plan(python: str, source_dir: str | Path, work_dir: str | Path,
              extra_build_args: list[str] | None = None) -> VenvPlan:
    """Commands to create ``<work>/venv`` and build ``source_dir`` into ``<work>/dist``."""
    work = Path(work_dir)
    venv_python = str(work / "venv" / "bin" / "python")
    return VenvPlan(
        venv_python=venv_python,
        wheel_dir=str(work / "dist"),
        create=[python, "-m", "venv", "--without-pip", str(work / "venv")],
        build=[*pip_for(python), "wheel", "--no-deps", "--no-build-isolation", "--no-index",
               *(extra_build_args or []), "-w", str(work / "dist"), str(source_dir)],
        purelib_query=[venv_python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
    )


def install_built(python: str, plan: VenvPlan, wheels: list[str]) -> list[str]:
    """Install the built wheels into the venv (run by the current pip, ``--python``)."""
    return [*pip_for(python, plan.venv_python), "install", "--no-deps", "--no-index",
            "--force-reinstall", *wheels]


def tools_pth(purelib: str | Path, tool_site_dirs: list[str]) -> tuple[Path, str]:
    """(path, content) of the .pth that lends the current env's tools to the venv."""
    return Path(purelib) / TOOLS_PTH, "".join(f"{d}\n" for d in tool_site_dirs)
