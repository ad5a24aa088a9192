"""The status bar's count of waiting events comes from the loop, not a store read per request.

Unit tests of the count's two races (wakeful/core/loop/queued_events.py), then
a daemon on each store backend: events queued while the model streams are
counted in the request built then, with no store read; a restarted daemon
counts what was left waiting with one read, then counts on by itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply
from tests.redis_server import REDIS_URL
from wakeful.core.loop.limits import Run
from wakeful.core.loop.queued_events import QueuedEvents
from wakeful.core.provider import ModelRequest
from wakeful.kernel.events import user_message
from wakeful.store.base import StoredEvent
from wakeful.store.factory import open_store

WAITING = "Events waiting for the next safe point: "


def test_the_safe_points_read_sets_the_count_and_taking_empties_it() -> None:
    assert not QueuedEvents().known  # until the first read: the loop reads it then
    queued = QueuedEvents()
    queued.begin_read()
    queued.read(["a", "b", "c"])
    assert queued.known and len(queued) == 3
    queued.taken(["a", "b"])  # "c" held back for the next safe point
    assert len(queued) == 1
    queued.queued("d")
    queued.queued("d")  # told twice, counted once
    assert len(queued) == 2


def test_an_event_queued_during_the_read_is_counted_whether_or_not_the_read_saw_it() -> None:
    queued = QueuedEvents()
    queued.begin_read()
    queued.queued("late")  # committed after the read's snapshot: not in what it returns
    queued.queued("early")  # committed before it: in what it returns
    queued.read(["early"])
    assert len(queued) == 2


def test_the_dispatchers_word_for_an_event_already_taken_does_not_count_it_again() -> None:
    queued = QueuedEvents()
    queued.begin_read()
    queued.read(["e1"])
    queued.taken(["e1"])
    queued.queued("e1")  # its notice raced the read that took it
    assert len(queued) == 0
    queued.begin_read()
    queued.read([])
    queued.queued("e1")  # after a later safe point: really queued again (a retry)
    assert len(queued) == 1


# --- a daemon on each backend ------------------------------------------------


@pytest.fixture(params=["sqlite", "redis"])
def store_section(request: pytest.FixtureRequest) -> dict[str, Any]:
    if request.param == "sqlite":
        return {}
    prefix: str = request.getfixturevalue("redis_prefix")
    return {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": prefix}


def count_store_reads(h: Harness, monkeypatch: pytest.MonkeyPatch, session: str) -> list[str]:
    """Records each read of the session loop's queue from the store."""
    store = h.daemon.sessions.get(session).deps.store
    reads: list[str] = []
    original: Callable[[str], Awaitable[list[StoredEvent]]] = store.pending

    async def pending(name: str) -> list[StoredEvent]:
        reads.append(name)
        return await original(name)

    monkeypatch.setattr(store, "pending", pending)
    return reads


def reads_while_building(
    h: Harness, monkeypatch: pytest.MonkeyPatch, session: str, reads: list[str]
) -> list[tuple[int, int]]:
    """(store reads before, after) each model request the loop builds."""
    loop = h.daemon.sessions.get(session)
    original: Callable[[Run], Awaitable[ModelRequest]] = loop._build_request
    builds: list[tuple[int, int]] = []

    async def build(run: Run) -> ModelRequest:
        before = len(reads)
        request = await original(run)
        builds.append((before, len(reads)))
        return request

    monkeypatch.setattr(loop, "_build_request", build)
    return builds


def waiting_in(body: dict[str, Any]) -> int:
    status = body["messages"][-1]["content"]
    line = next(line for line in status.splitlines() if line.startswith(WAITING))
    return int(line.removeprefix(WAITING))


@pytest.mark.anyio
async def test_events_queued_while_the_model_streams_are_counted_without_a_store_read(
    tmp_path: Path,
    model_server: FakeModelServer,
    store_section: dict[str, Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = daemon_settings(tmp_path, model_server.base_url, store=store_section)
    model_server.push(Reply(text="a long answer " * 50, token_delay_s=0.01, hang=True))
    model_server.push(Reply(text="done"))
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("write me a long answer")
        await feed.wait_for(lambda i: i["type"] == "delta")  # the loop is in the model step
        reads = count_store_reads(h, monkeypatch, "main")
        builds = reads_while_building(h, monkeypatch, "main", reads)
        for text in ("note one", "note two"):
            await h.send(text)
        await feed.wait_for(lambda i: i["type"] == "event" and i["text"] == "note two")
        raw = await h.client.get("/api/sessions/main/request")
        assert raw.status_code == 200, raw.text
        assert waiting_in(raw.json()["request"]) == 2 and reads == []
        # The interrupt drops the stream; the next safe point takes all three events.
        await h.send("stop", kind="user.interrupt")
        await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle")
        # Only the safe points read the queue (the one that took the three events);
        # building a request (the one shown above, the one sent after) never did.
        assert reads and len(builds) == 2
        assert all(before == after for before, after in builds)
    [_first, second] = model_server.requests
    assert waiting_in(second.body) == 0
    assert "note two" in str(second.body["messages"])


@pytest.mark.anyio
async def test_after_a_restart_the_count_is_read_once_then_kept(
    tmp_path: Path, store_section: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events left waiting (here: no model is configured) are counted from the store once;
    one sent afterwards is counted by the loop."""
    settings = daemon_settings(
        tmp_path, "http://127.0.0.1:9/v1", llm={"model": ""}, store=store_section
    )
    store = await open_store(settings.store, tmp_path)
    try:
        for n in range(2):
            await store.append(user_message(f"left waiting {n}", session="main"))
    finally:
        await store.aclose()
    async with harness(settings) as h, watch_feed(h) as feed:
        reads = count_store_reads(h, monkeypatch, "main")
        first = await h.client.get("/api/sessions/main/request")
        assert waiting_in(first.json()["request"]) == 2 and reads == ["main"]
        await h.send("one more")
        await feed.wait_for(lambda i: i["type"] == "event" and i["text"] == "one more")
        again = await h.client.get("/api/sessions/main/request")
        assert waiting_in(again.json()["request"]) == 3 and reads == ["main"]
