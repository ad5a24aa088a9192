"""The system prompt a session sends: the operator's prompt and what start-up found.

Composed in a fixed order — the configured prompt, AGENTS.md, the skills, the
deferred tools — from what start-up read once, so it is the same bytes for
every request until the daemon restarts (the prompt cache keys on the prefix).

The deferred-tool index is the one part that depends on the session: it names
only the tools the session may call (a subagent's are a subset; a tool meant
only for subagents is left out of every other session's). Sessions with the
same allowed tools share one text, composed the first time it is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol


def compose_system_prompt(base: str, *sections: str) -> str:
    """``base`` then each non-empty section, separated by a blank line."""
    return "\n\n".join(part for part in (base, *sections) if part.strip())


class AllowedTools(Protocol):
    """The sessions restricted to some tools (wakeful/core/loop/session_scope.py)."""

    async def allowed_tools(self, session: str) -> frozenset[str] | None: ...


ToolIndex = Callable[[frozenset[str] | None], str]
# A section a component keeps current (the memory digest): read when a session's text
# is composed — its first request, and again after a compaction — never per request.
LiveSection = Callable[[], str]


class SystemPrompts:
    """Each session's system prompt; ``index(allowed)`` writes the deferred-tool section
    for a set of allowed tools (None: every tool)."""

    def __init__(
        self,
        base: str,
        sections: Sequence[str],
        index: ToolIndex,
        scope: AllowedTools | None = None,
        live: Sequence[LiveSection] = (),
    ) -> None:
        self._base = base
        self._sections = tuple(sections)
        self._index = index
        self._scope = scope
        self._live = tuple(live)
        self._texts: dict[tuple[frozenset[str] | None, tuple[str, ...]], str] = {}
        # A session keeps the text it was first given until the daemon restarts, even when
        # its allowed tools grow (an MCP server added some: they are found by search_tools
        # and by name, and the cached prefix stays); sessions sharing a text share the string.
        self._by_session: dict[str, str] = {}

    async def for_session(self, session: str) -> str:
        given = self._by_session.get(session)
        if given is not None:
            return given
        allowed = await self._scope.allowed_tools(session) if self._scope else None
        live = tuple(section() for section in self._live)
        text = self._texts.get((allowed, live))
        if text is None:
            text = compose_system_prompt(self._base, *self._sections, *live, self._index(allowed))
            if len(self._texts) > 64:  # live sections changed many times: old texts go
                self._texts.clear()
            self._texts[(allowed, live)] = text
        self._by_session[session] = text
        return text

    def renew(self, session: str) -> None:
        """The session's next request composes its text again (after a compaction)."""
        self._by_session.pop(session, None)
