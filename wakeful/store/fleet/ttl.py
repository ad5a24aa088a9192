"""Lease timings every backend's named leases share (no Redis import: start-up reads them)."""

from __future__ import annotations

# How long a named lease lives unrenewed: how soon a stopped or cut-off daemon's
# mailbox, task or subscription is taken over by another daemon of the fleet.
DEFAULT_TTL_S = 15.0
