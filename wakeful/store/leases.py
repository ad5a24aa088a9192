"""Moved to :mod:`wakeful.store.fleet.ttl`; this name stays for code that imports it here."""

from __future__ import annotations

from wakeful.store.fleet.ttl import DEFAULT_TTL_S

__all__ = ["DEFAULT_TTL_S"]
