"""The single path every event takes: store (deduplicated) → route → act.

Channels, the HTTP API and late tool results all call
:meth:`Dispatcher.submit`; there is no second way in. The event is committed
before ``submit`` returns, and routing never makes the caller wait for the
agent: a decision the rules cannot make (the classifier's) runs afterwards in
a task this dispatcher owns, while the event is held out of the queue.
"""

from __future__ import annotations

import structlog
from anyio.abc import TaskGroup
from structlog.contextvars import bind_contextvars, reset_contextvars

from wakeful.daemon import metrics
from wakeful.daemon.feed import Feed
from wakeful.daemon.front_door import DaemonUnavailable, SubmitResult
from wakeful.daemon.loop.parallel import answer_in_parallel
from wakeful.daemon.loop.session_loop import LoopDeps, SessionLoop
from wakeful.daemon.router import Decision, Router, Strategy
from wakeful.daemon.sessions import Sessions
from wakeful.daemon.store.base import EventStatus, Store, StoredEvent, StoreUnavailable
from wakeful.events import Event

log = structlog.get_logger(__name__)

STATUS_FOR = {
    Strategy.CANCEL: EventStatus.PENDING,
    Strategy.QUEUE: EventStatus.PENDING,
    Strategy.PARALLEL: EventStatus.PARALLEL,
}


class Dispatcher:
    """Owns the session loops it routes to; they re-enter only through ``submit``."""

    def __init__(
        self, store: Store, router: Router, feed: Feed, group: TaskGroup, loop_deps: LoopDeps
    ) -> None:
        self._store = store
        self._router = router
        self.sessions = Sessions(loop_deps, group, submit=self.submit_internal)
        self._sessions = self.sessions
        self._feed = feed
        self._group = group
        self.stopping = False
        self.accepted = 0
        self.duplicates = 0

    async def submit_internal(self, event: Event) -> SubmitResult:
        """The daemon's own follow-up to work it already accepted (a late tool result)."""
        return await self.submit(event, internal=True)

    async def submit(self, event: Event, *, internal: bool = False) -> SubmitResult:
        """``internal``: the daemon's own follow-up to work it already accepted
        (a late tool result); it is still taken while the daemon stops."""
        # Every line logged while this event is handled (here, in the classifier
        # task it starts, which inherits this context) names it. Tokens rather than
        # ``bound_contextvars``, which copies the whole context twice per event.
        tokens = bind_contextvars(event_id=event.id, session=event.session)
        try:
            return await self._submit(event, internal)
        finally:
            reset_contextvars(**tokens)

    async def _submit(self, event: Event, internal: bool) -> SubmitResult:
        if self.stopping and not internal:
            raise DaemonUnavailable("the daemon is stopping; retry shortly", retry_after_s=5)
        loop = self._sessions.get(event.session)
        decision = self._router.decide_fast(event, busy=loop.busy)
        status = EventStatus.ROUTING if decision is None else STATUS_FOR[decision.strategy]
        try:
            result = await self._store.append(
                event,
                status,
                decision.strategy.value if decision else None,
                decision.reason if decision else None,
            )
        except StoreUnavailable as exc:
            raise DaemonUnavailable(str(exc), retry_after_s=5) from exc
        if not result.created:
            self.duplicates += 1
            metrics.DUPLICATES.inc(kind=event.kind)
            log.info("duplicate event dropped", event_id=event.id, kind=event.kind)
            return SubmitResult(event.id, duplicate=True)
        self.accepted += 1
        metrics.EVENTS_ACCEPTED.inc(kind=event.kind, source=event.source.type)
        if decision is None:
            self._group.start_soon(self._classify_then_act, result.stored, loop)
        else:
            self._act(result.stored, decision, loop)
        return SubmitResult(event.id, duplicate=False)

    async def _classify_then_act(self, stored: StoredEvent, loop: SessionLoop) -> None:
        decision = await self._router.decide(stored.event, busy=loop.busy)
        await self._store.set_route(
            stored.event.id, STATUS_FOR[decision.strategy], decision.strategy, decision.reason
        )
        self._act(stored, decision, loop)

    def _act(self, stored: StoredEvent, decision: Decision, loop: SessionLoop) -> None:
        event = stored.event
        metrics.DECISIONS.inc(strategy=decision.strategy.value, kind=event.kind)
        # event_id and session are bound by submit (the classifier task inherits them).
        log.info(
            "event routed",
            kind=event.kind,
            source=event.source.type,
            channel=event.channel,
            strategy=decision.strategy.value,
            reason=decision.reason,
        )
        self._feed.publish(
            event.session,
            {
                "type": "event",
                "event_id": event.id,
                "seq": stored.seq,
                "kind": event.kind,
                "channel": event.channel,
                "strategy": decision.strategy.value,
                "reason": decision.reason,
                "text": event.content.text[:500],
            },
        )
        if decision.strategy is Strategy.CANCEL:
            cause = f"an urgent {event.kind} arrived ({event.content.text[:80]!r})"
            loop.interrupt(cause, stop_tools=decision.stop_tools)
        elif decision.strategy is Strategy.PARALLEL:
            self._group.start_soon(answer_in_parallel, loop, stored, name=f"parallel {event.id}")
        else:
            loop.notify()
