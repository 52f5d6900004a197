"""Which devices the local test gate runs on: the setting, else no GPU node means CPU only
without importing torch, else the test interpreter's torch is asked."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from flow.workflows.refactor import gatedevices as devices
from flow.workflows.refactor.gates import _devices


class Probe:
    """What the engine's job gives back for the CUDA probe: the last line it printed."""

    def __init__(self, printed: str) -> None:
        self.printed, self.timed_out, self.lost, self.log = printed, False, False, "probe.log"

    def tail(self, n: int) -> str:
        return self.printed


def _ctx(settings: dict[str, str], printed: str = "False") -> SimpleNamespace:
    asked: list[list[str]] = []

    def job(key: str, argv: list[str], **_: Any) -> Probe:
        asked.append(argv)
        return Probe(printed)

    return SimpleNamespace(settings={"ORCHESTRATOR_PYTHON": "/usr/bin/python3", **settings},
                           job=job, asked=asked,
                           data=SimpleNamespace(test_devices=None, test_python="/usr/bin/python3", notes=[]))


def test_gpu_nodes_lists_only_the_nodes_that_exist(tmp_path: Path) -> None:
    """Each pattern is globbed; absent nodes are not listed, so a CPU machine gives []."""
    (tmp_path / "nvidiactl").touch()
    (tmp_path / "nvidia0").touch()
    patterns = (str(tmp_path / "nvidiactl"), str(tmp_path / "nvidia[0-9]*"), str(tmp_path / "kfd"))
    assert [str(tmp_path / "nvidia0"), str(tmp_path / "nvidiactl")] == devices.gpu_nodes(patterns)
    assert [] == devices.gpu_nodes((str(tmp_path / "kfd"),))


def test_no_gpu_node_means_cpu_only_and_torch_is_not_asked(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    """Without a GPU node the gate runs on CPU, says why, and starts no torch probe."""
    monkeypatch.setattr(devices, "GPU_NODES", (str(tmp_path / "nvidiactl"),))
    ctx = _ctx({})
    assert (["cpu"], [], True) == (_devices(ctx), ctx.asked,
                                   any("no GPU device node" in n for n in ctx.data.notes))


@pytest.mark.parametrize(("printed", "expected"), [("True", ["cpu", "cuda"]), ("False", ["cpu"])])
def test_with_a_gpu_node_the_interpreters_torch_decides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                        printed: str, expected: list[str]) -> None:
    """A GPU node is no proof torch can use it (a CPU build, a missing driver): torch is asked."""
    (tmp_path / "nvidiactl").touch()
    monkeypatch.setattr(devices, "GPU_NODES", (str(tmp_path / "nvidiactl"),))
    ctx = _ctx({}, printed)
    assert (expected, [["/usr/bin/python3", "-c", devices.CUDA_PROBE]]) == (_devices(ctx), ctx.asked)


def test_the_setting_overrides_both(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """ORCHESTRATOR_REFACTOR_DEVICES names the devices outright: no node check, no probe."""
    monkeypatch.setattr(devices, "GPU_NODES", (str(tmp_path / "absent"),))
    ctx = _ctx({devices.DEVICES_ENV: "cpu,cuda"})
    assert (["cpu", "cuda"], []) == (_devices(ctx), ctx.asked)
