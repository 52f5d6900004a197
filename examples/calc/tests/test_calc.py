from calc import add, mean


def test_add():
    assert add(2, 3) == 5


def test_mean_of_ints_keeps_the_fraction():
    assert mean([1, 2]) == 1.5
