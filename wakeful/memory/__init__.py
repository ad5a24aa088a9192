"""Long-term memory: MEMORY.md and daily notes the owner can read and edit, entries
with their provenance, a search over them and past conversations, and a digest in
the system prompt. An entry written while the session was tainted waits for review."""
