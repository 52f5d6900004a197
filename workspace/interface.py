"""The store interface the stores implement, defined where its users are (the engine):
``flow.core.store.StateStore``, under the name the stores have always imported it by."""

from __future__ import annotations

from flow.core.store import StateStore

__all__ = ["StateStore"]
