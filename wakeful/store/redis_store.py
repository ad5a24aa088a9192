"""Redis implementation of the store: ``[store] backend = "redis"``.

The same contract as the SQLite store (``base.Store``): each write is one Lua
script (:mod:`~wakeful.store.redis_scripts`), so it is atomic and takes
one round trip; scripts are loaded once at open and run by EVALSHA (reloaded
by the client if Redis restarted and forgot them). Concurrent appends share
one script call (group commit, as in the SQLite store).

Why hashes, sorted sets and lists rather than Streams: the store's reads are
"this session's pending events in seq order", "one event by id" (dedup,
routing updates) and "the log after seq N"; events change status in place
and ``consume`` takes an arbitrary set of ids. A stream is append-only, keyed
by its own entry ids, and its consumer groups track delivery, not our
statuses, so we would keep the same hashes and indexes beside it anyway. So:
one hash per event, a sorted set per session of pending ids (score: seq), one
of not-yet-consumed ids (score: accepted_at, for queue depths and recovery),
global and per-session logs (score: seq), and a list per session for the
trajectory. Keys live under a prefix so tests, or several daemons, can share
one Redis server.

Several daemons on one prefix: with ``fleet`` (``[store] fleet = true``) open
events also have an entry in a Redis Stream that the daemons read with a
consumer group, each session has one owner by lease, and trajectory writes
carry the owner's fencing token (:mod:`~wakeful.store.fleet.sessions`).
Without it one daemon owns a prefix: with ``lease=True`` (the daemon) a second
one on the same prefix refuses to start (:mod:`~wakeful.store.fleet.prefix_lease`).

Known gaps:

- One Redis server, not Redis Cluster: the scripts build their keys from the
  prefix rather than declaring them (docs/operations.md says why).
- Durability is Redis's: a 202 survives a Redis restart only with
  ``appendonly yes`` (``appendfsync always`` for SQLite's synchronous=FULL
  guarantee). :mod:`~wakeful.store.redis_setup` warns at open.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from redis.asyncio import BlockingConnectionPool, Redis
from redis.backoff import NoBackoff
from redis.commands.core import AsyncScript
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.retry import Retry

from wakeful.kernel.events import Event
from wakeful.store import redis_scripts as lua
from wakeful.store.base import (
    AppendResult,
    ConsumeConflict,
    Cursor,
    EventLogPage,
    EventStatus,
    Message,
    ModelCallRecord,
    QueueDepth,
    SessionLeaseLost,
    StoreCorrupt,
    StoredEvent,
    StoreUnavailable,
)
from wakeful.store.call_token import new_token
from wakeful.store.fleet import session_scripts as fleet_lua
from wakeful.store.fleet.prefix_lease import PrefixLease
from wakeful.store.fleet.sessions import FleetOptions, RedisFleet
from wakeful.store.group_commit import GroupCommit
from wakeful.store.health import StoreHealth
from wakeful.store.redis_connect import redis_client
from wakeful.store.redis_setup import redacted_url, warn_if_not_durable
from wakeful.store.state.port import StatePort

if TYPE_CHECKING:
    from wakeful.store.fleet.port import Coordination
    from wakeful.store.outbox.port import OutgoingMessages
    from wakeful.store.timers.port import TimerJobStore

T = TypeVar("T")

DEFAULT_PREFIX = "wakeful:"
MAX_CONNECTIONS = 32
MAX_BATCH = 256  # appends per script call: bounds how long one call holds Redis
FIELD_COUNT = len(lua.EVENT_FIELDS)


def _optional(value: str | None) -> str:
    return "-" if value is None else "+" + value


def _stored_list(flat: Sequence[Any]) -> list[StoredEvent]:
    return [
        StoredEvent.from_row(flat[i : i + FIELD_COUNT]) for i in range(0, len(flat), FIELD_COUNT)
    ]


@dataclass
class _Append:
    """One queued ``append``, sent with whatever else is queued at the time."""

    event: Event
    status: EventStatus
    strategy: str | None
    reason: str | None
    accepted_at: float
    token: str  # marks our own write if a retry meets it
    cursor: Cursor | None = None

    def args(self) -> list[str]:
        event, cursor = self.event, self.cursor
        return [event.id, event.session, event.kind, event.to_json(), self.status.value,
                _optional(self.strategy), _optional(self.reason), repr(self.accepted_at),
                self.token, _optional(cursor.key if cursor else None),
                cursor.value if cursor else ""]  # fmt: skip

    def settle(self, reply: list[Any]) -> AppendResult:
        if reply[0] == 1:
            seq = int(reply[1])
            stored = StoredEvent(seq, self.event, self.status, self.strategy, self.reason,
                                 None, self.accepted_at)  # fmt: skip
            return AppendResult(stored, True)
        return AppendResult(StoredEvent.from_row(reply[2:]), created=reply[1] == self.token)


class RedisStore:
    """The Store protocol on one Redis server, under one key prefix."""

    def __init__(
        self,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        timeout_s: float = 10.0,
        lease: bool = False,
        fleet: FleetOptions | None = None,
        sqlite_file: Path | None = None,
    ) -> None:
        self.where = redacted_url(url)
        self.prefix = prefix
        # Where this daemon kept timers before they followed the Redis backend: what is
        # found there is moved in once, at the first ``timer_jobs`` (None: nothing to move).
        self.sqlite_file = sqlite_file
        self.health = StoreHealth(f"Redis at {self.where}, prefix {prefix!r}")
        self._take_lease = lease and fleet is None
        self._fleet_options = fleet
        self.fleet: RedisFleet | None = None  # set at open with ``fleet``
        self._lease: PrefixLease | None = None
        self._url = url
        self._timeout_s = timeout_s
        self._client: Redis | None = None
        self._scripts: dict[str, AsyncScript] = {}
        self._appends: GroupCommit[_Append, AppendResult] = GroupCommit(
            self._append_batch, max_batch=MAX_BATCH
        )

    async def open(self) -> RedisStore:
        client = self._connect()
        try:
            await client.ping()
        except RedisError as exc:
            await client.aclose()
            raise StoreUnavailable(
                f"cannot reach Redis at {self.where}: {str(exc).rstrip('.')}; start it or set"
                ' [store] backend = "sqlite"'
            ) from None
        try:
            await warn_if_not_durable(client, self.where)
            for name, text in {**lua.SCRIPTS, **fleet_lua.SCRIPTS}.items():
                script = client.register_script(text)
                await client.script_load(text)
                self._scripts[name] = script
            await self._check_types(client)
            await self._check_sharing(client)
            if self._take_lease:
                self._lease = PrefixLease(client, self._url, self.prefix, self.where)
                await self._lease.acquire()
        except RedisError as exc:
            await client.aclose()
            raise StoreUnavailable(
                f"Redis at {self.where} refused the store's setup: {exc}"
            ) from None
        except BaseException:
            await client.aclose()
            raise
        self._client = client
        return self

    async def _check_types(self, client: Redis) -> None:
        """The Redis side of SQLite's quick_check: every key we use has our type."""
        bad = await self._scripts["CHECK_TYPES"](args=[self.prefix], client=client)
        if bad:
            raise StoreCorrupt(
                f"Redis at {self.where} holds keys under prefix {self.prefix!r} that the"
                f" store did not write ({bad}); give wakeful its own [store] redis_prefix,"
                " or delete those keys if they are left over"
            )

    async def _check_sharing(self, client: Redis) -> None:
        """A fleet's prefix and a single daemon's are not to be mixed: each would miss
        what the other does (the fleet's streams, the single daemon's lease)."""
        if self._fleet_options is not None:
            self.fleet = RedisFleet(self.prefix, self._fleet_options, self._fleet_script)
            if not await self._scripts["FLEET_ENABLE"](args=[self.prefix], client=client):
                raise StoreUnavailable(
                    f"a single wakeful daemon holds Redis at {self.where} prefix"
                    f" {self.prefix!r} (lease key {self.prefix}lease): stop it, or set"
                    " [store] fleet = true on every daemon of this prefix"
                )
        elif self._take_lease and await client.exists(f"{self.prefix}fleet:on"):
            raise StoreUnavailable(
                f"daemons of a fleet share Redis at {self.where} prefix {self.prefix!r}:"
                " set [store] fleet = true to join them, or give this daemon another"
                " [store] redis_prefix"
            )

    async def _fleet_script(self, name: str, args: Sequence[str | int]) -> Any:
        # Fleet steps are safe to repeat: routing an entry twice routes it the same way.
        return await self._script(name, args, retry=True)

    def _connect(self) -> Redis:
        try:
            # Blocking: a burst of requests waits for one of the connections, not an error.
            pool = BlockingConnectionPool.from_url(
                self._url,
                max_connections=MAX_CONNECTIONS,
                timeout=self._timeout_s,
                decode_responses=True,
                socket_timeout=self._timeout_s,
                socket_connect_timeout=self._timeout_s,
                retry=Retry(NoBackoff(), 0),  # retries are ours: only where repeating is safe
                client_name="wakeful",
            )
            return Redis.from_pool(pool)
        except ValueError as exc:
            raise StoreUnavailable(f"[store] redis_url {self.where} is not usable: {exc}") from None

    # -- the rest of the durable state (StateBackends) -------------------------

    async def outbox_messages(self) -> OutgoingMessages:
        """The outbox under this prefix, on this store's connection."""
        from wakeful.store.outbox.redis import RedisOutbox  # only when asked for

        return await RedisOutbox(self).open()

    @asynccontextmanager
    async def timer_jobs(self) -> AsyncIterator[TimerJobStore]:
        """The jobs every daemon on the prefix shares, on a client of their own (its
        pub/sub read blocks), after moving in what ``sqlite_file`` still holds."""
        from wakeful.store.timers.redis import RedisJobStore  # APScheduler: only when used
        from wakeful.store.timers.redis_import import import_sqlite_timers

        client = redis_client(self._url, "timers")
        try:
            if self.sqlite_file is not None:
                await import_sqlite_timers(self.sqlite_file, client, self.prefix)
            jobs = RedisJobStore(client, self.prefix)
            await jobs.open()
            yield jobs
        finally:
            await client.aclose()

    @asynccontextmanager
    async def coordination(self, name: str) -> AsyncIterator[Coordination | None]:
        """Leases, notices and rosters under the prefix, on a client named for ``name``
        (a lease wait or a pub/sub read never waits behind the event store's writes)."""
        from wakeful.store.fleet.coordination import RedisCoordination

        client = redis_client(self._url, name)
        try:
            yield RedisCoordination(client, self.prefix)
        finally:
            await client.aclose()

    def reader(self) -> Redis:
        """A client of its own for a blocking read (XREADGROUP BLOCK), closed by the caller."""
        return Redis.from_url(
            self._url, decode_responses=True, socket_connect_timeout=self._timeout_s,
            client_name="wakeful-fleet-reader",
        )  # fmt: skip

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            with anyio.CancelScope(shield=True):
                if self._lease is not None:
                    await self._lease.release()
                await client.aclose()

    async def _run(self, call: Callable[[Redis], Awaitable[T]], *, retry: bool) -> T:
        """One call, shielded like the SQLite store's thread call: a command sent
        is seen through, so the caller never wonders whether it happened.
        ``retry``: the call is safe to repeat, so a dropped pooled connection
        (say, Redis restarted) costs one reconnect instead of a 503."""
        with anyio.CancelScope(shield=True):
            for attempt in (1, 2):
                client = self._client
                if client is None:
                    raise StoreUnavailable("the event store is closed (the daemon is stopping)")
                try:
                    return await call(client)
                except RedisConnectionError as exc:
                    if retry and attempt == 1:
                        continue
                    raise self._unavailable(exc) from exc
                except RedisError as exc:
                    raise self._unavailable(exc) from exc
        raise AssertionError("unreachable")

    def _unavailable(self, exc: RedisError) -> StoreUnavailable:
        self.health.failed(str(exc))
        return StoreUnavailable(f"the event store (Redis at {self.where}) cannot answer: {exc}")

    async def _script(self, name: str, args: Sequence[str | int], *, retry: bool) -> Any:
        script = self._scripts.get(name)
        if script is None:
            raise StoreUnavailable("the event store is closed (the daemon is stopping)")
        return await self._run(lambda c: script(args=[self.prefix, *args], client=c), retry=retry)

    def state(self) -> StatePort:
        from wakeful.store.state.redis_state import RedisState

        return RedisState(self)

    async def probe_write(self) -> None:
        key = f"{self.prefix}write-probe"
        await self._run(lambda c: c.set(key, "1", px=1000), retry=True)
        self.health.wrote()

    # -- events ---------------------------------------------------------------

    async def append(
        self,
        event: Event,
        status: EventStatus = EventStatus.PENDING,
        strategy: str | None = None,
        reason: str | None = None,
        cursor: Cursor | None = None,
    ) -> AppendResult:
        request = _Append(event, status, strategy, reason, time.time(), new_token(), cursor)
        # Appends arriving while a script call is in flight go together in the next one
        # (one round trip, one AOF write); each returns after its own batch is stored.
        return await self._appends.submit(request)

    async def _append_batch(self, batch: list[_Append]) -> list[AppendResult]:
        args = [arg for request in batch for arg in request.args()]
        replies = await self._script("APPEND", args, retry=True)
        return [request.settle(reply) for request, reply in zip(batch, replies, strict=True)]

    # -- channel state ----------------------------------------------------------

    async def get_state(self, key: str) -> str | None:
        value = await self._run(lambda c: c.hget(f"{self.prefix}state", key), retry=True)
        return None if value is None else _text(value)

    async def put_state(self, key: str, value: str | None) -> None:
        name = f"{self.prefix}state"
        if value is None:
            await self._run(lambda c: c.hdel(name, key), retry=True)
        else:
            await self._run(lambda c: c.hset(name, key, value), retry=True)

    async def put_state_if(self, key: str, expected: str | None, value: str | None) -> bool:
        # A flag stands for None (a Lua argument cannot be nil). Not retried on a dropped
        # connection: a write that landed would then read as lost to another writer.
        absent, delete = ("1" if v is None else "0" for v in (expected, value))
        args = [key, absent, expected or "", delete, value or ""]
        return bool(await self._script("PUT_STATE_IF", args, retry=False))

    async def states_under(self, prefix: str) -> dict[str, str]:
        name, pattern = f"{self.prefix}state", _glob_escape(prefix) + "*"

        async def scan(client: Redis) -> dict[str, str]:
            return {_text(k): _text(v) async for k, v in client.hscan_iter(name, match=pattern)}

        return await self._run(scan, retry=True)

    async def set_route(
        self, event_id: str, status: EventStatus, strategy: str, reason: str
    ) -> None:
        await self._script("SET_ROUTE", [event_id, status.value, strategy, reason], retry=True)

    async def set_parallel_answer(self, event_id: str, answer: str) -> None:
        await self._script("SET_PARALLEL_ANSWER", [event_id, answer], retry=True)

    async def pending(self, session: str) -> list[StoredEvent]:
        return _stored_list(await self._script("PENDING", [session], retry=True))

    async def consume(
        self,
        session: str,
        event_ids: list[str],
        messages: list[Message],
        meta: dict[str, Any] | None = None,
        fencing: int | None = None,
    ) -> None:
        token = new_token()  # lets a retry recognise its own finished consume
        args: list[str | int] = [session, repr(time.time()), token, len(event_ids), *event_ids,
                                 json.dumps(meta) if meta else "",
                                 self._fencing(session, fencing), *_encode(messages)]  # fmt: skip
        state, found = await self._script("CONSUME", args, retry=bool(event_ids))
        if state == 3:
            raise self._lease_lost(session, found)
        if state == 0:
            raise ConsumeConflict(
                f"{len(event_ids) - found} of {len(event_ids)} events"
                f" in session {session!r} were no longer pending"
            )

    async def append_messages(
        self,
        session: str,
        messages: list[Message],
        meta: dict[str, Any] | None = None,
        fencing: int | None = None,
    ) -> None:
        args = [session, repr(time.time()), json.dumps(meta) if meta else "",
                self._fencing(session, fencing), *_encode(messages)]  # fmt: skip
        state, current = await self._script("APPEND_MESSAGES", args, retry=False)
        if state == 3:
            raise self._lease_lost(session, current)

    def _fencing(self, session: str, fencing: int | None) -> str:
        """The token the write carries: the caller's, else the one this daemon holds."""
        if fencing is not None:
            return str(fencing)
        return self.fleet.token_for(session) if self.fleet is not None else ""

    def _lease_lost(self, session: str, current: Any) -> SessionLeaseLost:
        if self.fleet is not None:
            self.fleet.let_go(session)
        return SessionLeaseLost(
            f"session {session!r} is owned by another daemon now (fencing token {current}):"
            " this daemon's write was refused and it lets the session go"
        )

    async def trajectory(self, session: str) -> list[Message]:
        key = f"{self.prefix}msgs:{session}"
        rows = await self._run(lambda c: c.lrange(key, 0, -1), retry=True)
        return [json.loads(row) for row in rows]

    async def sessions(self) -> list[str]:
        key = f"{self.prefix}sessions"
        members = await self._run(lambda c: c.smembers(key), retry=True)
        return sorted(_text(member) for member in members)

    async def recover(self) -> int:
        return int(await self._script("RECOVER", [], retry=True))

    async def event_log(
        self, session: str | None, after_seq: int = 0, limit: int = 200
    ) -> list[StoredEvent]:
        if limit == 0:
            return []
        key = "log" if session is None else f"log:{session}"
        flat = await self._script("EVENT_LOG", [key, after_seq, max(limit, -1)], retry=True)
        return _stored_list(flat)

    async def event_log_newest(
        self, session: str | None, before_seq: int = 0, limit: int = 50
    ) -> EventLogPage:
        key = "log" if session is None else f"log:{session}"
        older, *flat = await self._script("EVENT_LOG_NEWEST", [key, before_seq, limit], retry=True)
        return EventLogPage(list(reversed(_stored_list(flat))), int(older))

    async def queue_depths(self) -> list[QueueDepth]:
        flat = await self._script("QUEUE_DEPTHS", [], retry=True)
        depths = [
            QueueDepth(flat[i], int(flat[i + 1]), float(flat[i + 2]))
            for i in range(0, len(flat), 3)
        ]
        return sorted(depths, key=lambda d: d.session)

    # -- crash counting and quarantine ---------------------------------------

    async def note_attempt(self, event_ids: list[str], delta: int = 1) -> dict[str, int]:
        if not event_ids:
            return {}
        session, token = await self._fence_of(event_ids[0])
        args: list[str | int] = [delta, session, token, *event_ids]
        state, *counts = await self._script("NOTE_ATTEMPT", args, retry=False)
        if state == 3:
            raise self._lease_lost(session, counts[0])
        return {event_id: int(n) for event_id, n in zip(event_ids, counts, strict=True)}

    async def quarantine(self, event_ids: list[str], failure: str) -> list[str]:
        if not event_ids:
            return []
        session, token = await self._fence_of(event_ids[0])
        args = [failure, session, token, *event_ids]
        state, *moved = await self._script("QUARANTINE", args, retry=True)
        if state == 3:
            raise self._lease_lost(session, moved[0])
        return list(moved)

    async def _fence_of(self, event_id: str) -> tuple[str, str]:
        """The session of a batch's events (a session loop's batch is one session's; an
        event's session never changes, so it is read before the script) and the token
        this daemon holds for it; ("", "") outside a fleet, where nothing is fenced."""
        if self.fleet is None:
            return "", ""
        key = f"{self.prefix}ev:{event_id}"
        session = await self._run(lambda c: c.hget(key, "session"), retry=True)
        name = "" if session is None else _text(session)
        return name, self.fleet.token_for(name)

    async def retry(self, event_id: str) -> StoredEvent | None:
        fields = await self._script("RETRY", [event_id], retry=True)
        return StoredEvent.from_row(fields) if fields else None

    async def quarantined(self) -> list[StoredEvent]:
        return _stored_list(await self._script("QUARANTINED", [], retry=True))

    # -- model calls ----------------------------------------------------------

    async def record_model_call(self, record: ModelCallRecord) -> None:
        key = f"{self.prefix}calls:{record.session}"
        stamped = dataclasses.replace(record, created_at=record.created_at or time.time())
        row = json.dumps(dataclasses.asdict(stamped))
        await self._run(lambda c: c.rpush(key, row), retry=False)

    async def model_calls(self, session: str, limit: int = 100) -> list[ModelCallRecord]:
        if limit == 0:
            return []
        key, start = f"{self.prefix}calls:{session}", -limit if limit > 0 else 0
        rows = await self._run(lambda c: c.lrange(key, start, -1), retry=True)
        return [ModelCallRecord(**json.loads(row)) for row in rows]


def _glob_escape(text: str) -> str:
    return "".join("\\" + ch if ch in "*?[]\\" else ch for ch in text)


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value  # decode_responses: always str


def _encode(messages: list[Message]) -> list[str]:
    return [json.dumps(m, ensure_ascii=False) for m in messages]
