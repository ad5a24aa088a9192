"""The heartbeat: checks in on its own, and calls the model only when a check found
something — an idle day costs no model tokens."""
