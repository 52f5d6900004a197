"""The commands the orchestrator prints: absolute, shell-quoted, with the sticky flags."""

from __future__ import annotations

import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Commands:
    """Builds commands that run from any directory: interpreter, script, workspace, harness."""

    script: Path
    root: Path
    harness: str
    flow_id: str
    python: str = sys.executable
    store: str | None = None  # a postgresql:// store URL (no password), repeated when set
    lease: int | None = None  # a campaign item's lease token, repeated in the flow's commands
    # the harness's adapter (agents.claude / agents.codex) that renders its task fields
    adapter: Any = field(default=None, compare=False)

    def _store(self) -> list[str]:
        return ["--store", self.store] if self.store else []

    def base(self) -> list[str]:
        """The flow's own commands: a leased flow's carry its token (a stale holder's are
        refused, ``flow.cli.leases``)."""
        lease = ["--lease", str(self.lease)] if self.lease is not None else []
        return [self.python, str(self.script), "--workspace", str(self.root), *self._store(),
                "--harness", self.harness, "--flow", self.flow_id, *lease]

    def resume(self) -> str:
        return shlex.join([*self.base(), "--resume"])

    def feed(self, role: str, feed_file: str) -> str:
        return shlex.join([*self.base(), "--feed", role, "--feed-file", feed_file])

    def answer(self, value: str) -> str:
        return shlex.join([*self.base(), "--answer", value])

    def schema(self, name: str) -> str:
        return shlex.join([self.python, str(self.script), "schema", name])

    def cli(self, *args: str) -> str:
        """Any other orchestrator invocation, with the sticky flags."""
        return shlex.join([self.python, str(self.script), "--workspace", str(self.root),
                           *self._store(), "--harness", self.harness, *args])
