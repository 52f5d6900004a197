"""The reproduce exception tree is a branch of the orchestrator's: code, message and hint."""
from __future__ import annotations

import pytest

from flow.core.errors import OrchestratorError
from flow.workflows.reproduce.errors import (
    ArtifactError, InTreeImportTrap, ProfileError, ReproduceError, ReproducerParseError,
    SkipMarkerNotFound, UnresolvedNodeId,
)


@pytest.mark.parametrize("exc, code, details", [
    (ReproducerParseError("unclosed quote at offset 3", text="echo 'x"), "reproducer_unparsable", {}),
    (SkipMarkerNotFound("no marker on 't'", target="t.py::t"), "skip_marker_not_found",
     {"target": "t.py::t"}),
    (InTreeImportTrap("cwd holds pkg", cwd="/src", shadow="/src/pkg"), "in_tree_import",
     {"cwd": "/src", "shadow": "/src/pkg"}),
    (ProfileError("no profile 'x'", profile="x"), "bad_profile", {"profile": "x"}),
    (ArtifactError("download failed", url="http://h/a.zip", blocker="artifact download failed"),
     "artifact", {"url": "http://h/a.zip", "blocker": "artifact download failed"}),
    (UnresolvedNodeId("bare node id", node_id="C::t"), "unresolved_node_id", {"node_id": "C::t"}),
])
def test_every_error_reports_code_message_and_hint(exc: ReproduceError, code: str,
                                                   details: dict[str, str]) -> None:
    """An error escaping a step is status:error with a code and a hint (exit 2), not a bug;
    the reproducer text stays out of the printed details."""
    out = exc.to_json()
    hint = out.pop("hint")
    assert (True, 2, {"code": code, "message": str(exc), **details}, True) == (
        isinstance(exc, OrchestratorError), exc.exit_code, out, bool(hint))
