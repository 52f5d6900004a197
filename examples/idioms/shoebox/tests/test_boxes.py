from shoebox import boxes


def test_partial_box_counts():
    assert boxes(5, 2) == 3
