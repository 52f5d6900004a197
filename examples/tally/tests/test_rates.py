from pathlib import Path

from tally.rates import convert

RATES = Path(__file__).parent / "data" / "rates.txt"


def test_convert_to_euro():
    # fails when the rates cache is cold (a fresh checkout), passes once it is warm
    assert convert(1000, "EUR", RATES) == 1100
