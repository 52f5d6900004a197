# Owner(s): ["module: tests"]
"""A small PyTorch-style test file, after the decoupling refactor (fixture)."""

import torch
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyAccelerator,
    skipCUDAIf,
    skipXPU,
)
from torch.testing._internal.common_utils import (
    TestCase,
    instantiate_parametrized_tests,
    parametrize,
    run_tests,
)


class TestSmallOps(TestCase):
    def test_clamp_logic(self):
        # pure scalar logic: running it per device adds no coverage
        self.assertEqual(max(0, min(5, 7)), 5)


class TestSmallOpsDevice(TestCase):
    def test_add(self, device):
        x = torch.ones(3, device=device)
        self.assertEqual(x + x, torch.full((3,), 2.0, device=device))

    @dtypes(torch.float32, torch.float64)
    def test_mul_dtypes(self, device, dtype):
        x = torch.arange(4, device=device, dtype=dtype)
        self.assertEqual((x * 2).sum().item(), 12)

    # moving across devices only means something with an accelerator
    @onlyAccelerator
    def test_to_accelerator(self, device):
        y = torch.ones(2).to(device)
        self.assertEqual(y.device.type, torch.device(device).type)

    @onlyAccelerator
    @skipXPU
    def test_pinned_copy(self, device):
        x = torch.ones(4).pin_memory()
        self.assertEqual(x.to(device).sum().item(), 4)

    @skipCUDAIf(True, "fixture: never run on CUDA")
    def test_native_only(self, device):
        self.assertEqual(torch.zeros(2, device=device).sum().item(), 0)

    def test_cuda_roundtrip(self, device):
        x = torch.ones(2, device=device)
        self.assertEqual(x.cpu().sum().item(), 2)


instantiate_device_type_tests(TestSmallOpsDevice, globals())


class TestSmallUtils(TestCase):
    @parametrize("n", [1, 2, 3])
    def test_pad_lengths(self, n):
        padded = torch.nn.functional.pad(torch.ones(n), (0, 3 - n))
        self.assertEqual(padded.shape[0], 3)


instantiate_parametrized_tests(TestSmallUtils)


class TestSmallCudnn(TestCase):
    def test_cudnn_flag(self, device):
        self.assertTrue(torch.backends.cudnn.is_available())


instantiate_device_type_tests(TestSmallCudnn, globals(), only_for="cuda")


if __name__ == "__main__":
    run_tests()
