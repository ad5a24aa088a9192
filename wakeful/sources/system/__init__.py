"""System events: resource alerts, component failures, the owner's silence (SPEC §3)."""
