"""Subagents: a session delegates a task to a child session and goes on working.

``spawn_subagent`` answers at once with an id; the child is a real session of
the daemon (its own trajectory, loop and supervisor, durable like any other)
restricted to a subset of its parent's tools, under a budget, carrying the
parent's taint. Its final answer comes back to the parent as a
``subagent.result`` event. See docs/subagents.md.
"""
