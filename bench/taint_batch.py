"""Tainting a session with a flood's batch: one write for the batch, next to the
per-event loop it replaced (one fsync'd commit per event), in the same run.

Each round marks a fresh session with ``--n`` untrusted webhook events on a real
SQLite store at the daemon's default ``synchronous = full``: once through
``SessionTaints.mark`` per event (the old ``mark_events``, the baseline) and once
through ``mark_events`` (one write). Issue 21 finding 8: 1,759 events cost ~3 s.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import anyio

from bench.common import iterations_parser, print_table
from tests.test_session_taint_batch import webhook
from wakeful.app.config import StoreSection
from wakeful.core.session_taint import SessionTaints
from wakeful.core.taint import TaintSource, now_iso
from wakeful.store.factory import open_store

ROUNDS = 3


async def main(n: int) -> None:
    batch = [webhook(i) for i in range(n)]
    per_event: list[float] = []
    batched: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        store = await open_store(StoreSection(), Path(tmp))
        try:
            taints = SessionTaints(store)
            for round_ in range(ROUNDS):
                started = time.perf_counter()
                for event in batch:
                    source = TaintSource(what="webhook", ref=event.id, at=now_iso())
                    await taints.mark(f"loop-{round_}", source)
                per_event.append(time.perf_counter() - started)
                started = time.perf_counter()
                await taints.mark_events(f"batch-{round_}", batch)
                batched.append(time.perf_counter() - started)
        finally:
            await store.aclose()
    rows = [
        ["per-event loop (baseline)", str(n), *(f"{s * 1000:.1f}" for s in per_event)],
        ["mark_events, one write", str(n), *(f"{s * 1000:.1f}" for s in batched)],
    ]
    print_table(["measure", "events", *(f"round {r + 1} ms" for r in range(ROUNDS))], rows)


if __name__ == "__main__":
    args = iterations_parser(__doc__ or "", 2000).parse_args()
    anyio.run(main, args.n)
