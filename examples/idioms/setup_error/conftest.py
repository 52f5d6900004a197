import pytest


@pytest.fixture(autouse=True)
def _legacy_marker(request):
    # written for an old pytest: Node.get_marker was removed in pytest 4
    request.node.get_marker("slow")
    yield
