import unittest

from test.helper import SAMPLE
from unitmod import title


class WordsTest(unittest.TestCase):
    def test_title(self):
        self.assertEqual(title(SAMPLE), "Hello Small World")

    def test_empty(self):
        self.assertEqual(title(""), "")
