"""The single path every event takes: store (deduplicated) → route → act.

Channels, the HTTP API and late tool results all call
:meth:`Dispatcher.submit`; there is no second way in. The event is committed
before ``submit`` returns, and routing never makes the caller wait for the
agent: a decision the rules cannot make (the classifier's) runs afterwards in
a task this dispatcher owns, while the event is held out of the queue.

Those background steps (classifying, answering in parallel) run in the
daemon's task group, so none may raise: a step that fails is logged,
counted, and its event goes back to the queue (:meth:`Dispatcher._requeue`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup
from structlog.contextvars import bind_contextvars, reset_contextvars

from wakeful.core.feed import Feed
from wakeful.core.fleet_port import FleetPort, interrupt_unless_taken
from wakeful.core.front_door import DaemonUnavailable, SubmitResult
from wakeful.core.loop.deps import LoopDeps
from wakeful.core.loop.parallel import answer_in_parallel
from wakeful.core.loop.session_loop import SessionLoop
from wakeful.core.router import Decision, Router, Strategy
from wakeful.core.sessions import Sessions
from wakeful.kernel import metrics, tracing
from wakeful.kernel.events import Event
from wakeful.store.base import (
    Cursor,
    EventQueue,
    EventStatus,
    StoredEvent,
    StoreUnavailable,
)

log = structlog.get_logger(__name__)

# How long a failed step waits before it tries again to put its event back.
REQUEUE_BACKOFF_S = (0.5, 30.0)

STATUS_FOR = {
    Strategy.CANCEL: EventStatus.PENDING,
    Strategy.QUEUE: EventStatus.PENDING,
    Strategy.PARALLEL: EventStatus.PARALLEL,
}


class Dispatcher:
    """Owns the session loops it routes to; they re-enter only through ``submit``."""

    def __init__(
        self,
        store: EventQueue,
        router: Router,
        feed: Feed,
        group: TaskGroup,
        loop_deps: LoopDeps,
        *,
        fleet: FleetPort | None = None,
    ) -> None:
        """``fleet``: loops run only for the sessions this daemon owns; an interrupt for
        another daemon's session goes to its owner through the fleet."""
        self._store = store
        self._router = router
        self._fleet = fleet
        self.sessions = Sessions(loop_deps, group, submit=self.submit_internal, fleet=fleet)
        self._feed = feed
        self._group = group
        self.stopping = False
        self.accepted = 0
        self.duplicates = 0

    async def submit_internal(self, event: Event) -> SubmitResult:
        """The daemon's own follow-up to work it already accepted (a late tool result)."""
        return await self.submit(event, internal=True)

    async def submit(
        self, event: Event, *, internal: bool = False, cursor: Cursor | None = None
    ) -> SubmitResult:
        """``internal``: the daemon's own follow-up to work it already accepted
        (a late tool result); it is still taken while the daemon stops. ``cursor``:
        where the event's channel has read up to, committed with the event."""
        # Every line logged while this event is handled (here, in the classifier
        # task it starts, which inherits this context) names it. Tokens rather than
        # ``bound_contextvars``, which copies the whole context twice per event.
        tokens = bind_contextvars(event_id=event.id, session=event.session)
        # The root of the event's trace; once stored, remembered under its id so that
        # the run which takes it from the queue continues it (wakeful/kernel/tracing.py).
        with tracing.tracer().span(
            f"event {event.kind}",
            {
                "wakeful.event.id": event.id,
                "wakeful.event.kind": event.kind,
                "wakeful.event.source": event.source.type,
                "wakeful.session": event.session,
            },
            kind="producer",
        ) as span:
            try:
                return await self._submit(event, internal, cursor, span)
            finally:
                reset_contextvars(**tokens)

    async def _submit(
        self, event: Event, internal: bool, cursor: Cursor | None, span: tracing.Span
    ) -> SubmitResult:
        if self.stopping and not internal:
            raise DaemonUnavailable("the daemon is stopping; retry shortly", retry_after_s=5)
        loop = self.sessions.get(event.session)
        decision = self._router.decide_fast(event, busy=self._busy(event.session, loop))
        status = EventStatus.ROUTING if decision is None else STATUS_FOR[decision.strategy]
        try:
            result = await self._store.append(
                event,
                status,
                decision.strategy.value if decision else None,
                decision.reason if decision else None,
                cursor,
            )
        except StoreUnavailable as exc:
            raise DaemonUnavailable(str(exc), retry_after_s=5) from exc
        if not result.created:
            self.duplicates += 1
            span.set("wakeful.event.duplicate", True)
            metrics.DUPLICATES.inc(kind=event.kind)
            log.info("duplicate event dropped", event_id=event.id, kind=event.kind)
            return SubmitResult(event.id, duplicate=True)
        self.accepted += 1
        # Not for a duplicate: the run continues the trace of the event it stored.
        span.remember(event.id)
        metrics.EVENTS_ACCEPTED.inc(kind=event.kind, source=event.source.type)
        if decision is None:
            span.set("wakeful.route.by", "classifier")
            classify = self._guarded("classify", result.stored, loop, self._classify_then_act)
            self._group.start_soon(classify, name=f"classify {event.id}")
        else:
            span.set("wakeful.route.by", "rules")
            span.set("wakeful.route.strategy", decision.strategy.value)
            self._act(result.stored, decision, loop)
        return SubmitResult(event.id, duplicate=False)

    async def _classify_then_act(self, loop: SessionLoop, stored: StoredEvent) -> None:
        # The classifier's reason is not an attribute: a model wrote it from the event.
        with tracing.tracer().span("route", continues=(stored.event.id,)) as span:
            decision = await self._router.decide(
                stored.event, busy=self._busy(stored.event.session, loop)
            )
            span.set("wakeful.route.strategy", decision.strategy.value)
        await self._store.set_route(
            stored.event.id, STATUS_FOR[decision.strategy], decision.strategy, decision.reason
        )
        self._act(stored, decision, loop)

    def _busy(self, session: str, loop: SessionLoop) -> bool | None:
        """Whether the session's loop is busy; None in a fleet when another daemon runs
        it (this daemon's loop object for it never runs, so it is never busy)."""
        if self._fleet is None or self.sessions.owns(session):
            return loop.busy
        return None

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
                # A cancel that stops running tools also stops the session's subagents.
                "stop_tools": decision.strategy is Strategy.CANCEL and decision.stop_tools,
                "text": event.content.text[:500],
            },
        )
        if decision.strategy is Strategy.CANCEL:
            cause = f"an urgent {event.kind} arrived ({event.content.text[:80]!r})"
            loop.notify(event.id)  # queued like any other; the interrupt makes it early
            if self._fleet is None or self.sessions.owns(event.session):
                loop.interrupt(cause, stop_tools=decision.stop_tools)
            else:  # fleet: the session's loop runs on another daemon
                tell = self._tell_owner(event.session, cause, decision.stop_tools, event.id)
                self._group.start_soon(tell, name=f"cancel {event.id}")
        elif decision.strategy is Strategy.PARALLEL:
            answer = self._guarded("parallel", stored, loop, answer_in_parallel)
            self._group.start_soon(answer, name=f"parallel {event.id}")
        else:
            loop.notify(event.id)

    def _tell_owner(
        self, session: str, cause: str, stop_tools: bool, event_id: str
    ) -> Callable[[], Coroutine[Any, Any, None]]:
        """The interrupt, sent to the daemon that owns the session; cannot raise: the
        event is stored either way and its owner takes it at the next safe point."""
        fleet = self._fleet
        assert fleet is not None

        async def send() -> None:
            try:
                owner = await fleet.tell_owner(session, "cancel", cause, stop_tools, event_id)
                if owner == fleet.me and self.sessions.owns(session):
                    # It became this daemon's meanwhile: the control message is for us.
                    interrupt_unless_taken(self.sessions.get(session), cause, stop_tools, event_id)
            except Exception as exc:
                metrics.BACKGROUND_FAILURES.inc(step="cancel")
                log.warning("could not pass the interrupt to the session's owner", error=str(exc))

        return send

    def _guarded(
        self,
        step: str,
        stored: StoredEvent,
        loop: SessionLoop,
        run: Callable[[SessionLoop, StoredEvent], Awaitable[None]],
    ) -> Callable[[], Coroutine[Any, Any, None]]:
        """``run`` as a task that cannot raise into the daemon's task group."""

        async def guarded() -> None:
            try:
                await run(loop, stored)
            except Exception as exc:
                metrics.BACKGROUND_FAILURES.inc(step=step)
                log.exception("routing step failed; queueing the event", step=step)
                await self._requeue(stored, loop, f"{step} failed ({type(exc).__name__}); queued")

        return guarded

    async def _requeue(self, stored: StoredEvent, loop: SessionLoop, reason: str) -> None:
        """Back to pending, retried while the store refuses (else ``recover`` at restart)."""
        delay, cap = REQUEUE_BACKOFF_S
        while True:
            try:
                await self._store.set_route(
                    stored.event.id, EventStatus.PENDING, Strategy.QUEUE, reason
                )
                break
            except Exception as exc:
                log.warning("cannot requeue the event yet", error=str(exc), retry_in_s=delay)
                await anyio.sleep(delay)
                delay = min(delay * 2, cap)
        loop.notify(stored.event.id)
