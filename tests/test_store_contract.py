"""The Store contract, run against every backend: SQLite and Redis.

Backend-only tests live beside their backend: test_store_sqlite.py (crash
atomicity under SIGKILL), test_store_group_commit.py, test_store_redis.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import anyio
import pytest
import redis

from tests.redis_server import REDIS_URL
from wakeful.kernel.events import Event, user_message
from wakeful.store.base import (
    AppendResult,
    ConsumeConflict,
    Cursor,
    EventStatus,
    ModelCallRecord,
    Store,
    StoreUnavailable,
)
from wakeful.store.fleet.sessions import FleetOptions
from wakeful.store.redis_store import RedisStore
from wakeful.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio

Opener = Callable[[], Awaitable[Store]]


def ev(event_id: str, session: str = "main", text: str = "hi") -> Event:
    return user_message(text, session=session, event_id=event_id)


def msg(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


# The sessions the contract's tests write trajectories of.
CONTRACT_SESSIONS = ("main", "b", "c")


@pytest.fixture(params=["sqlite", "redis", "redis-fleet"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens a store of the backend on the same data each time (a file, a key prefix).

    redis-fleet: the store of a fleet's daemon, owning the contract's sessions (the
    events also go through the stream; every trajectory write is fenced)."""
    if request.param == "sqlite":
        path = tmp_path / "db" / "events.sqlite"

        async def open_sqlite() -> Store:
            return await SqliteStore(path).open()

        return open_sqlite
    prefix: str = request.getfixturevalue("redis_prefix")

    async def open_redis() -> Store:
        return await RedisStore(REDIS_URL, prefix=prefix).open()

    async def open_fleet() -> Store:
        store = await RedisStore(REDIS_URL, prefix=prefix, fleet=FleetOptions()).open()
        assert store.fleet is not None
        owners = redis.Redis.from_url(REDIS_URL, decode_responses=True)
        try:
            for session in CONTRACT_SESSIONS:
                owners.set(f"{prefix}owner:{session}", store.fleet.me)
                fence = owners.get(f"{prefix}fence:{session}") or owners.incr(
                    f"{prefix}fence:{session}"
                )
                store.fleet.tokens[session] = str(fence)
        finally:
            owners.close()
        return store

    return open_fleet if request.param == "redis-fleet" else open_redis


@pytest.fixture
async def store(opener: Opener) -> AsyncIterator[Store]:
    """An open store on fresh data, closed after the test."""
    opened = await opener()
    yield opened
    await opened.aclose()


async def test_append_is_idempotent_on_id(store: Store) -> None:
    """A second append of the same id returns the stored event, created=False, and adds nothing."""
    first = await store.append(ev("e1", text="original"))
    second = await store.append(ev("e1", text="a retry with other text"))
    assert first.created is True
    assert second.created is False
    assert second.stored.seq == first.stored.seq
    assert second.stored.event.content.text == "original"
    assert [s.event.id for s in await store.event_log(None)] == ["e1"]
    assert len(await store.pending("main")) == 1


async def test_duplicate_of_consumed_event_stays_consumed(store: Store) -> None:
    """Re-delivering an already consumed event does not put it back in the queue."""
    await store.append(ev("e1"))
    await store.consume("main", ["e1"], [msg("e1")])
    again = await store.append(ev("e1"))
    assert again.created is False
    assert again.stored.status is EventStatus.CONSUMED
    assert await store.pending("main") == []
    assert await store.trajectory("main") == [msg("e1")]


async def test_pending_is_per_session_and_ordered(store: Store) -> None:
    """pending(session) lists only that session's pending events, in arrival order."""
    for event_id, session in [("a1", "a"), ("b1", "b"), ("a2", "a"), ("a3", "a"), ("b2", "b")]:
        await store.append(ev(event_id, session))
    await store.append(ev("a4", "a"), status=EventStatus.ROUTING)
    assert [s.event.id for s in await store.pending("a")] == ["a1", "a2", "a3"]
    assert [s.event.id for s in await store.pending("b")] == ["b1", "b2"]
    assert await store.pending("c") == []
    assert await store.sessions() == ["a", "b"]


async def test_consume_marks_and_appends_together(store: Store) -> None:
    """consume marks the events consumed and appends their messages in order."""
    for event_id in ("e1", "e2", "e3"):
        await store.append(ev(event_id))
    await store.consume("main", ["e1", "e2"], [msg("one"), msg("two")], meta={"k": 1})
    assert [s.event.id for s in await store.pending("main")] == ["e3"]
    statuses = {s.event.id: s.status for s in await store.event_log("main")}
    assert statuses == {
        "e1": EventStatus.CONSUMED,
        "e2": EventStatus.CONSUMED,
        "e3": EventStatus.PENDING,
    }
    assert await store.trajectory("main") == [msg("one"), msg("two")]


async def test_consume_conflict_writes_nothing(store: Store) -> None:
    """If any id is no longer pending, consume raises ConsumeConflict and changes nothing."""
    for event_id in ("e1", "e2"):
        await store.append(ev(event_id))
    await store.consume("main", ["e1"], [msg("e1")])
    with pytest.raises(ConsumeConflict):
        await store.consume("main", ["e2", "e1"], [msg("e2"), msg("e1 again")])
    assert [s.event.id for s in await store.pending("main")] == ["e2"]
    assert await store.trajectory("main") == [msg("e1")]


async def test_consume_conflict_for_unknown_or_other_session_ids(store: Store) -> None:
    """An unknown id or one of another session is a conflict, and nothing is written."""
    await store.append(ev("m1", "main"))
    await store.append(ev("o1", "other"))
    with pytest.raises(ConsumeConflict):
        await store.consume("main", ["m1", "o1"], [msg("x")])
    with pytest.raises(ConsumeConflict):
        await store.consume("main", ["m1", "nope"], [msg("x")])
    assert [s.event.id for s in await store.pending("main")] == ["m1"]
    assert [s.event.id for s in await store.pending("other")] == ["o1"]
    assert await store.trajectory("main") == []


async def test_routing_event_cannot_be_consumed(store: Store) -> None:
    """An event still waiting for the router is not takeable by consume."""
    await store.append(ev("r1"), status=EventStatus.ROUTING)
    with pytest.raises(ConsumeConflict):
        await store.consume("main", ["r1"], [msg("r1")])
    assert await store.trajectory("main") == []


async def test_route_and_parallel_answer_transitions(store: Store) -> None:
    """set_route to parallel, then set_parallel_answer stores the answer and re-queues it."""
    await store.append(ev("q1", text="what time is it?"), status=EventStatus.ROUTING)
    await store.set_route("q1", EventStatus.PARALLEL, "parallel", "a quick question")
    [logged] = await store.event_log("main")
    assert (logged.status, logged.strategy, logged.reason) == (
        EventStatus.PARALLEL,
        "parallel",
        "a quick question",
    )
    assert await store.pending("main") == []
    await store.set_parallel_answer("q1", "It is 10:00.")
    [pending] = await store.pending("main")
    assert pending.event.id == "q1"
    assert pending.parallel_answer == "It is 10:00."
    assert pending.strategy == "parallel"


async def test_parallel_answer_ignored_unless_parallel(store: Store) -> None:
    """set_parallel_answer does nothing to an event that is not held for a side session."""
    await store.append(ev("p1"))
    await store.set_parallel_answer("p1", "stray answer")
    [pending] = await store.pending("main")
    assert pending.parallel_answer is None


async def test_set_route_does_not_revive_consumed_events(store: Store) -> None:
    """set_route on a consumed event leaves it consumed."""
    await store.append(ev("c1"))
    await store.consume("main", ["c1"], [msg("c1")])
    await store.set_route("c1", EventStatus.PENDING, "queue", "late routing")
    [logged] = await store.event_log("main")
    assert logged.status is EventStatus.CONSUMED
    assert await store.pending("main") == []


async def test_recover_returns_routing_and_parallel_to_pending(store: Store) -> None:
    """recover() puts routing and parallel events back in the queue and counts them."""
    await store.append(ev("r1"), status=EventStatus.ROUTING)
    await store.append(ev("p1"), status=EventStatus.ROUTING)
    await store.set_route("p1", EventStatus.PARALLEL, "parallel", "quick")
    await store.append(ev("n1"))
    await store.append(ev("c1"))
    await store.consume("main", ["c1"], [msg("c1")])
    assert await store.recover() == 2
    assert [s.event.id for s in await store.pending("main")] == ["r1", "p1", "n1"]
    assert await store.recover() == 0


async def test_event_log_pages_and_filters(store: Store) -> None:
    """event_log pages by after_seq and limit, in seq order, optionally for one session."""
    for i in range(7):
        await store.append(ev(f"e{i}", "a" if i % 2 == 0 else "b"))
    everything = await store.event_log(None)
    assert [s.event.id for s in everything] == [f"e{i}" for i in range(7)]
    seqs = [s.seq for s in everything]
    assert seqs == sorted(seqs)
    page1 = await store.event_log(None, after_seq=0, limit=3)
    page2 = await store.event_log(None, after_seq=page1[-1].seq, limit=3)
    page3 = await store.event_log(None, after_seq=page2[-1].seq, limit=3)
    assert [s.event.id for s in page1 + page2 + page3] == [f"e{i}" for i in range(7)]
    assert await store.event_log(None, after_seq=page3[-1].seq) == []
    only_a = await store.event_log("a", after_seq=everything[1].seq)
    assert [s.event.id for s in only_a] == ["e2", "e4", "e6"]
    assert [s.event.id for s in await store.event_log("b", limit=2)] == ["e1", "e3"]


async def test_queue_depths_count_unconsumed_events(store: Store) -> None:
    """queue_depths counts each session's not-yet-consumed events and its oldest acceptance time."""
    first = await store.append(ev("a1", "a"))
    await store.append(ev("a2", "a"), status=EventStatus.ROUTING)
    await store.append(ev("b1", "b"))
    await store.append(ev("c1", "c"))
    await store.consume("c", ["c1"], [msg("c1")])
    await store.consume("b", ["b1"], [msg("b1")])
    depths = {d.session: d for d in await store.queue_depths()}
    assert set(depths) == {"a"}
    assert depths["a"].pending == 2
    assert depths["a"].oldest_accepted_at == pytest.approx(first.stored.accepted_at)


async def test_model_calls_round_trip(store: Store) -> None:
    """Recorded model calls come back per session, oldest first, the newest `limit` of them
    (-1: all), with the source of what they answered and when they were made; a record
    without a time is given the store's."""
    records = [
        ModelCallRecord(
            "main", f"run{i}", "m", 0.5 + i, 100 + i, 10, 5, "stop", "ok", "webhook", 1e9 + i
        )
        for i in range(3)
    ]
    other = ModelCallRecord("other", "x", "m", 1.0, 1, 1, 0, None, "error: boom")
    for record in [records[0], other, records[1], records[2]]:
        await store.record_model_call(record)
    assert await store.model_calls("main") == records
    assert await store.model_calls("main", limit=2) == records[1:]
    assert await store.model_calls("main", limit=-1) == records
    (stamped,) = await store.model_calls("other")
    assert stamped.source == "" and stamped.created_at > 1.7e9
    assert dataclasses.replace(stamped, created_at=0.0) == other


async def test_append_messages_and_unicode_trajectory(store: Store) -> None:
    """append_messages adds to the trajectory and any JSON message round-trips exactly."""
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "f", "arguments": '{"q": "日本"}'},
            }
        ],
    }
    await store.append_messages("main", [msg("ünïcode 😀"), message])
    assert await store.trajectory("main") == [msg("ünïcode 😀"), message]
    assert await store.trajectory("other") == []


async def test_operations_after_close_raise_store_unavailable(opener: Opener) -> None:
    """Every operation on a closed store raises StoreUnavailable."""
    closed = await opener()
    await closed.append(ev("e1"))
    await closed.aclose()
    with pytest.raises(StoreUnavailable):
        await closed.append(ev("e2"))
    with pytest.raises(StoreUnavailable):
        await closed.pending("main")
    with pytest.raises(StoreUnavailable):
        await closed.consume("main", ["e1"], [msg("e1")])
    with pytest.raises(StoreUnavailable):
        await closed.trajectory("main")
    with pytest.raises(StoreUnavailable):
        await closed.recover()
    await closed.aclose()  # closing twice is harmless


async def test_reopen_sees_everything_committed(opener: Opener) -> None:
    """After close and reopen, events, statuses, answers, messages and model calls are all there."""
    first = await opener()
    await first.append(ev("e1"))
    await first.append(ev("e2"))
    await first.append(ev("q1"), status=EventStatus.ROUTING)
    await first.set_route("q1", EventStatus.PARALLEL, "parallel", "quick")
    await first.set_parallel_answer("q1", "noon")
    await first.consume("main", ["e1"], [msg("e1")])
    record = ModelCallRecord("main", "r", "m", 1.5, 3, 4, 0, "stop", "ok", "user", 1.7e9)
    await first.record_model_call(record)
    await first.aclose()

    second = await opener()
    try:
        pending = await second.pending("main")
        assert [s.event.id for s in pending] == ["e2", "q1"]
        assert pending[1].parallel_answer == "noon"
        assert await second.trajectory("main") == [msg("e1")]
        assert await second.model_calls("main") == [record]
        assert (await second.append(ev("e1"))).created is False
    finally:
        await second.aclose()


async def test_concurrent_appends_deduplicate(store: Store) -> None:
    """200 concurrent appends (each of 100 ids twice) create exactly 100 events, one per id."""
    results: dict[str, list[AppendResult]] = {}

    async def append(i: int) -> None:
        result = await store.append(ev(f"e{i % 100}", text=f"m{i}"))
        results.setdefault(result.stored.event.id, []).append(result)

    async with anyio.create_task_group() as group:
        for i in range(200):
            group.start_soon(append, i)
    assert sum(r.created for pair in results.values() for r in pair) == 100
    assert all(sorted(r.created for r in pair) == [False, True] for pair in results.values())
    assert all(len({r.stored.seq for r in pair}) == 1 for pair in results.values())
    logged = await store.event_log(None, limit=1000)
    assert sorted(s.event.id for s in logged) == sorted(f"e{i}" for i in range(100))
    assert len({s.seq for s in logged}) == 100
    assert len(await store.pending("main")) == 100


# -- EventQueue: crash counting and quarantine (issue 9) ------------------------


async def test_note_attempt_counts_before_each_run_and_can_take_one_back(store: Store) -> None:
    """Returns the count before this attempt; delta -1 takes one back, never below 0."""
    await store.append(ev("e1"))
    await store.append(ev("e2"))
    assert await store.note_attempt(["e1", "e2"]) == {"e1": 0, "e2": 0}
    assert await store.note_attempt(["e1"]) == {"e1": 1}
    assert await store.note_attempt(["e1"], delta=-1) == {"e1": 2}
    assert await store.note_attempt(["e2"], delta=-1) == {"e2": 1}
    assert await store.note_attempt(["e2"], delta=-1) == {"e2": 0}
    by_id = {s.event.id: s.attempts for s in await store.event_log(None)}
    assert by_id == {"e1": 1, "e2": 0}
    assert await store.note_attempt([]) == {}


async def test_quarantine_moves_pending_and_consumed_events_out_of_the_way(
    store: Store,
) -> None:
    """Quarantined events leave pending and the queue depth, keep their reason, and
    routing cannot bring them back; routing/parallel events are not moved."""
    for event_id in ("pending", "consumed", "routing", "other"):
        status = EventStatus.ROUTING if event_id == "routing" else EventStatus.PENDING
        await store.append(ev(event_id), status)
    await store.consume("main", ["consumed"], [msg("consumed")])
    moved = await store.quarantine(["pending", "consumed", "routing", "nope"], "it crashed")
    assert sorted(moved) == ["consumed", "pending"]
    assert [s.event.id for s in await store.pending("main")] == ["other"]
    assert [(s.event.id, s.failure) for s in await store.quarantined()] == [
        ("pending", "it crashed"),
        ("consumed", "it crashed"),
    ]
    assert all(s.status is EventStatus.QUARANTINED for s in await store.quarantined())
    depths = await store.queue_depths()
    assert [(d.session, d.pending) for d in depths] == [("main", 2)]  # routing + other
    await store.set_route("pending", EventStatus.PENDING, "queue", "late classifier")
    assert "pending" not in [s.event.id for s in await store.pending("main")]


async def test_retry_puts_a_quarantined_event_back_with_its_count_reset(
    store: Store, opener: Opener
) -> None:
    """Quarantine survives a reopen; retry returns it to pending with attempts 0;
    retrying an event that is not quarantined changes nothing."""
    await store.append(ev("e1"))
    await store.note_attempt(["e1"])
    await store.quarantine(["e1"], "it crashed")
    await store.aclose()
    reopened = await opener()
    try:
        assert [s.event.id for s in await reopened.quarantined()] == ["e1"]
        back = await reopened.retry("e1")
        assert back is not None and back.status is EventStatus.PENDING and back.attempts == 0
        assert [s.event.id for s in await reopened.pending("main")] == ["e1"]
        assert await reopened.quarantined() == []
        assert await reopened.retry("e1") is None
        assert await reopened.retry("never-seen") is None
    finally:
        await reopened.aclose()


# -- TrajectoryStore: the fencing hook point --------------------------------------


async def test_trajectory_writes_take_a_fencing_token(store: Store) -> None:
    """A token the writer passes is accepted while it is the session's current one (a
    fleet's store checks it: tests/test_fleet_store.py; the others take any)."""
    await store.append(ev("e1"))
    await store.consume("main", ["e1"], [msg("a")], fencing=1)
    await store.append_messages("main", [msg("b")], fencing=1)
    assert await store.trajectory("main") == [msg("a"), msg("b")]


# -- Store health ---------------------------------------------------------------


async def test_probe_write_succeeds_on_a_healthy_store(store: Store) -> None:
    await store.probe_write()
    assert store.health.ok and "ok" in store.health.describe()


async def test_event_log_newest_pages_backwards_with_a_count_of_older(store: Store) -> None:
    """event_log_newest: the newest N below a seq, in seq order, and how many older remain."""
    for i in range(1, 8):
        await store.append(ev(f"m{i}", "main" if i % 2 else "other"))
    page = await store.event_log_newest(None, limit=3)
    assert [s.event.id for s in page.events] == ["m5", "m6", "m7"]
    assert page.older == 4
    before = page.events[0].seq
    page = await store.event_log_newest(None, before_seq=before, limit=3)
    assert ([s.event.id for s in page.events], page.older) == (["m2", "m3", "m4"], 1)
    main = await store.event_log_newest("main", limit=2)
    assert ([s.event.id for s in main.events], main.older) == (["m5", "m7"], 2)
    rest = await store.event_log_newest("main", before_seq=main.events[0].seq, limit=10)
    assert ([s.event.id for s in rest.events], rest.older) == (["m1", "m3"], 0)
    none = await store.event_log_newest("nobody", limit=5)
    assert (none.events, none.older) == ([], 0)


async def test_cursor_is_committed_with_its_event_duplicate_or_not(opener: Opener) -> None:
    """A platform cursor goes in the same write as the event it produced, and a
    re-read update (a restart before the cursor moved) still moves it."""
    store = await opener()
    first = await store.append(ev("tg:1"), cursor=Cursor("telegram:tg:offset", "2"))
    again = await store.append(ev("tg:1"), cursor=Cursor("telegram:tg:offset", "3"))
    await store.aclose()
    reopened = await opener()
    try:
        assert first.created and not again.created
        assert await reopened.get_state("telegram:tg:offset") == "3"
        assert await reopened.get_state("telegram:other:offset") is None
    finally:
        await reopened.aclose()


async def test_channel_state_sets_replaces_and_deletes(store: Store) -> None:
    await store.put_state("pairing:code:telegram:ABCD", '{"user": "1"}')
    await store.put_state("pairing:code:telegram:ABCD", '{"user": "2"}')
    assert await store.get_state("pairing:code:telegram:ABCD") == '{"user": "2"}'
    await store.put_state("pairing:code:telegram:ABCD", None)
    assert await store.get_state("pairing:code:telegram:ABCD") is None


async def test_put_state_if_writes_only_over_the_expected_value(store: Store) -> None:
    key = "approval:k3fwz2qp"
    assert await store.put_state_if(key, None, "pending")  # absent, as expected
    assert not await store.put_state_if(key, None, "pending again")  # no longer absent
    assert not await store.put_state_if(key, "approved", "running")  # not what it holds
    assert await store.get_state(key) == "pending"
    assert await store.put_state_if(key, "pending", "approved")
    assert not await store.put_state_if(key, "pending", "denied")  # the first one stands
    assert await store.get_state(key) == "approved"
    assert await store.put_state_if(key, "approved", None)  # deletes
    assert await store.get_state(key) is None
    assert not await store.put_state_if(key, "approved", "x")
    assert await store.get_state(key) is None
    # An empty string is a value, not absence.
    assert await store.put_state_if(key, None, "")
    assert not await store.put_state_if(key, None, "y")
    assert await store.put_state_if(key, "", "z")
    assert await store.get_state(key) == "z"


async def test_put_state_if_concurrent_writers_one_wins(store: Store) -> None:
    key = "approval:race"
    await store.put_state(key, "pending")
    won: list[str] = []

    async def decide(decision: str) -> None:
        if await store.put_state_if(key, "pending", decision):
            won.append(decision)

    async with anyio.create_task_group() as group:
        for n in range(8):
            group.start_soon(decide, f"decision-{n}")
    assert len(won) == 1
    assert await store.get_state(key) == won[0]


async def test_states_under_lists_one_prefix_only(store: Store) -> None:
    await store.put_state("pairing:code:telegram:AB*D", "1")
    await store.put_state("pairing:code:telegram:EFGH", "2")
    await store.put_state("pairing:code:slack:IJKL", "3")
    await store.put_state("pairing:codex", "4")
    assert await store.states_under("pairing:code:telegram:") == {
        "pairing:code:telegram:AB*D": "1",
        "pairing:code:telegram:EFGH": "2",
    }
    assert await store.states_under("pairing:code:telegram:AB*") == {
        "pairing:code:telegram:AB*D": "1"
    }
