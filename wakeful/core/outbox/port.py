"""The outgoing-message port (``OutgoingMessages``), defined with its backends in
:mod:`wakeful.store.outbox.port`; named where the core's outbox is."""

from __future__ import annotations

from wakeful.store.outbox.port import OutgoingMessages

__all__ = ["OutgoingMessages"]
