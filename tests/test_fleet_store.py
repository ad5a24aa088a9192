"""The fleet's store steps on the real Redis: stream entries, fencing, claims, dead letters.

Two stores on one prefix stand for two daemons; "a daemon dies" is a store that
stops renewing (its lease and its entries' idle time run out).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import anyio
import pytest
import redis
import redis.asyncio

from tests.daemon_process import free_port
from tests.redis_server import REDIS_URL
from wakeful.kernel.events import user_message
from wakeful.store.base import EventStatus, SessionLeaseLost, StoreUnavailable
from wakeful.store.fleet.sessions import FleetOptions, NotInFleet, RedisFleet, Routed
from wakeful.store.redis_store import RedisStore

pytestmark = pytest.mark.anyio

# Short enough for a test, long enough for a loaded machine to renew in time.
FAST = FleetOptions(session_lease_ms=300, claim_idle_ms=300, max_deliveries=2)


def msg(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


@pytest.fixture
async def pair(redis_prefix: str) -> AsyncIterator[tuple[RedisStore, RedisStore]]:
    a = await RedisStore(REDIS_URL, prefix=redis_prefix, fleet=FAST).open()
    b = await RedisStore(REDIS_URL, prefix=redis_prefix, fleet=FAST).open()
    assert a.fleet is not None and b.fleet is not None
    await a.fleet.join("")
    await b.fleet.join("")
    yield a, b
    await a.aclose()
    await b.aclose()


def fleet_of(store: RedisStore) -> RedisFleet:
    assert store.fleet is not None
    return store.fleet


async def read(store: RedisStore) -> list[Routed]:
    client = store.reader()
    try:
        return (await fleet_of(store).read(client, block_ms=100)).routed
    finally:
        await client.aclose()


def raw() -> redis.Redis:
    return redis.Redis.from_url(REDIS_URL, decode_responses=True)


async def test_an_entry_is_acknowledged_by_the_consume_that_takes_its_event(
    pair: tuple[RedisStore, RedisStore], redis_prefix: str
) -> None:
    a, _ = pair
    await a.append(user_message("hi", session="s1", event_id="e1"))
    [routed] = await read(a)
    assert (routed.session, routed.outcome) == ("s1", "taken")
    r = raw()
    assert r.xpending(f"{redis_prefix}events", "fleet")["pending"] == 1
    await a.consume("s1", ["e1"], [msg("hi")])
    assert r.xpending(f"{redis_prefix}events", "fleet")["pending"] == 0
    r.close()


async def test_an_entry_read_by_another_daemon_is_moved_to_the_owner(
    pair: tuple[RedisStore, RedisStore], redis_prefix: str
) -> None:
    a, b = pair
    await a.append(user_message("one", session="s1", event_id="e1"))
    assert [r.outcome for r in await read(a)] == ["taken"]
    await b.append(user_message("two", session="s1", event_id="e2"))
    [moved] = await read(b)
    assert (moved.outcome, moved.detail) == ("forwarded", fleet_of(a).me)
    r = raw()
    holders = r.xpending(f"{redis_prefix}events", "fleet")["consumers"]
    assert holders == [{"name": fleet_of(a).me, "pending": 2}]
    # The owner was woken on its control stream, and the move counted no delivery.
    client = a.reader()
    delivery = await fleet_of(a).read(client, block_ms=100)
    await client.aclose()
    assert [(c.op, c.session) for c in delivery.controls] == [("wake", "s1")]
    rows = r.xpending_range(f"{redis_prefix}events", "fleet", "-", "+", 10)
    assert [row["times_delivered"] for row in rows] == [1, 1]
    r.close()


async def test_a_daemon_that_lost_its_lease_cannot_write(
    pair: tuple[RedisStore, RedisStore],
) -> None:
    a, b = pair
    await a.append(user_message("hi", session="s1", event_id="e1"))
    await read(a)  # a owns s1 (token 1) and then stops renewing: paused
    await anyio.sleep(0.5)  # past the lease and the claim idle time
    [claimed] = await fleet_of(b).claim_stale()
    assert (claimed.outcome, claimed.detail) == ("taken", "2")
    with pytest.raises(SessionLeaseLost, match="owned by another daemon"):
        await a.consume("s1", ["e1"], [msg("from the paused daemon")])
    with pytest.raises(SessionLeaseLost):
        await a.append_messages("s1", [msg("a late reply")])
    assert "s1" not in fleet_of(a).tokens  # it noticed and let go
    await b.consume("s1", ["e1"], [msg("from the new owner")])
    assert await b.trajectory("s1") == [msg("from the new owner")]
    # The paused daemon's heartbeat says so too.
    fleet_of(a).tokens["s1"] = "1"
    assert await fleet_of(a).renew() == ["s1"]


async def test_a_lapsed_lease_no_one_took_is_taken_back_by_its_owner(
    pair: tuple[RedisStore, RedisStore],
) -> None:
    a, _ = pair
    await a.append(user_message("hi", session="s1", event_id="e1"))
    await read(a)
    await anyio.sleep(0.4)  # the lease lapsed; no one claimed the session meanwhile
    assert await fleet_of(a).renew() == []
    await a.consume("s1", ["e1"], [msg("hi")])


async def test_an_entry_whose_daemons_keep_dying_is_dead_lettered(
    pair: tuple[RedisStore, RedisStore],
) -> None:
    a, b = pair
    await a.append(user_message("poison", session="s1", event_id="e1"))
    await read(a)  # delivery 1; a dies
    await anyio.sleep(0.4)
    assert [r.outcome for r in await fleet_of(b).claim_stale()] == ["taken"]  # delivery 2
    await anyio.sleep(0.4)  # b dies holding it too
    [dead] = await fleet_of(a).claim_stale()  # delivery 3 > max_deliveries 2
    assert dead.outcome == "dead" and "delivered 3 times" in dead.detail
    [stored] = await a.quarantined()
    assert stored.event.id == "e1" and stored.status is EventStatus.QUARANTINED
    assert stored.failure == dead.detail
    status = await fleet_of(a).status()
    assert status["dead"]["count"] == 1
    assert status["dead"]["newest"][0]["id"] == "e1"
    assert status["pending"] == 0
    # `wakeful events retry` puts it back: a fresh entry in the stream.
    await a.retry("e1")
    assert [r.outcome for r in await read(b)] in (["mine"], ["taken"], ["forwarded"])


async def test_trimming_keeps_every_unacknowledged_entry(
    pair: tuple[RedisStore, RedisStore], redis_prefix: str
) -> None:
    a, _ = pair
    for i in range(3):
        await a.append(user_message(f"m{i}", session="s1", event_id=f"e{i}"))
    await read(a)  # all three delivered
    await a.append(user_message("m3", session="s1", event_id="e3"))  # not yet delivered
    await a.consume("s1", ["e0"], [msg("m0")])
    await fleet_of(a).trim()
    r = raw()
    ids = [entry_id for entry_id, _ in r.xrange(f"{redis_prefix}events") or []]
    wanted = {r.hget(f"{redis_prefix}ev:e{i}", "entry") for i in (1, 2, 3)}
    assert wanted <= set(ids)
    await a.consume("s1", ["e1", "e2", "e3"], [msg("rest")])
    await fleet_of(a).trim()
    # Left: the last delivered entry, and e3's, never delivered (its event was consumed
    # first): the next read acknowledges it as stale, and the next trim drops both.
    assert r.xlen(f"{redis_prefix}events") == 2
    assert [routed.outcome for routed in await read(a)] == ["stale"]
    await fleet_of(a).trim()
    assert r.xlen(f"{redis_prefix}events") == 1
    r.close()


async def test_a_stopping_daemon_hands_its_sessions_over(
    pair: tuple[RedisStore, RedisStore],
) -> None:
    a, b = pair
    await a.append(user_message("hi", session="s1", event_id="e1"))
    await read(a)
    assert await fleet_of(a).hand_over() == 1
    [routed] = await read(b)  # at once, not after the lease lapsed
    assert (routed.session, routed.outcome, routed.detail) == ("s1", "taken", "2")
    await b.consume("s1", ["e1"], [msg("hi")])


async def test_a_daemon_whose_control_stream_was_removed_is_told_to_join_again(
    pair: tuple[RedisStore, RedisStore], redis_prefix: str
) -> None:
    """The others remove a daemon they took for dead (it was paused); its reader gets the
    store's own error for it, not Redis's, and joining again makes it read once more."""
    a, _ = pair
    r = raw()
    r.delete(f"{redis_prefix}ctl:{fleet_of(a).me}")  # what the dead daemon's cleanup does
    r.close()
    with pytest.raises(NotInFleet, match="no member of the fleet"):
        await read(a)
    await fleet_of(a).join("")
    await a.append(user_message("hi", session="s1", event_id="e1"))
    assert [routed.outcome for routed in await read(a)] == ["taken"]


async def test_a_reader_that_cannot_reach_redis_raises_the_stores_error(
    pair: tuple[RedisStore, RedisStore],
) -> None:
    a, _ = pair
    nowhere = redis.asyncio.Redis(port=free_port(), decode_responses=True)
    try:
        with pytest.raises(StoreUnavailable, match="cannot read the fleet's streams") as caught:
            await fleet_of(a).read(nowhere, block_ms=100)
        assert not isinstance(caught.value, NotInFleet)
    finally:
        await nowhere.aclose()


async def test_orphaned_sessions_spread_over_the_live_daemons(
    pair: tuple[RedisStore, RedisStore],
) -> None:
    a, b = pair
    for i in range(4):
        await a.append(user_message("hi", session=f"s{i}", event_id=f"e{i}"))
    await read(a)  # a owns all four, then dies
    await anyio.sleep(0.4)
    await fleet_of(a).renew()  # a comes back: it lost nothing no one took
    assert len(fleet_of(a).tokens) == 4
    await fleet_of(a).hand_over()  # and stops: four orphans, two live daemons
    c = await RedisStore(REDIS_URL, prefix=b.prefix, fleet=FAST).open()
    try:
        await fleet_of(c).join("")
        await fleet_of(b).renew()
        taken_b = await fleet_of(b).adopt()
        taken_c = await fleet_of(c).adopt()
        assert len(taken_b) == 2 and len(taken_c) == 2
        assert not set(taken_b) & set(taken_c)
    finally:
        await c.aclose()


async def beat_giving_up_idle_sessions(fleet: RedisFleet) -> None:
    """One heartbeat as the member runs it, every session idle (the member picks one whose
    loop is at rest and ends that loop before giving the session up)."""
    await fleet.renew()
    await fleet.adopt()
    if await fleet.over_share():
        await fleet.give_up(sorted(fleet.tokens)[0])


async def test_a_joining_daemon_gets_its_share_of_a_live_owners_sessions(
    redis_prefix: str,
) -> None:
    a = await RedisStore(REDIS_URL, prefix=redis_prefix, fleet=FAST).open()
    b = await RedisStore(REDIS_URL, prefix=redis_prefix, fleet=FAST).open()
    try:
        await fleet_of(a).join("")
        for i in range(4):
            await a.append(user_message("hi", session=f"s{i}", event_id=f"e{i}"))
        await read(a)
        for i in range(4):
            await a.consume(f"s{i}", [f"e{i}"], [msg("hi")])
        assert len(fleet_of(a).tokens) == 4  # the one live daemon owns everything
        await fleet_of(b).join("")
        owned: list[tuple[int, int]] = []
        for _ in range(8):
            await beat_giving_up_idle_sessions(fleet_of(a))
            await beat_giving_up_idle_sessions(fleet_of(b))
            owned.append((len(fleet_of(a).tokens), len(fleet_of(b).tokens)))
        # One session per heartbeat, then it stays: no session bounces back.
        assert owned[:2] == [(3, 1), (2, 2)]
        assert set(owned[2:]) == {(2, 2)}
        moved = set(fleet_of(b).tokens)
        assert not moved & set(fleet_of(a).tokens)
        assert {fleet_of(b).tokens[s] for s in moved} == {"2"}  # one new owner each
        for session in moved:  # the new owner writes; the old one is refused
            await b.append_messages(session, [msg("from b")])
            with pytest.raises(SessionLeaseLost):
                await a.append_messages(session, [msg("from a")])
    finally:
        await a.aclose()
        await b.aclose()


async def test_giving_a_session_up_puts_its_held_entries_back(
    pair: tuple[RedisStore, RedisStore],
) -> None:
    a, b = pair
    await a.append(user_message("hi", session="s1", event_id="e1"))
    await a.append(user_message("other", session="s2", event_id="e2"))
    await read(a)  # a holds both entries, neither consumed
    assert await fleet_of(a).give_up("s1") == 1  # only s1's entry moved
    assert set(fleet_of(a).tokens) == {"s2"}
    [routed] = await read(b)  # at once, not after the lease lapsed
    assert (routed.session, routed.outcome, routed.detail) == ("s1", "taken", "2")
    await b.consume("s1", ["e1"], [msg("hi")])
    await a.consume("s2", ["e2"], [msg("other")])  # what a kept is untouched
    r = raw()
    assert r.xpending(f"{a.prefix}events", "fleet")["pending"] == 0
    r.close()


async def test_a_fleet_and_a_single_daemon_do_not_share_a_prefix(redis_prefix: str) -> None:
    fleet = await RedisStore(REDIS_URL, prefix=redis_prefix, fleet=FAST).open()
    try:
        with pytest.raises(StoreUnavailable, match="set \\[store\\] fleet = true to join"):
            await RedisStore(REDIS_URL, prefix=redis_prefix, lease=True).open()
    finally:
        await fleet.aclose()


async def test_a_fleet_daemon_refuses_a_single_daemons_prefix(redis_prefix: str) -> None:
    single = await RedisStore(REDIS_URL, prefix=redis_prefix, lease=True).open()
    try:
        with pytest.raises(StoreUnavailable, match="a single wakeful daemon holds"):
            await RedisStore(REDIS_URL, prefix=redis_prefix, lease=True, fleet=FAST).open()
    finally:
        await single.aclose()


async def test_a_daemon_that_lost_its_lease_cannot_count_crashes_or_quarantine(
    pair: tuple[RedisStore, RedisStore],
) -> None:
    """Attempt counts and quarantine are fenced like trajectory writes: a paused daemon
    waking up after its session moved must not count a crash of its own stale run (which
    would push the new owner's event towards quarantine) nor quarantine it."""
    a, b = pair
    await a.append(user_message("hi", session="s1", event_id="e1"))
    await read(a)
    assert await a.note_attempt(["e1"]) == {"e1": 0}  # the owner counts its run
    await anyio.sleep(0.5)  # paused past the lease and the claim idle time
    [claimed] = await fleet_of(b).claim_stale()
    assert claimed.outcome == "taken"
    with pytest.raises(SessionLeaseLost, match="owned by another daemon"):
        await a.note_attempt(["e1"])
    fleet_of(a).tokens["s1"] = "1"  # as if it had not noticed yet
    with pytest.raises(SessionLeaseLost):
        await a.quarantine(["e1"], "crashed on the paused daemon")
    assert await b.note_attempt(["e1"]) == {"e1": 1}  # only the owner's run counted
    assert await b.quarantine(["e1"], "the new owner's verdict") == ["e1"]
    assert await b.note_attempt(["no-such-event"]) == {"no-such-event": 0}
