"""The state port's contract, run against both backends: SQLite and the machine's Redis.

The same operations give the same answers on each as on a plain dict; of writers
that compare-and-set from one value exactly one wins; a named lease has one
holder at a time across daemons (Redis), and is always this process's (SQLite).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import anyio
import pytest
import redis.asyncio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.redis_server import REDIS_URL
from wakeful.store.base import Store
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore
from wakeful.store.state.port import Records, StatePort

pytestmark = pytest.mark.anyio


async def open_stores(backend: str, tmp_path: Path, prefix: str) -> list[Store]:
    """Two stores on one backend, as two daemons of a fleet would have (SQLite: one
    store, twice: one process owns a data directory)."""
    if backend == "redis":
        return [await RedisStore(REDIS_URL, prefix=prefix).open() for _ in range(2)]
    store = await SqliteStore(tmp_path / "wakeful.db").open()
    return [store, store]


@pytest.fixture(params=["sqlite", "redis"])
async def two(
    request: pytest.FixtureRequest, tmp_path: Path, redis_prefix: str
) -> AsyncIterator[list[StatePort]]:
    stores = await open_stores(request.param, tmp_path, redis_prefix)
    try:
        yield [store.state() for store in stores]
    finally:
        for store in {id(s): s for s in stores}.values():
            await store.aclose()


@pytest.fixture
async def both(tmp_path: Path, redis_prefix: str) -> AsyncIterator[dict[str, StatePort]]:
    """One state per backend, for comparing them with each other and with a dict."""
    sqlite = await SqliteStore(tmp_path / "wakeful.db").open()
    redis_store = await RedisStore(REDIS_URL, prefix=redis_prefix).open()
    try:
        yield {"sqlite": sqlite.state(), "redis": redis_store.state()}
    finally:
        await sqlite.aclose()
        await redis_store.aclose()


def fresh(state: StatePort) -> Records:
    return state.records(f"test:{uuid.uuid4().hex}")


async def test_records_get_put_delete_and_namespaces(two: list[StatePort]) -> None:
    state = two[0]
    cursors, other = state.records("test:cursor"), state.records("test:other")
    assert await cursors.get("a") is None
    await cursors.put("a", "1\nzwölf")
    await cursors.put("a", "2")
    assert await cursors.get("a") == "2" and await other.get("a") is None
    assert await two[1].records("test:cursor").get("a") == "2"  # the other daemon sees it
    await cursors.put("a", None)
    await cursors.put("a", None)  # deleting what is gone is no error
    assert await cursors.get("a") is None
    with pytest.raises(ValueError, match="<owner>:<name>"):
        state.records("cursor")


async def test_compare_and_set_distinguishes_absent_from_empty(two: list[StatePort]) -> None:
    records = fresh(two[0])
    assert not await records.put_if("k", "", "x")  # absent is not ""
    assert await records.put_if("k", None, "")
    assert not await records.put_if("k", None, "y")  # "" is not absent
    assert await records.put_if("k", "", "z")
    assert not await records.put_if("k", "x", None)
    assert await records.put_if("k", "z", None)
    assert await records.get("k") is None


async def test_of_writers_from_one_value_exactly_one_wins(two: list[StatePort]) -> None:
    """Sixteen writers on two daemons, all expecting the same value: one wins."""
    namespace = f"test:{uuid.uuid4().hex}"
    records = [state.records(namespace) for state in two]
    await records[0].put("k", "start")
    won: list[str] = []

    async def write(n: int) -> None:
        if await records[n % 2].put_if("k", "start", f"writer {n}"):
            won.append(f"writer {n}")

    async with anyio.create_task_group() as group:
        for n in range(16):
            group.start_soon(write, n)
    assert len(won) == 1 and await records[1].get("k") == won[0]


async def test_compare_and_set_loops_lose_no_update(two: list[StatePort]) -> None:
    """Eight tasks on two daemons each add one, ten times, by read and compare-and-set."""
    namespace = f"test:{uuid.uuid4().hex}"
    records = [state.records(namespace) for state in two]

    async def add_ten(n: int) -> None:
        for _ in range(10):
            while True:
                raw = await records[n % 2].get("count")
                if await records[n % 2].put_if("count", raw, str(int(raw or 0) + 1)):
                    break

    async with anyio.create_task_group() as group:
        for n in range(8):
            group.start_soon(add_ten, n)
    assert await records[0].get("count") == "80"


KEYS = st.sampled_from(["a", "b", "", "ä\nb"])
VALUES = st.none() | st.sampled_from(["", "1", "2", "zwölf\n{}"])
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), KEYS, VALUES, st.none()),
        st.tuples(st.just("put_if"), KEYS, VALUES, VALUES),
        st.tuples(st.just("get"), KEYS, st.none(), st.none()),
    ),
    max_size=25,
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(OPS)
async def test_any_sequence_reads_as_on_a_dict(
    both: dict[str, StatePort], ops: list[tuple[str, str, str | None, str | None]]
) -> None:
    """put (None deletes), put_if and get, in any order: each backend answers every
    step as a dict does, and holds what the dict holds at the end."""
    model: dict[str, str] = {}
    records = {name: fresh(state) for name, state in both.items()}
    for op, key, value, expected in ops:
        if op == "put":
            want: object = None
            _set(model, key, value)
        elif op == "put_if":
            want = model.get(key) == expected
            if want:
                _set(model, key, value)
        else:
            want = model.get(key)
        for name, backend in records.items():
            if op == "put":
                await backend.put(key, value)
                got: object = None
            elif op == "put_if":
                got = await backend.put_if(key, expected, value)
            else:
                got = await backend.get(key)
            assert got == want, (name, op, key, value, expected)
    for name, backend in records.items():
        for key in ["a", "b", "", "ä\nb"]:
            assert await backend.get(key) == model.get(key), (name, key)


def _set(model: dict[str, str], key: str, value: str | None) -> None:
    if value is None:
        model.pop(key, None)
    else:
        model[key] = value


async def test_redis_lease_one_holder_at_a_time_then_takeover(redis_prefix: str) -> None:
    """Two daemons hold the same named lease (the store's coordination, as e-mail holds a
    mailbox's): one works, the other waits; when the first stops, the second takes over."""
    stores = await open_stores("redis", Path("/nonexistent"), redis_prefix)
    running: list[str] = []
    changed = anyio.Event()

    def work(name: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            running.append(name)
            changed.set()
            try:
                await anyio.sleep_forever()
            finally:
                running.remove(name)

        return run

    async def until(condition: Callable[[], bool]) -> None:
        nonlocal changed
        while not condition():
            await changed.wait()
            changed = anyio.Event()

    try:
        async with stores[0].coordination("a") as one, stores[1].coordination("b") as two:
            assert one is not None and two is not None  # Redis: daemons share the store
            first_lease = one.lease("test:job", holder="host-a:1:a", ttl_s=0.6)
            second_lease = two.lease("test:job", holder="host-b:2:b", ttl_s=0.6)
            with anyio.fail_after(10):
                async with anyio.create_task_group() as outer:
                    first = anyio.CancelScope()

                    async def hold_first() -> None:
                        with first:
                            await first_lease.hold(work("a"))

                    outer.start_soon(hold_first)
                    await until(lambda: running == ["a"])
                    assert not await second_lease.acquire()  # a holds it
                    outer.start_soon(second_lease.hold, work("b"))
                    assert running == ["a"]
                    first.cancel()  # a stops and releases: b takes over
                    await until(lambda: running == ["b"])
                    outer.cancel_scope.cancel()
    finally:
        for store in stores:
            await store.aclose()


async def test_old_hash_reads_what_an_older_version_wrote(
    both: dict[str, StatePort], redis_prefix: str
) -> None:
    client = redis.asyncio.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        await client.hset(f"{redis_prefix}test:old:1", mapping={"state": "sent", "n": "1"})
    finally:
        await client.aclose()
    assert await both["redis"].old_hash("test:old:1") == {"state": "sent", "n": "1"}
    assert await both["sqlite"].old_hash("test:old:1") == {}
    assert await both["redis"].old_hash("test:old:none") == {}
