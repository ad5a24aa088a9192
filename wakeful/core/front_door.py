"""What the HTTP API and other front doors may ask of the running daemon.

Front doors (HTTP, web page, chat channels) depend on this protocol only,
never on the loop or the store directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from wakeful.kernel.events import Event

FeedItem = dict[str, Any]  # {"type": "reply" | "event" | "decision" | "task" | ..., ...}


class DaemonUnavailable(Exception):
    """The daemon cannot take the event now (stopping, store down); retry later."""

    def __init__(self, reason: str, retry_after_s: int = 5) -> None:
        super().__init__(reason)
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class SubmitResult:
    event_id: str
    duplicate: bool  # True: already accepted earlier; nothing new was enqueued


class FrontDoor(Protocol):
    async def submit(self, event: Event) -> SubmitResult:
        """Store the event durably (deduplicated by id), then route it.

        Returns once the event is committed; never waits for the agent.
        Raises DaemonUnavailable when it cannot commit.
        """
        ...

    async def status(self) -> dict[str, Any]: ...

    async def event_log(
        self, session: str | None, after_seq: int = 0, limit: int = 200
    ) -> list[dict[str, Any]]: ...

    async def event_log_newest(
        self, session: str | None, before_seq: int = 0, limit: int = 50
    ) -> dict[str, Any]:
        """``{"events": [...] (seq order), "older": n}``: the newest below ``before_seq``."""
        ...

    async def trajectory(self, session: str, *, full: bool = False) -> list[dict[str, Any]]: ...

    async def next_request(self, session: str) -> dict[str, Any] | None:
        """The body the session's next model call would send; None for an unknown session."""
        ...

    async def known_sessions(self) -> list[str]: ...

    async def retry_event(self, event_id: str) -> dict[str, Any] | None:
        """Put a quarantined event back in its queue; None if it is not quarantined."""
        ...

    def subscribe(self, session: str) -> AbstractAsyncContextManager[AsyncIterator[FeedItem]]:
        """Live feed of replies, event decisions and task progress for a session."""
        ...
