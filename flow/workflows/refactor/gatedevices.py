"""Which device types the local test gate (phase 6.5) runs the refactored file on: CPU, plus
CUDA when the test interpreter's torch sees a GPU.

``ORCHESTRATOR_REFACTOR_DEVICES`` names them outright. Otherwise a machine with no GPU device
node at all (no NVIDIA, ROCm or WSL GPU node under ``/dev``) is CPU-only without asking torch:
no build of torch can see a GPU the kernel does not expose, and importing torch just to hear
"False" costs seconds per flow. Where a node exists, the interpreter's own torch is asked.
"""

from __future__ import annotations

import glob
from typing import Any

from flow.core.errors import WorkflowInputError

DEVICES_ENV = "ORCHESTRATOR_REFACTOR_DEVICES"
CUDA_PROBE = "import torch; print(torch.cuda.is_available())"
# The nodes a CUDA-capable torch needs: NVIDIA's driver, AMD's ROCm (torch.cuda on a ROCm
# build), the WSL GPU bridge.
GPU_NODES = ("/dev/nvidiactl", "/dev/nvidia[0-9]*", "/dev/kfd", "/dev/dxg")


def configured_devices(settings: Any) -> list[str] | None:
    """The device types ``ORCHESTRATOR_REFACTOR_DEVICES`` names, ``None`` when unset.

    ``WorkflowInputError`` for a malformed value; the refactor workflow's start calls this so a
    bad value is refused before any agent work, not at the local test gate.
    """
    raw = (settings.get(DEVICES_ENV) or "").strip()
    if not raw:
        return None
    devices = [d.strip() for d in raw.split(",") if d.strip()]
    if not devices or not all(d.isidentifier() for d in devices):
        raise WorkflowInputError(f"{DEVICES_ENV}={raw!r} is not a comma-separated list "
                                 f"of device types", f"e.g. {DEVICES_ENV}=cpu,cuda")
    return devices


def gpu_nodes(patterns: tuple[str, ...] | None = None) -> list[str]:
    """The GPU device nodes this machine exposes (``patterns``, default ``GPU_NODES``); empty
    on a CPU-only machine. Never raises."""
    return sorted({path for pattern in (patterns or GPU_NODES) for path in glob.glob(pattern)})
