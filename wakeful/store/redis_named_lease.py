"""Moved to :mod:`wakeful.store.fleet.named_lease`; this name stays for code that imports
it here."""

from __future__ import annotations

from wakeful.store.fleet.named_lease import (
    NamedLease,
    hold_while,
    holder_process_gone,
    lease_holder,
    process_holder_id,
)

__all__ = [
    "NamedLease",
    "hold_while",
    "holder_process_gone",
    "lease_holder",
    "process_holder_id",
]
