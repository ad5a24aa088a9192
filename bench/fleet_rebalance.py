"""A fleet evening out: one daemon owns every session, two more join.

Store level (three RedisStores on one prefix of the real Redis stand for three daemons,
each heartbeat run as the fleet member runs it, every session idle): how many heartbeat
rounds until the sessions are spread (each daemon within its fair share), how many
sessions moved in all and how many moved again in the rounds after (a bounce), for
``--sessions`` sessions and ten times as many. Next to it, in the same run, what the
check costs a heartbeat: the heartbeat's Redis steps without it (renew, adopt, as
before) and with it (SHARE; GIVE_UP only when a session goes), p50/p99 per heartbeat.
"""

from __future__ import annotations

import time
import uuid

import anyio

from bench.common import LATENCY_HEADER, iterations_parser, ms_row, print_table, quiet_daemon_logs
from tests.redis_server import REDIS_URL, delete_prefix
from wakeful.kernel.events import user_message
from wakeful.store.fleet.sessions import FleetOptions, RedisFleet
from wakeful.store.redis_store import RedisStore

OPTIONS = FleetOptions()  # the defaults: 10 s leases, so nothing lapses during a run
AFTER_ROUNDS = 10  # rounds watched once even: a session moving then bounced


def fleet_of(store: RedisStore) -> RedisFleet:
    assert store.fleet is not None
    return store.fleet


async def heartbeat(fleet: RedisFleet, *, rebalance: bool) -> int:
    """The member's heartbeat steps on Redis; 1 if it gave a session up."""
    await fleet.renew()
    await fleet.adopt()
    if rebalance and await fleet.over_share():
        await fleet.give_up(min(fleet.tokens))
        return 1
    return 0


def even(fleets: list[RedisFleet], sessions: int) -> bool:
    fair = -(-sessions // len(fleets))
    owned = [len(f.tokens) for f in fleets]
    return sum(owned) == sessions and max(owned) <= fair and max(owned) - min(owned) <= 1


async def spread(sessions: int, samples: int) -> tuple[list[str], list[float], list[float]]:
    prefix = f"bench-rebalance-{uuid.uuid4().hex[:8]}:"
    stores = [await RedisStore(REDIS_URL, prefix=prefix, fleet=OPTIONS).open() for _ in range(3)]
    fleets = [fleet_of(s) for s in stores]
    try:
        first = stores[0]
        await fleets[0].join()
        for i in range(sessions):
            await first.append(user_message("hi", session=f"s{i}", event_id=f"e{i}"))
        client = first.reader()
        while len(fleets[0].tokens) < sessions:
            await fleets[0].read(client, block_ms=100)
        await client.aclose()
        for i in range(sessions):
            await first.consume(f"s{i}", [f"e{i}"], [{"role": "user", "content": "hi"}])
        # The first daemon alone: the heartbeat as before, and with the check (nothing moves).
        without, with_check = [], []
        for _ in range(samples):
            started = time.perf_counter()
            await heartbeat(fleets[0], rebalance=False)
            without.append(time.perf_counter() - started)
            started = time.perf_counter()
            await heartbeat(fleets[0], rebalance=True)
            with_check.append(time.perf_counter() - started)
        for fleet in fleets[1:]:
            await fleet.join()
        rounds = moved = 0
        while not even(fleets, sessions):
            rounds += 1
            for fleet in fleets:
                moved += await heartbeat(fleet, rebalance=True)
            if rounds > 10 * sessions:
                raise RuntimeError(f"not even after {rounds} rounds")
        settled = [set(f.tokens) for f in fleets]
        again = 0
        for _ in range(AFTER_ROUNDS):
            for fleet in fleets:
                again += await heartbeat(fleet, rebalance=True)
        assert [set(f.tokens) for f in fleets] == settled
        owned = "/".join(str(len(f.tokens)) for f in fleets)
        row = [f"{sessions} sessions, 1 -> 3 daemons", str(rounds), str(moved), owned, str(again)]
        return row, without, with_check
    finally:
        for store in stores:
            await store.aclose()
        delete_prefix(prefix)


async def main(sessions: int, samples: int) -> None:
    rows, costs = [], []
    for count in (sessions, sessions * 10):
        row, without, with_check = await spread(count, samples)
        rows.append(row)
        costs.append(ms_row(f"{count} sessions: renew + adopt (before)", without))
        costs.append(ms_row(f"{count} sessions: renew + adopt + share check", with_check))
    print_table(["spread", "rounds", "moved", "owned", "moved after"], rows)
    print()
    print_table(LATENCY_HEADER, costs)


if __name__ == "__main__":
    parser = iterations_parser(__doc__ or "", default_n=50)  # heartbeats timed per row
    parser.add_argument("--sessions", type=int, default=12, help="sessions in the small run")
    args = parser.parse_args()
    quiet_daemon_logs()
    anyio.run(main, args.sessions, args.n)
