"""What a component may narrow for one session: its tools, and whether its runs may go on.

Most sessions are unrestricted. A component that starts sessions of its own
(subagents) declares a :class:`SessionScope` in ``configure``; the daemon
asks every declared scope, through one :class:`SessionScopes`, in the three
places that enforce it: the tools array a request carries (the tool
surface) and the system prompt's index of the other tools, every call (a
step of the policy chain, so a tool left out cannot be called by name
either), the loop's safe point (a run stops when a scope says so, like at
its own limits) and the loop's replies (a session whose words are for
another session, not the user, delivers none).

A scope may narrow top-level sessions too: a tool that only makes sense in
the sessions it starts (``report_to_parent``) is left out of every other
session's allowed tools.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class SessionScope(Protocol):
    async def allowed_tools(self, session: str) -> frozenset[str] | None:
        """The only tools ``session`` may see and call; None: no restriction."""
        ...

    async def shown_tools(self, session: str) -> frozenset[str] | None:
        """The tools its requests carry: the allowed ones, plus any it called by name
        anyway (still refused), since a request must define every function its history
        calls; None: no restriction."""
        ...

    async def stop_reason(self, session: str) -> str | None:
        """Why ``session``'s run must stop at this safe point (a budget used up); None: go on."""
        ...

    def delivers_replies(self, session: str) -> bool:
        """False: the session's replies stay in its trajectory, no chat channel gets them
        (a subagent answers its parent through events, not the user)."""
        ...


class SessionScopes:
    """Every declared scope as one: the tools all of them allow, the first stop reason."""

    def __init__(self, scopes: Sequence[SessionScope] = ()) -> None:
        self._scopes = scopes  # the registrations' list: filled in while components configure

    async def allowed_tools(self, session: str) -> frozenset[str] | None:
        found: frozenset[str] | None = None
        for scope in self._scopes:
            names = await scope.allowed_tools(session)
            if names is not None:
                found = names if found is None else found & names
        return found

    async def shown_tools(self, session: str) -> frozenset[str] | None:
        found: frozenset[str] | None = None
        for scope in self._scopes:
            names = await scope.shown_tools(session)
            if names is not None:
                found = names if found is None else found & names
        return found

    async def stop_reason(self, session: str) -> str | None:
        for scope in self._scopes:
            reason = await scope.stop_reason(session)
            if reason is not None:
                return reason
        return None

    def delivers_replies(self, session: str) -> bool:
        return all(scope.delivers_replies(session) for scope in self._scopes)
