"""The ledger: per account, what was used and what calls in flight hold.

Each account is one small record changed only by compare-and-set
(``ChannelState.put_state_if``: one SQLite transaction, or one atomic Redis
script), so parallel sessions, subagents and several daemons on one Redis never
hold or count past a cap between them: a writer that lost the race reads again
and judges again. A hold whose call never settled (the daemon was killed
mid-call) lapses after ``HOLD_TTL_S`` rather than blocking the window for good.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

from wakeful.store.base import ChannelState

HOLD_TTL_S = 15 * 60  # longer than any model call may take


@dataclass
class Balance:
    used: int = 0
    holds: dict[str, tuple[int, float]] = field(default_factory=dict)  # id → amount, expiry

    @property
    def held(self) -> int:
        return sum(amount for amount, _ in self.holds.values())

    @classmethod
    def parse(cls, raw: str | None, now: float) -> Balance:
        if raw is None:
            return cls()
        data = json.loads(raw)
        holds = {k: (int(a), float(e)) for k, (a, e) in data.get("holds", {}).items() if e > now}
        return cls(int(data.get("used", 0)), holds)

    def dump(self) -> str:
        return json.dumps({"used": self.used, "holds": self.holds}, sort_keys=True)


class Ledger:
    def __init__(self, state: ChannelState) -> None:
        self._state = state

    async def balance(self, key: str) -> Balance:
        return Balance.parse(await self._state.get_state(key), time.time())

    async def hold(self, key: str, ticket: str, amount: int, limit: int) -> bool:
        """Hold ``amount`` unless used + held + amount would pass ``limit``."""
        while True:
            raw = await self._state.get_state(key)
            balance = Balance.parse(raw, time.time())
            if balance.used + balance.held + amount > limit:
                return False
            balance.holds[ticket] = (amount, time.time() + HOLD_TTL_S)
            if await self._state.put_state_if(key, raw, balance.dump()):
                return True

    async def settle(self, key: str, ticket: str, used: int) -> None:
        """Drop the hold and count what the call used (also when the hold had lapsed)."""
        while True:
            raw = await self._state.get_state(key)
            balance = Balance.parse(raw, time.time())
            balance.holds.pop(ticket, None)
            balance.used += used
            if await self._state.put_state_if(key, raw, balance.dump()):
                return
