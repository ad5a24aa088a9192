"""The outgoing-message port's cost: model end → reply reaching a stream subscriber.

Measured in-process, from just before the session loop would hand a finished
reply on (``Outbox.send``: stored, claimed ``sending`` — both committed — handed
to the local chat channel, marked ``sent``) to the moment a subscriber of the
session's feed (what each SSE response reads) receives the item.

Baseline in the same run: the old path, one direct ``Feed.publish`` of the same
item to the same subscriber. The difference of the p99s is what the port adds
(target: ≤ 1 ms). SQLite runs with the daemon's default ``synchronous=FULL``
on the same disk as ``--dir`` (default: a temporary directory); ``--redis``
also measures the Redis backend (127.0.0.1:6379, a throw-away key prefix).
"""

from __future__ import annotations

import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import redis
from anyio.streams.memory import MemoryObjectReceiveStream

from bench.common import LATENCY_HEADER, iterations_parser, ms_row, percentile, print_table
from wakeful.channels.chat_local.channel import LocalChat
from wakeful.core.feed import Feed, FeedItem
from wakeful.core.outbox.deliverer import Deliverer
from wakeful.core.outbox.factory import open_outbox
from wakeful.core.outbox.service import Outbox
from wakeful.store.base import Store
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore

REDIS_URL = "redis://127.0.0.1:6379/0"
Send = Callable[[int], Awaitable[None]]


async def measure(feed: Feed, send: Send, n: int) -> list[float]:
    """Seconds from calling ``send(i)`` to a subscriber task holding item ``i`` (stamped
    on arrival: what ``send`` does after the hand-over, e.g. marking it sent, is not
    counted)."""
    arrived: dict[int, float] = {}
    landed = anyio.Event()

    async def subscriber(stream: MemoryObjectReceiveStream[FeedItem]) -> None:
        nonlocal landed
        async for item in stream:
            arrived[int(str(item["text"]).removeprefix("reply "))] = time.perf_counter()
            landed.set()

    samples: list[float] = []
    async with feed.subscribe("bench") as stream, anyio.create_task_group() as group:
        group.start_soon(subscriber, stream)
        for i in range(n + 1):  # the first is an unmeasured warm-up
            started = time.perf_counter()
            await send(i)
            while i not in arrived:
                await landed.wait()
                landed = anyio.Event()
            if i:
                samples.append(arrived[i] - started)
        group.cancel_scope.cancel()
    return samples


async def one_write_floor(store: Store, n: int) -> list[float]:
    """Seconds for one durable write on the store's own connection: the least a
    durable record costs before it may be handed on (SQLite: a commit, fsync
    included; Redis: one round trip)."""
    if isinstance(store, SqliteStore):
        await store._run(lambda c: c.execute("CREATE TABLE IF NOT EXISTS bench_floor (x)"))

        async def write() -> None:
            await store._run(lambda c: c.execute("INSERT INTO bench_floor VALUES (1)"))
    else:
        assert isinstance(store, RedisStore)

        async def write() -> None:
            await store._run(lambda c: c.incr(f"{store.prefix}bench_floor"), retry=False)

    samples = []
    for _ in range(n):
        started = time.perf_counter()
        await write()
        samples.append(time.perf_counter() - started)
    return samples


async def port_series(store: Store, n: int) -> tuple[list[float], list[float], list[float]]:
    feed = Feed()
    messages = await open_outbox(store)
    outbox = Outbox(messages, Deliverer(messages, [LocalChat(feed)]))
    run = uuid.uuid4().hex

    async def direct(i: int) -> None:
        feed.publish("bench", {"type": "reply", "text": f"reply {i}", "final": True})

    async def through_port(i: int) -> None:
        await outbox.send("bench", f"reply {i}", key=f"bench:{run}:{i}")

    baseline = await measure(feed, direct, n)
    port = await measure(feed, through_port, n)
    return baseline, port, await one_write_floor(store, n)


async def main(n: int, directory: Path, with_redis: bool) -> None:
    rows, added = [], []
    stores: list[tuple[str, Callable[[], Awaitable[Store]]]] = [
        ("SQLite FULL", SqliteStore(directory / "wakeful.db").open)
    ]
    prefix = f"wakeful-bench:{uuid.uuid4().hex}:"
    if with_redis:
        stores.append(("Redis", RedisStore(REDIS_URL, prefix=prefix).open))
    for backend, opener in stores:
        store = await opener()
        try:
            baseline, port, floor = await port_series(store, n)
        finally:
            await store.aclose()
        rows += [
            ms_row(f"baseline: Feed.publish ({backend} run)", baseline),
            ms_row(f"floor: one durable write, {backend}", floor),
            ms_row(f"outbox → subscriber, {backend}", port),
        ]
        added.append((backend, percentile(port, 99) - percentile(baseline, 99)))
    if with_redis:
        delete_prefix(prefix)
    print_table(LATENCY_HEADER, rows)
    for backend, seconds in added:
        print(f"added by the port at p99 ({backend}): {seconds * 1000:.3f} ms (target ≤ 1 ms)")


def delete_prefix(prefix: str) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)
    client.close()


if __name__ == "__main__":
    parser = iterations_parser(__doc__.splitlines()[0], default_n=500)
    parser.add_argument("--dir", type=Path, default=None, help="where the SQLite file goes")
    parser.add_argument("--redis", action="store_true", help="also the Redis backend")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(main, args.n, args.dir or Path(tmp), args.redis)
