"""The SQLite connection's thread: jobs in queue order, appends grouped, failures per batch."""

from __future__ import annotations

import threading

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wakeful.store.connection_thread import ConnectionThread


class Recorder:
    """A commit function that records what ran in which thread, batch by batch."""

    def __init__(self, fail_on: int | None = None) -> None:
        self.log: list[tuple[str, list[int]]] = []
        self.threads: set[int] = set()
        self.fail_on = fail_on

    def commit(self, items: list[int]) -> list[str]:
        self.threads.add(threading.get_ident())
        self.log.append(("batch", items))
        if self.fail_on in items:
            raise OSError("disk full")
        return [f"ok{i}" for i in items]

    def call(self, i: int) -> str:
        self.threads.add(threading.get_ident())
        self.log.append(("call", [i]))
        return f"called{i}"


@pytest.mark.anyio
@settings(max_examples=40, deadline=None)
@given(jobs=st.lists(st.booleans(), min_size=1, max_size=30))
async def test_jobs_run_in_queue_order_and_batches_never_span_a_call(jobs: list[bool]) -> None:
    """Appends (True) and calls (False) queued in one turn run in that order, in one
    thread that is not the loop's; consecutive appends share a batch."""
    recorder = Recorder()
    thread: ConnectionThread[int, str] = ConnectionThread("test", recorder.commit)
    results: dict[int, str] = {}

    async def job(i: int, append: bool) -> None:
        if append:
            results[i] = await thread.append(i)
        else:
            results[i] = await thread.call(lambda: recorder.call(i))

    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                for i, append in enumerate(jobs):
                    group.start_soon(job, i, append)
    finally:
        thread.stop()
    assert [i for _, items in recorder.log for i in items] == list(range(len(jobs)))
    for kind, items in recorder.log:
        assert all(jobs[i] == (kind == "batch") for i in items)
        assert kind == "batch" or len(items) == 1
    # Queued in one turn: appends between two calls form one batch, not several.
    runs = sum(1 for i, a in enumerate(jobs) if a and (i == 0 or not jobs[i - 1]))
    assert sum(1 for kind, _ in recorder.log if kind == "batch") == runs
    assert results == {i: f"ok{i}" if a else f"called{i}" for i, a in enumerate(jobs)}
    assert threading.get_ident() not in recorder.threads and len(recorder.threads) == 1


@pytest.mark.anyio
async def test_a_failing_batch_fails_its_items_only() -> None:
    recorder = Recorder(fail_on=3)
    thread: ConnectionThread[int, str] = ConnectionThread("test", recorder.commit)
    outcomes: dict[int, str] = {}

    async def append(i: int) -> None:
        try:
            outcomes[i] = await thread.append(i)
        except OSError as exc:
            outcomes[i] = str(exc)

    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as group:
                for i in range(5):
                    group.start_soon(append, i)
            after = await thread.append(10)
    finally:
        thread.stop()
    assert outcomes == {i: "disk full" for i in range(5)}  # queued in one turn: one batch
    assert after == "ok10"


@pytest.mark.anyio
async def test_a_cancelled_append_is_still_committed_and_a_call_still_waits() -> None:
    """A cancelled append's caller leaves, its item is committed; a cancelled call's
    caller waits for its job (as anyio.to_thread.run_sync does)."""
    release = threading.Event()
    recorder = Recorder()
    thread: ConnectionThread[int, str] = ConnectionThread("test", recorder.commit)
    cancelled_left = False
    appended: list[str] = []

    async def append_then_record() -> None:
        appended.append(await thread.append(1))

    async def release_later() -> None:
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        assert not cancelled_left  # the cancelled call is still waiting for its job
        release.set()

    try:
        with anyio.fail_after(5):
            async with anyio.create_task_group() as outer:
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as group:
                        group.start_soon(thread.call, release.wait)
                        group.start_soon(append_then_record)
                        await anyio.lowlevel.checkpoint()
                        outer.start_soon(release_later)
                        scope.cancel()
                cancelled_left = True
            assert await thread.append(2) == "ok2"
    finally:
        thread.stop()
    assert appended == []  # its caller left when cancelled, and its item was committed:
    assert [i for kind, items in recorder.log if kind == "batch" for i in items] == [1, 2]
