"""Which Python runs the refactored file's tests (collect-only and the local test gate).

The rule, first match wins:

1. ``ORCHESTRATOR_PYTHON`` (a setting) when set: the person chose.
2. The checkout's own environment: ``<checkout>/.venv``, ``<checkout>/venv`` or
   ``<checkout>/env`` holding ``bin/python`` (``Scripts/python.exe`` on Windows), where a
   PyTorch developer build usually lives.
3. The active virtual or conda environment (``VIRTUAL_ENV``, then ``CONDA_PREFIX``) when its
   python exists: the shell the harness runs in, which for a PyTorch checkout is normally
   the one that built it.
4. The orchestrator's own interpreter (``sys.executable``), as before.

The choice is made once per flow and recorded with the torch it found (``flow.workflows.refactor
.gates``), so a summary says which torch the tests ran against. Pure: a function of the
settings and the file system.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

ENV_DIRS = (".venv", "venv", "env")


def _python_in(env: Path) -> Path | None:
    for rel in ("bin/python", "bin/python3", "Scripts/python.exe"):
        p = env / rel
        if p.is_file() and os.access(p, os.X_OK):
            return p
    return None


def choose_python(settings: Mapping[str, str], checkout: Path) -> tuple[str, str]:
    """(interpreter path, why it was chosen) by the module's rule."""
    chosen = (settings.get("ORCHESTRATOR_PYTHON") or "").strip()
    if chosen:
        return chosen, "set by ORCHESTRATOR_PYTHON"
    for name in ENV_DIRS:
        found = _python_in(checkout / name)
        if found is not None:
            return str(found), f"the checkout's environment {name}/"
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        value = (settings.get(var) or "").strip()
        found = _python_in(Path(value)) if value else None
        if found is not None:
            return str(found), f"the active environment {var}"
    return sys.executable, "the orchestrator's own interpreter, as no checkout environment was found"


#: Run by the test interpreter: does it find torch, and which (without importing torch, which
#: takes seconds): prints "<version> at <package dir>", exit 1 when torch is not found.
TORCH_PROBE = ("import importlib.util, importlib.metadata, os, sys\n"
               "spec = importlib.util.find_spec('torch')\n"
               "if spec is None: sys.exit(1)\n"
               "try: v = importlib.metadata.version('torch')\n"
               "except importlib.metadata.PackageNotFoundError: v = 'unknown version'\n"
               "print(v, 'at', os.path.dirname(spec.origin or ''))\n")

#: Whether the interpreter's torch has ``HardwareClassification`` (torch 2.14.1 and later),
#: read from common_utils.py's text without importing torch: prints "yes" or "no".
HW_ENUM_PROBE = ("import importlib.util, os, sys\n"
                 "spec = importlib.util.find_spec('torch')\n"
                 "if spec is None: sys.exit(1)\n"
                 "p = os.path.join(os.path.dirname(spec.origin or ''), 'testing', '_internal', 'common_utils.py')\n"
                 "try: text = open(p, encoding='utf-8').read()\n"
                 "except OSError: text = ''\n"
                 "print('yes' if 'class HardwareClassification' in text else 'no')\n")
