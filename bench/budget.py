"""What a budget adds to the call path: one reservation before a model call and its
settlement after, with the three token caps a typical [budget] names (daemon per day,
session per day, the event's source per day), on a real SQLite store (the daemon's
default ``synchronous = full``) and on the machine's Redis.

The baseline, in the same run on the same store: one durable write (``put_state``),
the floor of anything kept, and the same reserve + settle with no cap configured (what
a guarded loop does when every cap is 0).
"""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

import anyio

from bench.common import LATENCY_HEADER, iterations_parser, ms_row, print_table, timed
from tests.redis_server import REDIS_URL, delete_prefix
from wakeful.app.config import StoreSection
from wakeful.budget.config import BudgetSection
from wakeful.budget.guard import Budget
from wakeful.core.provider import Usage
from wakeful.core.spend import SpendRequest
from wakeful.store.base import ChannelState
from wakeful.store.factory import open_store
from wakeful.store.redis_store import RedisStore

CAPS = BudgetSection(
    daily_tokens=10**12, session_daily_tokens=10**12, source_daily_tokens={"webhook": 10**12}
)
REQUEST = SpendRequest("main", "webhook", "", 3000, 8192)
USAGE = Usage(prompt_tokens=3000, completion_tokens=40)


async def rows_for(name: str, state: ChannelState, n: int) -> list[list[str]]:
    guarded = Budget(CAPS, state, model="m", reply_limit=8192)
    uncapped = Budget(BudgetSection(), state, model="m", reply_limit=8192)

    async def cycle(budget: Budget) -> None:
        ticket = await budget.reserve(REQUEST)
        await budget.settle(ticket, USAGE)

    async def reserve_only() -> None:
        await guarded.settle(await guarded.reserve(REQUEST), USAGE, count=False)

    async def one_write() -> None:
        await state.put_state("bench:budget:floor", uuid.uuid4().hex)

    return [
        ms_row(f"{name}: one durable write (baseline)", await timed(n, one_write)),
        ms_row(
            f"{name}: reserve + settle, no cap (baseline)", await timed(n, lambda: cycle(uncapped))
        ),
        ms_row(f"{name}: reserve + settle, 3 caps", await timed(n, lambda: cycle(guarded))),
        ms_row(f"{name}: reserve + release, 3 caps", await timed(n, reserve_only)),
    ]


async def main(n: int) -> None:
    rows: list[list[str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = await open_store(StoreSection(), Path(tmp))
        try:
            rows += await rows_for("SQLite", store, n)
        finally:
            await store.aclose()
    prefix = f"wakeful-bench:{uuid.uuid4().hex}:"
    redis = await RedisStore(REDIS_URL, prefix=prefix).open()
    try:
        rows += await rows_for("Redis", redis, n)
    finally:
        await redis.aclose()
        delete_prefix(prefix)
    print_table(LATENCY_HEADER, rows)
    print("A model call takes 300 ms to minutes; the reservation is paid once per call.")


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", 300).parse_args()
    anyio.run(main, args.n)
