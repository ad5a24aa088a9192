"""Where each session's taint is kept: the store, so it survives restarts.

The one place that marks and clears taint. The loop calls :meth:`mark_events`
before a batch enters the trajectory (so a crash between the two can only
leave the session tainted, never clean); the tool registry calls
:meth:`mark` when a result carries a third party's words.
"""

from __future__ import annotations

from collections.abc import Iterable

import structlog

from wakeful.core.taint import Taint, TaintSource, now_iso
from wakeful.kernel.events import Event
from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

KEY_PREFIX = "taint:"


def describe_untrusted(event: Event) -> str:
    """What an untrusted event is, for the owner: "email from bob@x", "webhook github"."""
    who = event.source.principal or event.source.type
    return f"{event.kind} from {who} via {event.channel}"


def inherited_from(event: Event) -> str | None:
    """The taint a trusted-looking event carries from the tainted run that made it
    (a timer or shell task created while the session was tainted)."""
    value = event.content.data.get("tainted_by")
    return str(value) if value else None


def _what(event: Event) -> str:
    what = describe_untrusted(event)
    inherited = inherited_from(event)
    return what if inherited is None else f"{what}, created while tainted by {inherited}"


class SessionTaints:
    def __init__(self, state: ChannelState) -> None:
        self._state = state
        self._cache: dict[str, Taint | None] = {}

    async def get(self, session: str) -> Taint | None:
        if session not in self._cache:
            raw = await self._state.get_state(KEY_PREFIX + session)
            self._cache[session] = Taint.from_json(raw) if raw else None
        return self._cache[session]

    async def mark(self, session: str, source: TaintSource) -> Taint:
        taint = await self._mark_all(session, [source])
        assert taint is not None  # one source given
        return taint

    async def mark_events(self, session: str, events: Iterable[Event]) -> Taint | None:
        """Taint the session with every untrusted event about to enter its trajectory."""
        at = now_iso()
        sources = [
            TaintSource(what=_what(event), ref=event.id, at=at)
            for event in events
            if not event.trusted or inherited_from(event) is not None
        ]
        return await self._mark_all(session, sources)

    async def _mark_all(self, session: str, sources: list[TaintSource]) -> Taint | None:
        # One durable write for the whole batch: a flood's batch of 2,000 webhooks
        # once cost 2,000 fsync'd commits (seconds) before the model saw any of them.
        current = await self.get(session)
        taint = current
        for source in sources:
            taint = Taint((source,)) if taint is None else taint.with_source(source)
        if taint is not current and taint is not None:
            await self._state.put_state(KEY_PREFIX + session, taint.to_json())
            self._cache[session] = taint
            if current is None:
                log.warning("session tainted", session=session, by=taint.sources[0].describe())
        return taint

    async def clear(self, session: str) -> bool:
        """The owner's explicit action; True if the session was tainted."""
        was = await self.get(session) is not None
        await self._state.put_state(KEY_PREFIX + session, None)
        self._cache[session] = None
        if was:
            log.info("session taint cleared by the owner", session=session)
        return was

    async def all(self) -> dict[str, Taint]:
        found: dict[str, Taint] = {}
        for key, raw in (await self._state.states_under(KEY_PREFIX)).items():
            taint = Taint.from_json(raw)
            if taint is not None:
                found[key.removeprefix(KEY_PREFIX)] = taint
        return found
