# Owner(s): ["module: tests"]
"""A small PyTorch-style test file, before the decoupling refactor (fixture)."""

import unittest

import torch
from torch.testing._internal.common_cuda import TEST_CUDNN
from torch.testing._internal.common_device_type import (
    dtypes,
    instantiate_device_type_tests,
    onlyCUDA,
    onlyNativeDeviceTypes,
    onlyOn,
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
    def test_add(self, device):
        x = torch.ones(3, device=device)
        self.assertEqual(x + x, torch.full((3,), 2.0, device=device))

    @dtypes(torch.float32, torch.float64)
    def test_mul_dtypes(self, device, dtype):
        x = torch.arange(4, device=device, dtype=dtype)
        self.assertEqual((x * 2).sum().item(), 12)

    # moving across devices only means something with an accelerator
    @onlyCUDA
    def test_to_accelerator(self, device):
        y = torch.ones(2).to("cuda")
        self.assertEqual(y.device.type, "cuda")

    @onlyOn(["cuda", "xpu"])
    @skipXPU
    def test_pinned_copy(self, device):
        x = torch.ones(4).pin_memory()
        self.assertEqual(x.to(device).sum().item(), 4)

    @onlyNativeDeviceTypes
    @skipCUDAIf(True, "fixture: never run on CUDA")
    def test_native_only(self, device):
        self.assertEqual(torch.zeros(2, device=device).sum().item(), 0)

    def test_clamp_logic(self, device):
        # pure scalar logic: running it per device adds no coverage
        self.assertEqual(max(0, min(5, 7)), 5)


instantiate_device_type_tests(TestSmallOps, globals())


class TestSmallUtils(TestCase):
    @parametrize("n", [1, 2, 3])
    def test_pad_lengths(self, n):
        padded = torch.nn.functional.pad(torch.ones(n), (0, 3 - n))
        self.assertEqual(padded.shape[0], 3)

    @unittest.skipIf(not torch.cuda.is_available(), "needs CUDA")
    def test_cuda_roundtrip(self):
        x = torch.ones(2).cuda()
        self.assertEqual(x.cpu().sum().item(), 2)

    @unittest.skipIf(not TEST_CUDNN, "needs cuDNN")
    def test_cudnn_flag(self):
        self.assertTrue(torch.backends.cudnn.is_available())


instantiate_parametrized_tests(TestSmallUtils)


if __name__ == "__main__":
    run_tests()
