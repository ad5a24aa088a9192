"""A batch of untrusted events taints its session with one durable write, not one each
(a real SQLite store, synchronous = full: each write is an fsync'd commit)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import opened_store
from wakeful.core.session_taint import SessionTaints
from wakeful.core.taint import MAX_SOURCES
from wakeful.kernel.events import Event, user_message
from wakeful.store.base import Store

pytestmark = pytest.mark.anyio


class CountingState:
    """The store's ChannelState, counting the writes."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.writes = 0

    async def get_state(self, key: str) -> str | None:
        return await self.store.get_state(key)

    async def put_state(self, key: str, value: str | None) -> None:
        self.writes += 1
        await self.store.put_state(key, value)

    async def states_under(self, prefix: str) -> dict[str, str]:
        return await self.store.states_under(prefix)

    async def put_state_if(self, key: str, expected: str | None, value: str | None) -> bool:
        self.writes += 1
        return await self.store.put_state_if(key, expected, value)


def webhook(n: int) -> Event:
    return Event.parse(
        {
            "id": f"hook:{n}",
            "kind": "webhook.github",
            "source": {"type": "webhook", "principal": "github", "trusted": False},
            "channel": "webhook:github",
            "content": {"text": f"push {n}"},
            "session": "main",
        }
    )


async def test_a_batch_of_untrusted_events_is_one_taint_write(tmp_path: Path) -> None:
    """1,000 webhooks (and the owner's message among them) make one write; the record
    names the first source and the newest, and survives a fresh reader."""
    async with opened_store(tmp_path, synchronous="full") as store:
        state = CountingState(store)
        batch = [webhook(n) for n in range(1000)]
        batch.insert(500, user_message("owner's words"))
        taint = await SessionTaints(state).mark_events("main", batch)
        assert state.writes == 1
        assert taint is not None
        stored = await SessionTaints(store).get("main")
        assert stored == taint
        assert stored.sources[0].ref == "hook:0"
        assert stored.sources[0].what == "webhook.github from github via webhook:github"
        assert stored.sources[-1].ref == "hook:999"
        assert len(stored.sources) == MAX_SOURCES


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(sizes=st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=5))
async def test_batches_record_what_events_one_by_one_would(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int]
) -> None:
    """Whatever the batches, the record is the one marking each event alone gives, and
    a batch costs at most one write."""
    async with opened_store(tmp_path_factory.mktemp("taint"), synchronous="full") as store:
        batched, alone = CountingState(store), SessionTaints(store)
        taints = SessionTaints(batched)
        start = 0
        for size in sizes:
            batch = [webhook(n) for n in range(start, start + size)]
            start += size
            writes = batched.writes
            await taints.mark_events("batched", batch)
            assert batched.writes - writes <= 1
            for event in batch:
                await alone.mark_events("alone", [event])
        got, want = await taints.get("batched"), await alone.get("alone")
        refs = [s.ref for s in got.sources] if got else []
        assert refs == ([s.ref for s in want.sources] if want else [])


def test_the_bench_runs_as_documented() -> None:
    """bench/README.md's command (with a small --n), as written there."""
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run(
        [".venv/bin/python", "-m", "bench.taint_batch", "--n", "20"],
        cwd=root, capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(root)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "mark_events, one write" in done.stdout
