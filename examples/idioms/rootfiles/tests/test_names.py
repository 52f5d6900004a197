from rootfiles import names


def test_names_from_the_data_file():
    with open("data/names.txt") as handle:  # relative to the project root
        assert names(handle.read()) == ["ada", "grace"]
