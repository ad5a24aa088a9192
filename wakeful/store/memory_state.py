"""A ChannelState kept in a dict: for parts built alone (tests, a registry without a store)."""

from __future__ import annotations


class MemoryState:
    """Small values in memory; gone when the process ends."""

    def __init__(self) -> None:
        self._values: dict[str, str] = {}

    async def get_state(self, key: str) -> str | None:
        return self._values.get(key)

    async def put_state(self, key: str, value: str | None) -> None:
        if value is None:
            self._values.pop(key, None)
        else:
            self._values[key] = value

    async def states_under(self, prefix: str) -> dict[str, str]:
        return {k: v for k, v in self._values.items() if k.startswith(prefix)}

    async def put_state_if(self, key: str, expected: str | None, value: str | None) -> bool:
        # No await in between: one task at a time runs this, so it is atomic.
        if self._values.get(key) != expected:
            return False
        await self.put_state(key, value)
        return True
