"""The state port in Redis, under ``[store] redis_prefix``: shared by a fleet's daemons.

A namespace is one hash, ``<prefix><namespace>`` (field: key, value: the
record), so the hashes components wrote before the port (``email:cursor``,
``email:seen``) are read as they are. Calls go through the event store's
client (``RedisStore._run``: a command sent is seen through); a
compare-and-set is one Lua script. A lease is a :class:`NamedLease` at
``<prefix><name>``, held with :func:`hold_while`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from redis.asyncio import Redis

from wakeful.store.state.port import check_namespace

if TYPE_CHECKING:  # the store hands this backend out: it imports this module
    from wakeful.store.redis_store import RedisStore

# KEYS: the namespace's hash. ARGV: field, expect absent (1/0), expected, delete (1/0), value.
_PUT_IF = """
local found = redis.call('HGET', KEYS[1], ARGV[1])
if ARGV[2] == '1' then
  if found then return 0 end
elseif found ~= ARGV[3] then
  return 0
end
if ARGV[4] == '1' then
  redis.call('HDEL', KEYS[1], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[5])
end
return 1
"""


class RedisState:
    """``StatePort`` on a ``RedisStore``'s client and prefix."""

    def __init__(self, store: RedisStore) -> None:
        self._store = store

    def records(self, namespace: str) -> RedisRecords:
        return RedisRecords(self._store, self._store.prefix + check_namespace(namespace))

    async def old_hash(self, name: str) -> dict[str, str]:
        key = self._store.prefix + name

        async def read(client: Redis) -> dict[str, str]:
            return {_text(k): _text(v) for k, v in (await client.hgetall(key)).items()}

        return await self._store._run(read, retry=True)


class RedisRecords:
    def __init__(self, store: RedisStore, key: str) -> None:
        self._store = store
        self._key = key

    async def get(self, key: str) -> str | None:
        async def read(client: Redis) -> str | None:
            found = await client.hget(self._key, key)
            return None if found is None else _text(found)

        return await self._store._run(read, retry=True)

    async def put(self, key: str, value: str | None) -> None:
        async def write(client: Redis) -> None:
            if value is None:
                await client.hdel(self._key, key)
            else:
                await client.hset(self._key, key, value)

        await self._store._run(write, retry=True)  # setting a value twice sets it once

    async def put_if(self, key: str, expected: str | None, value: str | None) -> bool:
        args: list[str | int] = [
            key,
            int(expected is None),
            expected or "",
            int(value is None),
            value or "",
        ]
        # Not retried: a first call that went through would make the repeat answer False.
        done = await self._store._run(lambda c: c.eval(_PUT_IF, 1, self._key, *args), retry=False)
        return bool(done)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
