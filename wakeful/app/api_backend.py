"""The running daemon as front doors see it: submit, status, logs (a FrontDoor)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

from wakeful.core.components.context import Registrations
from wakeful.core.context.session_context import KEY_PREFIX as CONTEXT_KEY_PREFIX
from wakeful.core.context.view import ContextView
from wakeful.core.dispatcher import Dispatcher
from wakeful.core.feed import Feed, FeedItem
from wakeful.core.front_door import DaemonUnavailable, SubmitResult
from wakeful.core.plan import SessionPlans
from wakeful.core.provider import HOW_TO_CONFIGURE, ModelProvider, WireBody
from wakeful.core.sessions import Sessions
from wakeful.kernel.events import Event
from wakeful.store.base import Store, StoredEvent, StoreUnavailable

# The daemon's safety picture (taint, breakers, pending approvals) for the status;
# the lifespan passes it in, so the backend needs no knowledge of the safety package.
SafetyOverview = Callable[[], Awaitable[dict[str, Any]]]
FleetStatus = Callable[[], Awaitable[dict[str, Any]]]


def event_log_entry(stored: StoredEvent) -> dict[str, Any]:
    event = stored.event
    return {
        "seq": stored.seq,
        "id": event.id,
        "session": event.session,
        "kind": event.kind,
        "channel": event.channel,
        "source": event.source.model_dump(),
        "status": stored.status.value,
        "strategy": stored.strategy,
        "reason": stored.reason,
        "text": event.content.text,
        "occurred_at": event.occurred_at.isoformat(),
        "accepted_at": stored.accepted_at,
        "parallel_answer": stored.parallel_answer,
        "attempts": stored.attempts,
        "failure": stored.failure,
    }


@contextmanager
def _store_unavailable_is_503() -> Iterator[None]:
    """The store failing (full, I/O error, corrupt page) is "retry later", not a 500."""
    try:
        yield
    except StoreUnavailable as exc:
        raise DaemonUnavailable(str(exc)) from exc


class ApiBackend:
    def __init__(
        self,
        store: Store,
        dispatcher: Dispatcher,
        sessions: Sessions,
        feed: Feed,
        provider: ModelProvider,
        registrations: Registrations,
        safety_overview: SafetyOverview | None = None,
        fleet_status: FleetStatus | None = None,
    ) -> None:
        """``fleet_status``: [store] fleet's daemons, lag and dead letters, for /api/status."""
        self.store = store
        self.dispatcher = dispatcher
        self.sessions = sessions
        self.feed = feed
        self.provider = provider
        self.registrations = registrations
        self.safety_overview = safety_overview
        self.fleet_status = fleet_status

    async def start(self) -> None:
        """Recover after a restart: requeue held events, resume every session."""
        await self.store.recover()
        for session in await self.store.sessions():
            self.sessions.get(session)

    async def submit(self, event: Event) -> SubmitResult:
        return await self.dispatcher.submit(event)

    async def retry_event(self, event_id: str) -> dict[str, Any] | None:
        """A quarantined event back in its session's queue; None if it was not quarantined."""
        with _store_unavailable_is_503():
            stored = await self.store.retry(event_id)
        if stored is None:
            return None
        self.sessions.get(stored.event.session).notify(stored.event.id)
        return event_log_entry(stored)

    async def status(self) -> dict[str, Any]:
        with _store_unavailable_is_503():
            depths = {d.session: d for d in await self.store.queue_depths()}
            quarantined = [event_log_entry(s) for s in await self.store.quarantined()]
        sessions = {}
        plans = SessionPlans(self.store)
        for loop in self.sessions.all():
            depth = depths.get(loop.session)
            sessions[loop.session] = {
                "busy": loop.busy,
                "pending": depth.pending if depth else 0,
                "oldest_pending_at": depth.oldest_accepted_at if depth else None,
                "tasks": loop.all_tasks.list_tasks(),
                "context": loop.context.status(),
                "plan": (await plans.get(loop.session)).public(),
            }
        model: dict[str, Any] = {
            "configured": self.provider.configured,
            "description": self.provider.describe(),
            "health": self.sessions.deps.model_health.describe(),
        }
        if not self.provider.configured:
            model["how_to_configure"] = HOW_TO_CONFIGURE
        components = {
            name: {"ok": h.ok, "detail": h.detail, "required": h.required}
            for name, h in self.registrations.health.items()
        }
        extra = {name: provide() for name, provide in self.registrations.status_providers.items()}
        if self.safety_overview is not None:
            with _store_unavailable_is_503():
                extra["safety"] = await self.safety_overview()
        if self.fleet_status is not None:
            with _store_unavailable_is_503():
                extra["fleet"] = await self.fleet_status()
        return {
            **extra,
            "components": components,
            "model": model,
            "stopping": self.dispatcher.stopping,
            "events_accepted": self.dispatcher.accepted,
            "duplicates_dropped": self.dispatcher.duplicates,
            "sessions": sessions,
            "quarantined": quarantined,
            "store": {"ok": self.store.health.ok, "detail": self.store.health.describe()},
        }

    async def event_log(
        self, session: str | None, after_seq: int = 0, limit: int = 200
    ) -> list[dict[str, Any]]:
        with _store_unavailable_is_503():
            stored = await self.store.event_log(session, after_seq, limit)
        return [event_log_entry(s) for s in stored]

    async def event_log_newest(
        self, session: str | None, before_seq: int = 0, limit: int = 50
    ) -> dict[str, Any]:
        with _store_unavailable_is_503():
            page = await self.store.event_log_newest(session, before_seq, limit)
        return {"events": [event_log_entry(s) for s in page.events], "older": page.older}

    async def trajectory(self, session: str, *, full: bool = False) -> list[dict[str, Any]]:
        """As the model sees it (a compaction's summary in place of what it replaced,
        pruned results as their stubs), or ``full``: everything stored."""
        with _store_unavailable_is_503():
            stored = await self.store.trajectory(session)
            raw_view = None if full else await self.store.get_state(CONTEXT_KEY_PREFIX + session)
        return ContextView.from_json(raw_view).apply(stored) if raw_view else stored

    async def next_request(self, session: str) -> dict[str, Any] | None:
        if session not in await self.known_sessions():
            return None  # sessions.get would start a loop for it
        with _store_unavailable_is_503():
            request = await self.sessions.get(session).next_request()
        if isinstance(self.provider, WireBody):
            return self.provider.wire_body(request)
        # No model configured: the request as built, with no model to post it to.
        return {"model": None, "messages": request.messages, "tools": request.tools}

    async def known_sessions(self) -> list[str]:
        with _store_unavailable_is_503():
            return await self.store.sessions()

    @asynccontextmanager
    async def subscribe(self, session: str) -> AsyncIterator[AsyncIterator[FeedItem]]:
        async with self.feed.subscribe(session) as stream:
            yield stream
