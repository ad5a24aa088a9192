"""The owner of one session's loop: an exception ends a run, never the daemon.

:class:`SessionSupervisor` runs :meth:`SessionLoop.run_forever` in a task
group of its own (the session's tool tasks live there too). When anything
in it raises — the provider, a tool, the store, the loop itself — the
supervisor logs it with the session and the events in flight, counts it in
``/metrics``, and starts the loop again after a backoff (exponential,
capped). The restarted loop repairs the trajectory exactly as after a
process restart (the normalizer's honest placeholders for unfinished tool
calls); nothing partial was ever recorded, since a reply is written only
once whole.

Which events crashed it (:class:`PoisonGate`):

- *before* they were consumed (``consume``, rendering, …): they are still
  pending, and will be taken again. Each take counts one attempt *before*
  the run starts (arq's habit), so a crash that takes the whole process down
  counts too; an event taken once more after ``max_event_crashes`` failed
  takes is quarantined instead of run. After a batch of several crashed, the
  events are taken one at a time until each of that batch is answered or
  quarantined, so the innocent ones in it are not counted with the poison one
  (stopping at the first answered one let an innocent event queued behind
  the poison crash with it again).
- *after* they were consumed (the model call or what follows crashed before
  the model answered them): the restarted loop owes them a reply and calls
  the model again. Each such retry counts one attempt for them; past the
  limit they are quarantined and the turn is closed with a note saying so,
  so the session goes on with the next event.

A quarantined event leaves the queue with its reason (store status
``quarantined``), shows in ``wakeful status``, is reported to the session as
a ``system.alert`` (id ``alert:quarantine:<event id>``), and goes back with
``wakeful events retry ID``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable

import anyio
import structlog

from wakeful.core.loop.session_loop import SessionLoop
from wakeful.kernel import metrics
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event
from wakeful.kernel.exception_groups import describe_failure, leaves
from wakeful.store.base import (
    EventQueue,
    SessionLeaseLost,
    Store,
    StoredEvent,
    StoreUnavailable,
)

log = structlog.get_logger(__name__)

Submit = Callable[[Event], Awaitable[object]]


def quarantine_alert(session: str, stored: StoredEvent, failure: str) -> Event:
    event = stored.event
    return Event.parse(
        {
            "id": f"alert:quarantine:{event.id}",
            "kind": EventKind.SYSTEM_ALERT,
            "source": {"type": "system", "principal": "supervisor", "trusted": True},
            "channel": "system",
            "session": session,
            "content": {
                "text": (
                    # Not quoting the event: if its content is what crashes the session,
                    # the alert must not carry it back in.
                    f"The {event.kind} event {event.id} from {event.channel} was"
                    f" quarantined: {failure}. It will not be handled unless the owner runs"
                    f" `wakeful events retry {event.id}`."
                ),
                "data": {"event_id": event.id, "failure": failure},
            },
            "context": {"priority": "high"},
        }
    )


class PoisonGate:
    """Counts each event's attempts and quarantines the ones that keep crashing."""

    def __init__(self, session: str, queue: EventQueue, max_crashes: int, submit: Submit) -> None:
        self.session = session
        self.queue = queue
        self.max_crashes = max_crashes
        self.submit = submit
        self.taken: list[StoredEvent] = []  # admitted, not yet consumed
        self.carried: list[StoredEvent] = []  # consumed, not yet answered by the model
        self.last_failure = "the session crashed while handling it"
        # The events of a crashed batch of several, not yet answered or quarantined:
        # while any is pending, events are taken one at a time.
        self.suspects: set[str] = set()
        self.held_back: list[StoredEvent] = []  # what the last admit left in the queue

    @property
    def one_at_a_time(self) -> bool:
        return bool(self.suspects)

    async def admit(self, batch: list[StoredEvent]) -> list[StoredEvent]:
        """The part of a fresh batch that may run now; poison is quarantined instead."""
        # A suspect no longer pending (quarantined, answered elsewhere, cancelled) is no
        # suspect: the one place a quarantined event leaves the set.
        self.suspects &= {s.event.id for s in batch}
        self.held_back = batch[1:] if self.one_at_a_time else []
        if self.one_at_a_time:
            batch = batch[:1]  # the rest stays pending, uncounted, for the next safe point
        before = await self.queue.note_attempt([s.event.id for s in batch])
        poisoned = [s for s in batch if before.get(s.event.id, 0) >= self.max_crashes]
        if poisoned:
            await self.quarantine(poisoned)
        self.taken = [s for s in batch if s not in poisoned]
        return self.taken

    def consumed(self) -> None:
        self.carried += self.taken
        self.taken = []

    def answered(self) -> None:
        self.suspects -= {s.event.id for s in self.taken + self.carried}
        self.taken, self.carried = [], []

    async def before_restart(self, store_outage: bool) -> list[StoredEvent]:
        """Count the retry of events the crashed run consumed; the ones quarantined.

        ``store_outage``: the run failed because the store did (disk full, Redis
        down), which says nothing about its events: their count is taken back
        and none is quarantined, however long the outage lasts."""
        if store_outage:
            # Taken: the next take counts again, so take this one back. Carried: the
            # retry is simply not counted (it would be counted here).
            taken, self.taken = self.taken, []
            if taken:
                await self.queue.note_attempt([s.event.id for s in taken], delta=-1)
            return []
        if len(self.taken) > 1:
            # Several events crashed before they were consumed: take them one at a
            # time until each is answered, so only the poison one counts up.
            self.suspects |= {s.event.id for s in self.taken}
        self.taken = []
        if not self.carried:
            return []
        before = await self.queue.note_attempt([s.event.id for s in self.carried])
        poisoned = [s for s in self.carried if before.get(s.event.id, 0) >= self.max_crashes]
        if poisoned:
            await self.quarantine(poisoned)
            self.carried = [s for s in self.carried if s not in poisoned]
        return poisoned

    async def quarantine(self, events: list[StoredEvent]) -> None:
        times = "once" if self.max_crashes == 1 else f"{self.max_crashes} times"
        failure = (
            f"session {self.session!r} crashed {times} while handling it"
            f" (last: {self.last_failure})"
        )
        moved = set(await self.queue.quarantine([s.event.id for s in events], failure))
        for stored in events:
            if stored.event.id not in moved:
                continue
            metrics.EVENTS_QUARANTINED.inc(kind=stored.event.kind)
            log.error("event quarantined", event_id=stored.event.id, failure=failure)
            if stored.event.kind != EventKind.SYSTEM_ALERT:  # an alert about an alert could loop
                await self._alert(quarantine_alert(self.session, stored, failure))

    async def _alert(self, event: Event) -> None:
        try:
            await self.submit(event)
        except Exception:
            log.exception("could not report a quarantined event", event_id=event.id)


class SessionSupervisor:
    def __init__(
        self,
        loop: SessionLoop,
        gate: PoisonGate,
        store: Store,
        *,
        first_backoff_s: float,
        max_backoff_s: float,
    ) -> None:
        self.loop = loop
        self.gate = gate
        self.store = store
        self.first_backoff_s = first_backoff_s
        self.max_backoff_s = max_backoff_s
        self.crashes = 0  # since the loop last finished a run
        loop.gate = gate

    async def run(self) -> None:
        """Run the loop for the daemon's life; only cancellation ends this, or (fleet)
        another daemon taking the session, which this one must not write any more."""
        while True:
            runs_before = self.loop.runs_finished
            failure = await self._run_once()
            if any(isinstance(leaf, SessionLeaseLost) for leaf in leaves(failure)):
                log.warning(
                    "another daemon owns this session now; letting it go",
                    session=self.loop.session,
                    error=describe_failure(failure),
                )
                return
            if self.loop.runs_finished > runs_before:
                self.crashes = 0  # it worked for a while: start the backoff over
            self.crashes += 1
            await self._crashed(failure)
            await anyio.sleep(self._backoff_s())
            await self._probe_store()

    async def _run_once(self) -> BaseException:
        """One life of the loop, until it raises; cancellation passes through."""
        failure: BaseException | None = None
        try:
            async with anyio.create_task_group() as group:
                await self.loop.run_forever(group)
        except* Exception as failed:
            failure = failed
        if failure is None:
            raise AssertionError("SessionLoop.run_forever returned")
        return failure

    async def _crashed(self, failure: BaseException) -> None:
        session = self.loop.session
        in_flight = [s.event.id for s in (self.gate.taken or self.gate.carried)]
        error = describe_failure(failure)
        self.gate.last_failure = error
        kinds = sorted({type(leaf).__name__ for leaf in leaves(failure)})
        metrics.SESSION_CRASHES.inc(error=",".join(kinds))
        log.error(
            "session loop crashed; restarting it",
            session=session,
            event_ids=in_flight,
            error=error,
            crashes=self.crashes,
            exc_info=failure,
        )
        self.loop.publish_alert(f"the session's run failed ({error}); restarting it")
        try:
            outage = all(isinstance(leaf, StoreUnavailable) for leaf in leaves(failure))
            poisoned = await self.gate.before_restart(store_outage=outage)
            if poisoned and not self.gate.carried:
                await self._close_turn(poisoned)
        except Exception as exc:  # the store is down: the next attempt finds out again
            log.warning("could not settle the crashed run's events", error=str(exc))

    async def _probe_store(self) -> None:
        """While the store is known bad, each restart checks whether it writes again
        (the probe marks it good); otherwise this costs nothing."""
        if not self.store.health.ok:
            with contextlib.suppress(Exception):
                await self.store.probe_write()

    async def _close_turn(self, poisoned: list[StoredEvent]) -> None:
        """The model never answered these; say so, so the next event starts a fresh turn."""
        ids = ", ".join(s.event.id for s in poisoned)
        text = (
            f"(No reply: handling event(s) {ids} crashed this session"
            f" {self.gate.max_crashes} times, so they were quarantined. Last error:"
            f" {self.gate.last_failure}.)"
        )
        await self.store.append_messages(
            self.loop.session,
            [{"role": "assistant", "content": text}],
            meta={"quarantined": [s.event.id for s in poisoned]},
        )

    def _backoff_s(self) -> float:
        return float(min(self.first_backoff_s * 2 ** (self.crashes - 1), self.max_backoff_s))
