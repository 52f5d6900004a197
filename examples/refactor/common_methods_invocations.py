# A slice of common_methods_invocations.py in its idiom (fixture; parsed, never imported).
import unittest

from torch.testing._internal.opinfo.core import DecorateInfo, OpInfo

op_db = [
    OpInfo(
        "add",
        skips=(
            # flaky on the fixture's CI
            DecorateInfo(unittest.skip("flaky"), "TestSmallOps", "test_add"),
            DecorateInfo(unittest.expectedFailure, 'TestSmallOps', 'test_clamp_logic', device_type="cpu"),
            DecorateInfo(unittest.skip("slow"), cls_name="TestSmallUtils", test_name="test_pad_lengths"),
            DecorateInfo(unittest.skip("unrelated"), "TestOther", "test_add"),
        ),
    ),
]
