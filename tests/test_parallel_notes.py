"""A question answered in parallel is context for the next run, never a run of its own."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.daemon_harness import daemon_settings, harness, last_user_text, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply
from wakeful.core.trajectory.rendering import PARALLEL_NOTE
from wakeful.kernel.events import user_message
from wakeful.store.base import EventStatus

pytestmark = pytest.mark.anyio


async def test_an_answer_landing_after_the_run_ended_starts_no_run(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The side session's answer arrives once the main run is over: it is recorded as
    a note, no model call and no reply follow, and the next run's request carries it."""
    settings = daemon_settings(tmp_path, model_server.base_url)
    model_server.push(Reply(text="hi"), Reply(text="you're welcome"))
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("hello")
        await feed.wait_for(lambda i: i.get("text") == "hi")
        await feed.wait_for(lambda i: i.get("type") == "run" and i["state"] == "idle")
        # What answer_in_parallel does when its side session finishes late.
        question = user_message("what time is it?", session="main", event_id="q:1")
        await h.daemon.store.append(question, EventStatus.PARALLEL, "parallel", "quick question")
        await h.daemon.store.set_parallel_answer("q:1", "It is 10:00 UTC.")
        seen = len(feed.items)
        h.daemon.sessions.get("main").notify()
        with anyio.fail_after(10):
            while not (await h.trajectory())[-1]["content"].startswith(PARALLEL_NOTE):
                await feed.wait_for_more_than(seen)
                seen = len(feed.items)
        await anyio.wait_all_tasks_blocked()
        assert len(model_server.requests) == 1  # the note called no model
        assert not [i for i in feed.items if i.get("type") == "reply" and i.get("text") != "hi"]
    # Nor does it after a restart: the trajectory owes no reply.
    async with harness(settings) as h, watch_feed(h) as feed:
        await anyio.wait_all_tasks_blocked()
        assert len(model_server.requests) == 1
        await h.send("thanks")
        await feed.wait_for(lambda i: i.get("text") == "you're welcome")
    second = model_server.requests[1].body
    assert last_user_text(second).endswith("thanks")
    notes = [m for m in second["messages"] if PARALLEL_NOTE in (m.get("content") or "")]
    assert len(notes) == 1 and "It is 10:00 UTC." in notes[0]["content"]
