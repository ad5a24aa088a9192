"""Group commit: concurrent appends share transactions but keep append's contract."""

from __future__ import annotations

import sqlite3
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wakeful.kernel.events import user_message
from wakeful.store.base import AppendResult, Cursor, EventStatus, StoreUnavailable
from wakeful.store.group_commit import GroupCommit
from wakeful.store.sqlite import SqliteStore, _Append


def committed_ids(path: Path) -> list[str]:
    """Event ids as another connection sees them: only what was committed."""
    with sqlite3.connect(path) as conn:
        return [row[0] for row in conn.execute("SELECT id FROM events ORDER BY seq")]


@pytest.mark.anyio
async def test_concurrent_appends_are_committed_deduplicated_and_batched(tmp_path: Path) -> None:
    """200 concurrent appends (each id twice) store 100 events, each committed on return."""
    path = tmp_path / "events.sqlite"
    store = SqliteStore(path)
    results: dict[str, list[AppendResult]] = {}
    transactions = 0
    original = store._insert_batch

    def counting(requests):  # type: ignore[no-untyped-def]
        nonlocal transactions  # one transaction per batch, in the connection's thread
        transactions += 1
        return original(requests)

    store._insert_batch = counting  # type: ignore[method-assign]
    await store.open()

    async def append(i: int) -> None:
        event = user_message(f"m{i}", event_id=f"e{i % 100}")
        result = await store.append(event)
        # Returned only after commit: a separate connection already sees it.
        assert event.id in committed_ids(path)
        results.setdefault(event.id, []).append(result)

    try:
        async with anyio.create_task_group() as group:
            for i in range(200):
                group.start_soon(append, i)
    finally:
        await store.aclose()
    assert len(committed_ids(path)) == 100
    assert all(sorted(r.created for r in pair) == [False, True] for pair in results.values())
    assert all(len({r.stored.seq for r in pair}) == 1 for pair in results.values())
    assert transactions < 100  # appends that arrived together shared a commit


@pytest.mark.anyio
async def test_appends_to_a_closed_store_fail_as_unavailable(tmp_path: Path) -> None:
    """Every queued append gets StoreUnavailable when the store is closed, none hangs."""
    store = await SqliteStore(tmp_path / "events.sqlite").open()
    await store.aclose()
    failures: list[Exception] = []

    async def append(i: int) -> None:
        try:
            await store.append(user_message("x", event_id=f"c{i}"))
        except StoreUnavailable as exc:
            failures.append(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            for i in range(20):
                group.start_soon(append, i)
    assert len(failures) == 20


@pytest.mark.anyio
async def test_cancelled_callers_neither_lose_their_append_nor_stall_the_next(
    tmp_path: Path,
) -> None:
    """Callers cancelled while their batch waits: their events are still committed, and
    the batch's commit is not lost with them, so later appends complete."""
    path = tmp_path / "events.sqlite"
    store = await SqliteStore(path).open()
    try:
        async with anyio.create_task_group() as group:
            for i in range(50):
                group.start_soon(store.append, user_message("x", event_id=f"gone{i}"))
            # One turn of the loop: the first append is committing, the rest wait their turn.
            await anyio.lowlevel.checkpoint()
            group.cancel_scope.cancel()
        with anyio.fail_after(5):
            after = await store.append(user_message("y", event_id="after"))
    finally:
        await store.aclose()
    assert after.created
    assert sorted(committed_ids(path)) == sorted([*(f"gone{i}" for i in range(50)), "after"])


@pytest.mark.anyio
async def test_batches_respect_max_batch_and_share_a_failure() -> None:
    """While one commit runs, 25 queued items go in batches of at most 10, in order;
    a batch whose commit fails fails every item in it and no other."""
    committed: list[list[int]] = []
    release = anyio.Event()

    async def commit(items: list[int]) -> list[str]:
        committed.append(items)
        if items == [0]:
            await release.wait()  # hold the first commit while the rest queue up
        if 13 in items:
            raise StoreUnavailable("disk full")
        return [f"ok{i}" for i in items]

    group_commit: GroupCommit[int, str] = GroupCommit(commit, max_batch=10)
    outcomes: dict[int, str] = {}

    async def submit(i: int) -> None:
        try:
            outcomes[i] = await group_commit.submit(i)
        except StoreUnavailable as exc:
            outcomes[i] = str(exc)

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            for i in range(26):
                group.start_soon(submit, i)
            await anyio.lowlevel.checkpoint()
            release.set()
    assert committed == [[0], list(range(1, 11)), list(range(11, 21)), list(range(21, 26))]
    assert all(outcomes[i] == "disk full" for i in range(11, 21))
    assert all(outcomes[i] == f"ok{i}" for i in [*range(11), *range(21, 26)])


# Ids from a small alphabet, so batches repeat ids within themselves and across batches;
# some appends carry a channel cursor (written with their event, one by one).
_batches = st.lists(
    st.lists(st.tuples(st.sampled_from("abcdefgh"), st.booleans()), min_size=1, max_size=12),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(batches=_batches)
def test_a_group_answers_as_appends_one_by_one(tmp_path_factory: Any, batches: Any) -> None:
    """However a group mixes new ids, repeats and cursors, each append gets what it would
    alone: created with a seq above every earlier one for a new id, else the stored
    event of the first."""
    path = tmp_path_factory.mktemp("group") / "events.sqlite"

    async def check() -> None:
        store = await SqliteStore(path).open()
        seen: dict[str, int] = {}
        try:
            for n, batch in enumerate(batches):
                requests = [
                    _Append(
                        user_message(f"{key} {n}.{i}", event_id=key),
                        "",
                        EventStatus.PENDING,
                        None,
                        None,
                        float(n),
                        Cursor(f"cursor-{key}", str(n)) if with_cursor else None,
                    )
                    for i, (key, with_cursor) in enumerate(batch)
                ]
                for r in requests:
                    r.body = r.event.to_json()
                results = await store._connection()[1].call(partial(store._insert_batch, requests))
                for r, result in zip(requests, results, strict=True):
                    key = r.event.id
                    assert result.created is (key not in seen)
                    if result.created:  # seqs grow (a conflicting row may leave a gap)
                        assert result.stored.seq > max(seen.values(), default=0)
                        seen[key] = result.stored.seq
                        assert result.stored.event is r.event
                    assert result.stored.seq == seen[key]
                    assert result.stored.event.id == key
        finally:
            await store.aclose()
        with sqlite3.connect(path) as conn:
            stored = dict(conn.execute("SELECT id, seq FROM events"))
        assert stored == seen

    anyio.run(check)
