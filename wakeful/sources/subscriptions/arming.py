"""The subscriptions at run time: each active one watched in a task the component owns.

``connect`` checks the request (its kind's ``plan``), stores the record, then
arms it; ``disconnect`` cancels the watch and removes the record. At start
every active record is armed again. A watch that fails is restarted after a
backoff (its detail says why), one that ends (its shell task exited) is
marked ended; neither touches any other subscription.

In a fleet (``notices`` given) each of these changes is announced to the other
daemons, which re-read the record and arm or disarm it (subscriptions/fleet.py).
Only the kinds whose source every daemon can reach are armed from a notice: a
file or a shell task's output is on the daemon it was made on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import structlog
from anyio.abc import TaskGroup

from wakeful.core.components.context import Submit
from wakeful.kernel.events import Event
from wakeful.sources.subscriptions.config import SubscriptionsSection
from wakeful.sources.subscriptions.kinds.base import (
    Asking,
    Ended,
    Fire,
    Planned,
    Refusal,
    SourceKind,
)
from wakeful.sources.subscriptions.kinds.mailbox import CURSOR_PREFIX
from wakeful.sources.subscriptions.records import (
    Kind,
    Subscription,
    SubscriptionBook,
    new_subscription_id,
)
from wakeful.sources.subscriptions.request import ConnectRequest, foreign_fields
from wakeful.store.base import ChannelState

if TYPE_CHECKING:  # Redis only for a fleet
    from wakeful.store.fleet.port import ChangeNotices

log = structlog.get_logger(__name__)

_BACKOFF_MIN_S, _BACKOFF_MAX_S = 1.0, 300.0
# Sources any daemon of a fleet reaches (a mailbox and a URL by lease, a hook by route).
SHARED_KINDS: frozenset[Kind] = frozenset({"mailbox", "http_check", "webhook"})


class Subscriptions:
    def __init__(
        self,
        book: SubscriptionBook,
        kinds: Mapping[str, SourceKind],
        submit: Submit,
        state: ChannelState,
        section: SubscriptionsSection,
        notices: ChangeNotices | None = None,
    ) -> None:
        self.book = book
        self.notices = notices
        self.kinds = dict(kinds)
        self._submit = submit
        self._state = state
        self._section = section
        self._group: TaskGroup | None = None
        self._armed: dict[str, anyio.CancelScope] = {}

    # -- the agent's requests ---------------------------------------------------------

    async def connect(
        self, request: ConnectRequest, *, session: str, workspace: Path, tainted_by: str | None
    ) -> tuple[Subscription, Planned]:
        """Check, store and arm; :class:`Refusal` names the field that is wrong."""
        foreign = foreign_fields(request)
        if foreign:
            raise Refusal(
                f"{', '.join(foreign)}: not used by kind {request.kind!r}; leave "
                f"{'them' if len(foreign) > 1 else 'it'} out"
            )
        active = len(self.book.active())
        if active >= self._section.max:
            raise Refusal(
                f"kind: {active} subscriptions are active, the most [subscriptions] max "
                f"allows; disconnect_channel one you no longer need first"
            )
        sub_id = new_subscription_id()
        planned = await self.kinds[request.kind].plan(request, Asking(sub_id, session, workspace))
        sub = Subscription(
            id=sub_id,
            kind=request.kind,
            session=session,
            spec=planned.spec,
            note=request.note,
            tainted_by=tainted_by,
        )
        await self.book.put(sub)  # stored before the id is promised
        self._arm(sub)
        await self._announce(sub_id)
        return sub, planned

    async def disconnect(self, sub_id: str) -> Subscription | None:
        sub = self.book.get(sub_id)
        if sub is None:
            return None
        scope = self._armed.pop(sub_id, None)
        if scope is not None:
            scope.cancel()
        self.kinds[sub.kind].disarmed(sub)
        await self._state.put_state(CURSOR_PREFIX + sub_id, None)
        removed = await self.book.remove(sub_id)
        await self._announce(sub_id)
        return removed

    # -- running ----------------------------------------------------------------------

    def start(self, group: TaskGroup) -> None:
        """Arm every active subscription in ``group`` (the component's run)."""
        self._group = group
        self._armed.clear()
        for sub in self.book.active():
            self._arm(sub)

    def _arm(self, sub: Subscription) -> None:
        if self._group is None:
            return  # armed by start() when the run phase begins
        scope = anyio.CancelScope()
        self._armed[sub.id] = scope
        self._group.start_soon(self._watch, sub.id, scope, name=f"subscription {sub.id}")

    async def _watch(self, sub_id: str, scope: anyio.CancelScope) -> None:
        attempt = 0
        with scope:
            while (sub := self.book.get(sub_id)) is not None and sub.state == "active":
                started = time.monotonic()
                try:
                    await self.kinds[sub.kind].watch(
                        sub, self.fire_for(sub), self._reporter(sub_id)
                    )
                    return  # watched to the end without saying why: nothing more to watch
                except Ended as exc:
                    log.info("subscription ended", subscription=sub_id, why=str(exc))
                    self.kinds[sub.kind].disarmed(sub)
                    await self.book.change(sub_id, state="ended", ended_reason=str(exc))
                    await self._announce(sub_id)
                    return
                except Exception as exc:  # this source only: back off, try again
                    why = f"{type(exc).__name__}: {exc}"
                    log.warning("subscription failed", subscription=sub_id, error=why)
                    attempt = 1 if time.monotonic() - started > _BACKOFF_MAX_S else attempt + 1
                    delay = min(_BACKOFF_MAX_S, _BACKOFF_MIN_S * 2 ** (attempt - 1))
                    await self.book.change(sub_id, detail=f"failing: {why}; retry in {delay:g} s")
                    await anyio.sleep(delay)
        self._armed.pop(sub_id, None)

    # -- the other daemons of a fleet ------------------------------------------------

    async def _announce(self, sub_id: str) -> None:
        if self.notices is not None:
            await self.notices.announce(sub_id)

    async def apply_change(self, sub_id: str) -> None:
        """Another daemon changed this record: re-read it; arm it if it is new here and
        its source is shared, disarm it if it is gone or ended."""
        known = self.book.get(sub_id)
        sub = await self.book.reread(sub_id)
        if sub is not None and sub.state == "active":
            if sub_id not in self._armed and sub.kind in SHARED_KINDS:
                self._arm(sub)
            return
        scope = self._armed.pop(sub_id, None)
        if scope is not None:
            scope.cancel()
            if known is not None:
                self.kinds[known.kind].disarmed(known)

    async def resync(self) -> None:
        """Notices may have been missed (the feed was down): apply every record."""
        for sub_id in sorted(await self.book.stored_ids() | {s.id for s in self.book.all()}):
            await self.apply_change(sub_id)

    def fire_for(self, sub: Subscription) -> Fire:
        async def fire(event: Event) -> None:
            result = await self._submit(event)
            if not result.duplicate:
                await self.count(sub.id)

        return fire

    async def count(self, sub_id: str) -> None:
        """One more event raised for the subscription (list_channels' ``fired``)."""
        now = time.time()
        await self.book.update(
            sub_id, lambda s: dataclasses.replace(s, fired=s.fired + 1, last_fired_at=now)
        )

    def _reporter(self, sub_id: str) -> Any:
        async def report(detail: str, *, keep: dict[str, Any] | None = None) -> None:
            current = self.book.get(sub_id)
            if current is None or (detail == current.detail and not keep):
                return
            await self.book.update(
                sub_id,
                lambda s: dataclasses.replace(s, detail=detail, spec={**s.spec, **(keep or {})}),
            )

        return report

    def status(self) -> dict[str, Any]:
        subs = self.book.all()
        return {
            "active": sum(1 for s in subs if s.state == "active"),
            "max": self._section.max,
            "subscriptions": [s.public() for s in subs[:100]],
        }
