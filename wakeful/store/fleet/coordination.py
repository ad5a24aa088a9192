"""``Coordination`` on Redis: named leases, change notices and rosters under the prefix.

A component that coordinates gets one on a small client pool of its own
(``RedisStore.coordination``): a blocked pub/sub read or a lease wait never
waits behind the event store's group commits.
"""

from __future__ import annotations

from redis.asyncio import Redis
from redis.exceptions import RedisError

from wakeful.store.base import StoreUnavailable
from wakeful.store.fleet.holders import process_holder_id
from wakeful.store.fleet.named_lease import NamedLease
from wakeful.store.fleet.notices import RedisChangeNotices
from wakeful.store.fleet.ttl import DEFAULT_TTL_S

# KEYS: the roster. ARGV: entry name, the value as read. Deletes it only if unchanged.
_DELETE_IF_SAME = """
if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('HDEL', KEYS[1], ARGV[1])
end
return 0
"""


class RedisCoordination:
    def __init__(self, client: Redis, prefix: str) -> None:
        self._client = client
        self._prefix = prefix
        self._holder = process_holder_id()

    @property
    def holder(self) -> str:
        return self._holder

    def lease(self, name: str, *, holder: str = "", ttl_s: float = DEFAULT_TTL_S) -> NamedLease:
        return NamedLease(self._client, self._prefix + name, holder or self._holder, ttl_s)

    async def lapsed(self, name: str) -> bool:
        try:
            return not await self._client.exists(self._prefix + name)
        except RedisError as exc:
            raise StoreUnavailable(f"cannot read the lease {name}: {exc}") from exc

    def notices(self, topic: str) -> RedisChangeNotices:
        return RedisChangeNotices(self._client, self._prefix + topic)

    def roster(self, name: str) -> RedisRoster:
        return RedisRoster(self._client, self._prefix + name)


class RedisRoster:
    """A ``Roster`` as one hash."""

    def __init__(self, client: Redis, key: str) -> None:
        self._client = client
        self._key = key

    async def put(self, name: str, value: str) -> None:
        try:
            await self._client.hset(self._key, name, value)
        except RedisError as exc:
            raise StoreUnavailable(f"cannot write {self._key}: {exc}") from exc

    async def delete(self, name: str) -> None:
        try:
            await self._client.hdel(self._key, name)
        except RedisError as exc:
            raise StoreUnavailable(f"cannot write {self._key}: {exc}") from exc

    async def entries(self) -> dict[str, str]:
        try:
            found = await self._client.hgetall(self._key)
        except RedisError as exc:
            raise StoreUnavailable(f"cannot read {self._key}: {exc}") from exc
        return {str(name): str(value) for name, value in found.items()}

    async def delete_if(self, name: str, expected: str) -> bool:
        try:
            return bool(await self._client.eval(_DELETE_IF_SAME, 1, self._key, name, expected))
        except RedisError as exc:
            raise StoreUnavailable(f"cannot write {self._key}: {exc}") from exc
