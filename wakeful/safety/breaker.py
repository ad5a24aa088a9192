"""The circuit breaker: after repeated denials a session's consequential calls stop.

A session that keeps trying what the rules or the owner refused is being
steered by someone; past ``[safety] breaker_denials`` denials, every
consequential call is refused until the owner resets it (``wakeful breaker
reset SESSION``, the web page). Counts live in the store: a restart does not
reset them.
"""

from __future__ import annotations

import json

import structlog

from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

KEY_PREFIX = "breaker:"


class DenialBreaker:
    def __init__(self, state: ChannelState, *, trip_after: int) -> None:
        self._state = state
        self.trip_after = trip_after
        self._cache: dict[str, int] = {}

    async def denials(self, session: str) -> int:
        if session not in self._cache:
            raw = await self._state.get_state(KEY_PREFIX + session)
            self._cache[session] = int(json.loads(raw)["denials"]) if raw else 0
        return self._cache[session]

    async def tripped(self, session: str) -> bool:
        return await self.denials(session) >= self.trip_after

    async def count_denial(self, session: str) -> int:
        count = await self.denials(session) + 1
        await self._state.put_state(KEY_PREFIX + session, json.dumps({"denials": count}))
        self._cache[session] = count
        if count == self.trip_after:
            log.warning("circuit breaker tripped", session=session, denials=count)
        return count

    async def reset(self, session: str) -> int:
        """The owner's reset; returns the count it had."""
        count = await self.denials(session)
        await self._state.put_state(KEY_PREFIX + session, None)
        self._cache[session] = 0
        log.info("circuit breaker reset by the owner", session=session, denials=count)
        return count

    async def all(self) -> dict[str, int]:
        return {
            key.removeprefix(KEY_PREFIX): int(json.loads(raw)["denials"])
            for key, raw in (await self._state.states_under(KEY_PREFIX)).items()
        }
