"""The system prompt a session sends: the operator's prompt and what start-up found.

Composed once at start-up, in a fixed order — the configured prompt, AGENTS.md,
the skills, the deferred tools — so it is the same bytes for every request until
the daemon restarts (the prompt cache keys on the prefix).
"""

from __future__ import annotations


def compose_system_prompt(base: str, *sections: str) -> str:
    """``base`` then each non-empty section, separated by a blank line."""
    return "\n\n".join(part for part in (base, *sections) if part.strip())
