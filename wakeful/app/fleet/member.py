"""One daemon of a fleet: it reads the shared stream and drives the sessions it owns.

Two tasks, both owned by :meth:`FleetMember.run`:

- the reader blocks on XREADGROUP over the events stream and this daemon's control
  stream. An entry for a session it owns wakes that loop; one for a session nobody
  owns makes it the owner (lease and fencing token in one script) and starts the
  loop; one for another daemon's session is moved to that daemon, which is woken.
  A control message wakes or interrupts (``cancel``) a loop of this daemon.
- the heartbeat renews the registration and the leases (a lease found lost ends its
  loop here: the session is another daemon's now), adopts orphaned sessions up to a
  fair share (so a dead daemon's sessions move within the lease time), gives one
  resting session up when it holds more than its share (so a daemon that joins gets
  some of a live owner's), claims what dead daemons left pending, and trims the
  stream below its oldest unacknowledged entry.

Stopping (SIGTERM): :meth:`begin_stop` stops taking sessions while the loops reach
their safe points; :meth:`hand_over`, once none runs, ends the leases and puts the
entries this daemon held back in the stream, so the others take them at once.
"""

from __future__ import annotations

import contextlib
from typing import Any

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.core.fleet_port import interrupt_unless_taken
from wakeful.core.sessions import Sessions
from wakeful.kernel import metrics
from wakeful.store.base import StoreUnavailable
from wakeful.store.fleet.sessions import Control, NotInFleet, RedisFleet, Routed
from wakeful.store.redis_store import RedisStore

log = structlog.get_logger(__name__)

BLOCK_MS = 1000  # one read's longest wait; a new entry or control message ends it at once
TRIM_EVERY = 10  # heartbeats
RETRY_S = 1.0  # after Redis failed a read or a heartbeat


class FleetMember:
    def __init__(self, store: RedisStore, fleet: RedisFleet, sessions: Sessions, url: str) -> None:
        """``url``: where this daemon listens, for the fleet's registry."""
        self.store = store
        self.fleet = fleet
        self.sessions = sessions
        self.url = url
        self.heartbeat_s = fleet.options.heartbeat_s
        self.stopping = False
        self._reading = anyio.CancelScope()
        self._beating = anyio.CancelScope()

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        await self.fleet.join(self.url)
        log.info("joined the fleet", daemon=self.fleet.me, prefix=self.fleet.prefix)
        async with anyio.create_task_group() as group:
            group.start_soon(self._read_forever)
            group.start_soon(self._beat_forever)
            task_status.started()

    # -- reading ------------------------------------------------------------------

    async def _read_forever(self) -> None:
        client = self.store.reader()
        try:
            with self._reading:
                while True:
                    try:
                        delivery = await self.fleet.read(client, BLOCK_MS)
                    except NotInFleet:
                        # Others took this daemon for dead (it was paused) and removed
                        # its control stream; join again.
                        with contextlib.suppress(StoreUnavailable):
                            await self.fleet.join(self.url)
                        await anyio.sleep(RETRY_S / 10)
                        continue
                    except StoreUnavailable as exc:
                        log.warning("cannot read the fleet's streams", error=str(exc))
                        await anyio.sleep(RETRY_S)
                        continue
                    except Exception:  # one failure never ends the daemon's part
                        log.exception("reading the fleet's streams failed")
                        await anyio.sleep(RETRY_S)
                        continue
                    self._apply(delivery.routed)
                    for control in delivery.controls:
                        self._obey(control)
        finally:
            with anyio.CancelScope(shield=True):
                await client.aclose()

    def _apply(self, routed: list[Routed]) -> None:
        for item in routed:
            if item.outcome == "taken":
                log.info("took a session", session=item.session, token=item.detail)
                self.sessions.adopt(item.session)
            elif item.outcome == "mine" and item.session in self.fleet.tokens:
                self.sessions.adopt(item.session).notify()
            elif item.outcome == "dead":
                metrics.BACKGROUND_FAILURES.inc(step="dead-letter")
                log.error("event dead-lettered", session=item.session, reason=item.detail)

    def _obey(self, control: Control) -> None:
        if not self.sessions.owns(control.session):
            return  # the session moved on meanwhile: its new owner was told too
        loop = self.sessions.get(control.session)
        if control.op == "cancel":
            cause = control.cause or "an urgent event arrived"
            interrupt_unless_taken(loop, cause, control.stop_tools, control.event)
        else:
            loop.notify()

    # -- heartbeat ------------------------------------------------------------------

    async def _beat_forever(self) -> None:
        beats = 0
        with self._beating:
            while True:
                try:
                    await self._beat(beats)
                except StoreUnavailable as exc:
                    log.warning("fleet heartbeat failed", error=str(exc))
                except Exception:  # the next beat tries again; the leases last meanwhile
                    log.exception("fleet heartbeat failed")
                beats += 1
                await anyio.sleep(self.heartbeat_s)

    async def _beat(self, beats: int) -> None:
        for session in await self.fleet.renew():
            log.warning("lost a session's lease; letting it go", session=session)
            self.sessions.release(session)
        if self.stopping:
            return
        for session in await self.fleet.adopt():
            log.info("adopted an orphaned session", session=session)
            self.sessions.adopt(session)
        if await self.fleet.over_share():
            await self._give_one_up()
        self._apply(await self.fleet.claim_stale())
        if beats % TRIM_EVERY == 0:
            await self.fleet.trim()

    async def _give_one_up(self) -> None:
        """One resting session goes to a daemon below its share (it adopts the orphan).
        The order keeps two daemons from ever running it at once: its token goes first
        (no write of this daemon passes the fence, the reader no longer wakes it), then
        its loop ends here, and only then does its lease end in Redis."""
        resting = self.sessions.resting()
        if not resting:
            return  # every session is busy or owed something: the next heartbeat tries
        session = min(resting)
        self.fleet.let_go(session)
        with anyio.move_on_after(self.heartbeat_s) as waiting:  # leases last 3 beats
            await self.sessions.hand_off(session)  # a resting loop ends at once
        if waiting.cancel_called:
            # Its lease is not renewed any more and lapses (then another daemon adopts
            # it): the heartbeat must not stall, or every other lease would lapse too.
            log.warning("a session's loop did not end; its lease lapses", session=session)
            return
        moved = await self.fleet.give_up(session)
        log.info("gave a session up to even the fleet out", session=session, entries=moved)

    # -- stopping -------------------------------------------------------------------

    def begin_stop(self) -> None:
        """Take no more sessions (the leases held are still renewed)."""
        self.stopping = True
        self._reading.cancel()

    async def hand_over(self) -> None:
        """Once no loop of this daemon runs: its sessions go to the others now."""
        self.stopping = True
        self._reading.cancel()
        self._beating.cancel()
        with anyio.CancelScope(shield=True):
            try:
                moved = await self.fleet.hand_over()
            except StoreUnavailable as exc:  # the leases lapse instead
                log.warning("could not hand the sessions over", error=str(exc))
                return
            log.info("handed the sessions over to the fleet", entries=moved)

    async def status(self) -> dict[str, Any]:
        return await self.fleet.status()
