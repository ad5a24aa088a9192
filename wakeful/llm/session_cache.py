"""A provider's per-session state, the most recently used sessions kept.

A session's next request extends its previous one, so a provider keeps what it
built for the previous one (encoded bytes, converted turns) to redo only the
new tail. Kept per session, since sessions interleave; bounded, since a
daemon may see many sessions: an evicted one pays one whole build, nothing
else.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

MAX_SESSIONS = 32

State = TypeVar("State")


class SessionCache(Generic[State]):
    """``factory()`` state per session, evicting the least recently used."""

    def __init__(self, factory: Callable[[], State], max_sessions: int = MAX_SESSIONS) -> None:
        self._factory = factory
        self._max = max_sessions
        self._states: OrderedDict[str, State] = OrderedDict()

    def get(self, session: str) -> State:
        """The session's state (new if it has none), now the most recently used."""
        state = self._states.pop(session, None)
        if state is None:
            state = self._factory()
        self._states[session] = state
        while len(self._states) > self._max:
            self._states.popitem(last=False)
        return state

    def peek(self, session: str) -> State | None:
        """The session's state if it has one, without touching the order."""
        return self._states.get(session)
