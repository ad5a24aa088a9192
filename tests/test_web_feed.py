"""The page's one live connection: feed ids, resuming after a drop, resync when it cannot."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.daemon_harness import ADMIN_TOKEN, daemon_settings, harness
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer
from tests.test_web_auth import log_in
from wakeful.core.feed import ALL_SESSIONS, RESYNC, Feed, FeedItem

pytestmark = pytest.mark.anyio


async def drain(feed: Feed, session: str, resume_after: str | None) -> list[FeedItem]:
    async with feed.subscribe(session, resume_after=resume_after) as stream:
        items = []
        while True:
            try:
                items.append(stream.receive_nowait())
            except anyio.WouldBlock:
                return items


async def test_a_resumed_subscription_gets_exactly_what_it_missed() -> None:
    feed = Feed(keep=10)
    for n in range(3):
        feed.publish("a", {"type": "event", "n": n})
    feed.publish("b", {"type": "event", "n": 3})
    first = feed._recent[0][1]["feed_id"]
    everything = await drain(feed, ALL_SESSIONS, first)
    assert [item["n"] for item in everything] == [1, 2, 3]
    assert [item["n"] for item in await drain(feed, "a", first)] == [1, 2]
    last = everything[-1]["feed_id"]
    assert await drain(feed, ALL_SESSIONS, last) == []
    assert await drain(feed, ALL_SESSIONS, None) == []  # no resume: live items only


async def test_a_gap_the_feed_cannot_cover_asks_for_a_resync() -> None:
    feed = Feed(keep=2)
    ids = [feed.publish("a", {"type": "event"}) for _ in range(5)]
    assert ids == [0] * 5  # nobody was watching
    oldest_kept = feed._recent[0][1]["feed_id"]
    assert [i["type"] for i in await drain(feed, "a", oldest_kept)] == ["event"]
    too_old = f"{feed.epoch}-1"
    assert [i["type"] for i in await drain(feed, "a", too_old)] == [RESYNC]
    restarted = await drain(feed, "a", "0badc0de-4")
    assert restarted[0]["type"] == RESYNC and restarted[0]["reason"] == "the daemon restarted"
    assert (await drain(feed, "a", "garbage"))[0]["type"] == RESYNC


class SseReader:
    """Feed items with their SSE ids, read off one open event stream."""

    def __init__(self, response: httpx.Response) -> None:
        self._lines = response.aiter_lines()

    async def next(self) -> dict[str, Any]:
        current: dict[str, Any] = {}
        with anyio.fail_after(10):
            async for line in self._lines:
                if line.startswith("id: "):
                    current["id"] = line[4:]
                elif line.startswith("data: "):
                    current["data"] = json.loads(line[6:])
                elif line == "" and "data" in current:
                    return current
        raise AssertionError("the stream ended")

    async def until(self, done: Any) -> list[dict[str, Any]]:
        items = [await self.next()]
        while not done(items):
            items.append(await self.next())
        return items


def replies(items: list[dict[str, Any]]) -> int:
    return sum(i["data"]["type"] == "reply" for i in items)


async def test_the_page_stream_resumes_from_last_event_id_over_http(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        headers = await log_in(h.client)
        async with h.client.stream("GET", "/web/stream", headers=headers) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            await h.send("one")
            seen = await SseReader(response).until(lambda items: len(items) == 2)
        assert seen[0]["data"]["type"] == "event" and seen[0]["data"]["text"] == "one"
        last_id = seen[-1]["id"]
        async with h.running.daemon.feed.subscribe("main") as watch:
            await h.send("two")  # while the page is not connected
            with anyio.fail_after(10):
                async for item in watch:
                    if item["type"] == "run" and item["state"] == "idle":
                        break
        resumed_headers = {**headers, "Last-Event-ID": last_id}
        async with h.client.stream("GET", "/web/stream", headers=resumed_headers) as response:
            more = await SseReader(response).until(lambda items: replies(items) == 2)
        # Everything published since, in order, each once: the ids follow one another.
        numbers = [int(i["id"].rsplit("-", 1)[1]) for i in more]
        assert numbers == list(range(int(last_id.rsplit("-", 1)[1]) + 1, numbers[-1] + 1))
        texts = [i["data"].get("text") for i in more if i["data"]["type"] == "event"]
        assert texts == ["two"]


def test_an_open_page_stream_does_not_hold_up_the_daemon_stopping(tmp_path: Path) -> None:
    port = free_port()
    daemon = DaemonProcess(write_config(tmp_path, None, port), port)
    with daemon, httpx.Client(base_url=daemon.url, timeout=10) as client:
        login = client.get("/login", params={"token": ADMIN_TOKEN})
        assert login.status_code == 303
        with client.stream("GET", "/web/stream") as response:
            assert next(response.iter_bytes()).startswith(b": ready")
            started = time.monotonic()
            assert daemon.stop(timeout_s=10) == 0  # SIGTERM with the page connected
            assert time.monotonic() - started < 5
