"""Session supervision (issue 9): an exception ends a run, never the daemon.

The whole daemon runs in-process over real HTTP against the fake model
server; faults are injected by wrapping the live provider, tool registry
and store objects. In each case the daemon stays up, /readyz tells the
truth, nothing acknowledged is lost, a poison event is quarantined after
``[loop] max_event_crashes`` tries, and the next event in the session is
answered.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import (
    FeedWatcher,
    Harness,
    daemon_settings,
    harness,
    last_user_text,
    watch_feed,
)
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.trajectory_validator import validate_openai
from wakeful.cli.main import main
from wakeful.core.provider import ModelRequest
from wakeful.core.router import Decision, Strategy
from wakeful.kernel import metrics
from wakeful.kernel.events import user_message
from wakeful.store.base import EventStatus, StoreUnavailable

pytestmark = pytest.mark.anyio


async def event_status(h: Harness, event_id: str) -> dict[str, Any]:
    response = await h.client.get("/api/events", params={"limit": 1000})
    return next(e for e in response.json()["events"] if e["id"] == event_id)


async def wait_until(
    feed: FeedWatcher, check: Callable[[], Awaitable[bool]], timeout_s: float = 20.0
) -> None:
    """Until ``check`` (read through the API) holds, re-checked whenever the session's
    feed moves: every step that changes what it reads also publishes there."""
    with anyio.fail_after(timeout_s):
        while True:
            seen = len(feed.items)
            if await check():
                return
            await feed.wait_for_more_than(seen, timeout_s)


def answered(h: Harness, text: str) -> Callable[[], Awaitable[bool]]:
    """True once the trajectory has a final assistant reply after the user turn with ``text``."""

    async def check() -> bool:
        messages = await h.trajectory()
        asked = [i for i, m in enumerate(messages) if m["role"] == "user" and text in m["content"]]
        return bool(asked) and any(
            m["role"] == "assistant" and not m.get("tool_calls") for m in messages[asked[-1] :]
        )

    return check


def poison_provider(
    h: Harness, monkeypatch: pytest.MonkeyPatch, marker: str, error: Exception
) -> dict[str, bool]:
    """The live provider raises ``error`` (not a ProviderError: a crash) whenever the
    last user message contains ``marker``, until ``switch["on"]`` is set False."""
    provider = h.daemon.provider
    original = provider.complete
    switch = {"on": True}

    async def complete(request: ModelRequest, on_delta: Any = None) -> Any:
        if switch["on"] and marker in last_user_text({"messages": request.messages}):
            raise error
        return await original(request, on_delta)

    monkeypatch.setattr(provider, "complete", complete)
    return switch


async def test_model_crash_quarantines_the_event_and_the_session_goes_on(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash after the event was consumed (the model call raised) restarts the loop,
    which retries; after 3 crashed runs the event is quarantined, the turn closed, the
    session alerted, and the next message answered. Retry puts it back."""
    crashes_before = sum(metrics.SESSION_CRASHES.values.values())
    async with (
        harness(daemon_settings(tmp_path, model_server.base_url)) as h,
        watch_feed(h) as feed,
    ):
        switch = poison_provider(h, monkeypatch, "POISON", RuntimeError("provider bug"))
        poison = await h.send("POISON pill")
        await wait_until(
            feed, lambda: _has_status(h, poison, EventStatus.QUARANTINED.value), timeout_s=30
        )
        alerts = [i for i in feed.items if i.get("type") == "alert"]
        assert sum("restarting it" in a["text"] for a in alerts) == 3
        assert sum(metrics.SESSION_CRASHES.values.values()) - crashes_before == 3
        scraped = (await h.client.get("/metrics")).text
        assert 'wakeful_session_crashes_total{error="RuntimeError"}' in scraped
        assert 'wakeful_events_quarantined_total{kind="user.input"}' in scraped
        entry = await event_status(h, poison)
        assert entry["attempts"] >= 3 and "RuntimeError: provider bug" in entry["failure"]
        assert (await h.client.get("/readyz")).status_code == 200
        status = (await h.client.get("/api/status")).json()
        assert [q["id"] for q in status["quarantined"]] == [poison]
        # Reported to the session as a deduplicated system.alert, which it then handles.
        await wait_until(feed, answered(h, f"event {poison}"))
        assert (await event_status(h, f"alert:quarantine:{poison}"))["kind"] == "system.alert"
        await h.send("hello after the poison")
        await wait_until(feed, answered(h, "hello after the poison"))
        validate_openai(await h.trajectory())
        # `wakeful events retry` (its HTTP endpoint): back in the queue, answered now.
        switch["on"] = False
        retried = await h.client.post(f"/api/events/{poison}/retry")
        assert retried.status_code == 200, retried.text
        await wait_until(feed, lambda: _has_status(h, poison, EventStatus.CONSUMED.value))
        await wait_until(feed, answered(h, "POISON pill"))
        again = await h.client.post(f"/api/events/{poison}/retry")
        assert again.status_code == 404 and "not quarantined" in again.json()["error"]
        assert (await h.client.get("/healthz")).status_code == 200
        assert model_server.violations == []


async def _has_status(h: Harness, event_id: str, status: str) -> bool:
    return str((await event_status(h, event_id))["status"]) == status


async def test_crash_before_consume_quarantines_only_the_poison_event(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store raises on consume for one event (before anything is written): it stays
    pending and is retried, counted before each run; after 3 crashes it is quarantined.
    An event queued behind it in the same batch is answered and not quarantined."""
    async with (
        harness(daemon_settings(tmp_path, model_server.base_url)) as h,
        watch_feed(h) as feed,
    ):
        store = h.daemon.store
        original = store.consume
        poison_ids: set[str] = set()

        async def consume(session: str, event_ids: list[str], *args: Any, **kw: Any) -> None:
            if poison_ids & set(event_ids):
                raise RuntimeError("cannot render this event")
            await original(session, event_ids, *args, **kw)

        monkeypatch.setattr(store, "consume", consume)
        model_server.push(Reply(text="slow first reply", first_token_delay_s=0.5))
        await h.send("warm up")  # busy: the next two wait and go in one batch
        poison_ids.add(await h.send("poison"))
        other = await h.send("an innocent message")
        (poison,) = poison_ids
        await wait_until(feed, lambda: _has_status(h, poison, "quarantined"), timeout_s=30)
        await wait_until(feed, lambda: _has_status(h, other, "consumed"))
        await wait_until(feed, answered(h, "an innocent message"))
        # At most one crashed take (the batch it shared with the poison, if the take was
        # not made before it arrived), then alone: never counted again once the first
        # event of that batch is answered (an innocent one behind the poison was).
        assert (await event_status(h, other))["attempts"] in (1, 2)
        assert (await event_status(h, poison))["attempts"] == 4  # 3 crashed takes + the last
        shown = [m["content"] for m in await h.trajectory() if m["role"] == "user"]
        assert [text for text in shown if "poison" in text and "quarantined" not in text] == []
        assert (await h.client.get("/readyz")).status_code == 200


async def test_a_raising_tool_executor_is_a_failed_run_with_an_honest_placeholder(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A tool task that raises (past the registry's own guard) ends the run; the loop
    restarts, the call gets a placeholder, and the model is asked again."""
    async with (
        harness(daemon_settings(tmp_path, model_server.base_url)) as h,
        watch_feed(h) as feed,
    ):
        tools = h.running.registrations.tools
        original = tools.execute

        async def execute(name: str, raw_arguments: str, ctx: Any) -> Any:
            if name == "task_status":
                raise RuntimeError("executor bug")
            return await original(name, raw_arguments, ctx)

        monkeypatch.setattr(tools, "execute", execute)
        model_server.push(
            Reply(tool_calls=[ToolCallSpec("task_status", {"task_id": "x"}, id="call_boom")]),
            Reply(text="recovered after the crash"),
        )
        await h.send("check the task")
        await wait_until(feed, answered(h, "check the task"))
        messages = await h.trajectory()
        results = [m for m in messages if m.get("tool_call_id") == "call_boom"]
        assert len(results) == 1
        assert "may have partially executed" in results[0]["content"]
        assert messages[-1] == {"role": "assistant", "content": "recovered after the crash"}
        validate_openai(messages)
        assert (await h.client.get("/healthz")).status_code == 200


async def test_store_failing_on_pending_and_append_keeps_the_daemon_up(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``pending`` raises (the store cannot read): the session restarts with backoff
    and no event is blamed; ``append`` raises StoreUnavailable: 503 + Retry-After.
    Once the store works again every acknowledged event is answered."""
    async with (
        harness(daemon_settings(tmp_path, model_server.base_url)) as h,
        watch_feed(h) as feed,
    ):
        store = h.daemon.store
        pending, append = store.pending, store.append
        broken = {"pending": 3, "append": True}

        async def failing_pending(session: str) -> Any:
            if broken["pending"] > 0:
                broken["pending"] -= 1
                raise StoreUnavailable("disk I/O error")
            return await pending(session)

        async def failing_append(*args: Any, **kw: Any) -> Any:
            if broken["append"]:
                raise StoreUnavailable("the event store cannot write: database or disk is full")
            return await append(*args, **kw)

        monkeypatch.setattr(store, "pending", failing_pending)
        first = await h.send("stored before the fault")
        await wait_until(feed, lambda: _has_status(h, first, "consumed"))
        monkeypatch.setattr(store, "append", failing_append)
        refused = await h.client.post("/api/messages", json={"text": "refused"})
        assert refused.status_code == 503 and refused.headers["retry-after"] == "5"
        broken["append"] = False
        await h.send("after the fault")
        await wait_until(feed, answered(h, "after the fault"))
        await wait_until(feed, answered(h, "stored before the fault"))
        assert (await event_status(h, first))["attempts"] == 1
        assert (await h.client.get("/api/status")).json()["quarantined"] == []


async def test_undecodable_model_replies_are_failed_calls_not_crashes(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Non-UTF-8 bytes and garbage JSON from the endpoint count toward
    max_consecutive_failures: the run stops with an alert, its event is kept, no crash
    is counted, and the next event is answered normally."""
    crashes_before = sum(metrics.SESSION_CRASHES.values.values())
    settings = daemon_settings(
        tmp_path, model_server.base_url, loop={"max_consecutive_failures": 2}
    )
    async with harness(settings) as h, watch_feed(h) as feed:
        model_server.push(Reply(text="half", corrupt="utf8"), Reply(corrupt="json"))
        first = await h.send("first question")
        await feed.wait_for(lambda i: "run stopped" in str(i.get("text")), timeout_s=15)
        failures = [i["text"] for i in feed.items if "model call failed" in str(i.get("text"))]
        assert len(failures) == 2 and all("cannot be decoded" in f for f in failures)
        assert (await event_status(h, first))["status"] == "consumed"
        await h.send("second question")
        await wait_until(feed, answered(h, "second question"))
        assert "first question" in str(await h.trajectory())
    assert sum(metrics.SESSION_CRASHES.values.values()) == crashes_before


async def test_a_hanging_model_endpoint_times_out_as_a_failed_call(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A stream that stops sending is cut by [llm] timeout_s: a failed call; the
    session takes the next event."""
    settings = daemon_settings(
        tmp_path,
        model_server.base_url,
        llm={"timeout_s": 0.5},
        loop={"max_consecutive_failures": 1},
    )
    async with harness(settings) as h, watch_feed(h) as feed:
        model_server.push(Reply(text="thinking", hang=True))
        await h.send("will hang")
        await feed.wait_for(lambda i: "run stopped" in str(i.get("text")), timeout_s=15)
        await h.send("next one")
        await wait_until(feed, answered(h, "next one"))
        assert (await h.client.get("/readyz")).status_code == 200


async def test_a_raising_classifier_requeues_the_event(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dispatcher's background steps run in the daemon's task group: a classifier
    or side session that raises is counted and its event queued, not lost."""
    async with (
        harness(daemon_settings(tmp_path, model_server.base_url)) as h,
        watch_feed(h) as feed,
    ):
        router = h.daemon.dispatcher._router
        monkeypatch.setattr(router, "decide_fast", lambda event, busy: None)

        async def decide(event: Any, busy: bool) -> Decision:
            if "parallel" in event.content.text:
                return Decision(Strategy.PARALLEL, "asked for a side answer")
            raise RuntimeError("classifier bug")

        monkeypatch.setattr(router, "decide", decide)
        failed = metrics.BACKGROUND_FAILURES.value(step="classify")
        event_id = await h.send("needs a classifier")
        await wait_until(feed, answered(h, "needs a classifier"))
        assert metrics.BACKGROUND_FAILURES.value(step="classify") == failed + 1
        entry = await event_status(h, event_id)
        assert entry["status"] == "consumed" and "classify failed" in entry["reason"]

        async def broken_side_session(loop: Any, stored: Any) -> None:
            raise RuntimeError("side session bug")

        monkeypatch.setattr("wakeful.core.dispatcher.answer_in_parallel", broken_side_session)
        await h.send("a parallel question")
        await wait_until(feed, answered(h, "a parallel question"))
        assert metrics.BACKGROUND_FAILURES.value(step="parallel") >= 1
        assert (await h.client.get("/healthz")).status_code == 200


async def test_a_long_store_outage_quarantines_nothing(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that fails because the store does (more times than max_event_crashes)
    blames no event: each attempt is taken back, and the event is answered after."""
    async with (
        harness(daemon_settings(tmp_path, model_server.base_url)) as h,
        watch_feed(h) as feed,
    ):
        h.daemon.sessions.get("main")
        monkeypatch.setattr(h.daemon.sessions.supervisors["main"], "first_backoff_s", 0.02)
        store = h.daemon.store
        original = store.consume
        failures = {"left": 5}

        async def consume(*args: Any, **kw: Any) -> None:
            if failures["left"] > 0:
                failures["left"] -= 1
                raise StoreUnavailable("the event store cannot write: disk I/O error")
            await original(*args, **kw)

        monkeypatch.setattr(store, "consume", consume)
        event_id = await h.send("during the outage")
        await wait_until(feed, answered(h, "during the outage"))
        entry = await event_status(h, event_id)
        assert entry["status"] == "consumed" and entry["attempts"] == 1
        assert failures["left"] == 0


def cli_config(h: Harness, tmp_path: Path) -> Path:
    host_port = h.running.url.removeprefix("http://")
    path = tmp_path / "cli.toml"
    path.write_text(
        f'[daemon]\ndata_dir = "{h.running.data_dir}"\n'
        f'[server]\nbind = "{host_port}"\nadmin_token = "{h.running.admin_token}"\n'
    )
    return path


async def test_wakeful_events_retry_puts_a_quarantined_event_back(
    tmp_path: Path, model_server: FakeModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """`wakeful status` lists the quarantined event with its reason; `wakeful events
    retry ID` puts it back and the session answers it; a second retry is one line, exit 1."""
    async with harness(daemon_settings(tmp_path, model_server.base_url)) as h:
        event = user_message("held back", session="side", event_id="held:1")
        await h.daemon.store.append(event)
        await h.daemon.store.quarantine([event.id], "it crashed its session 3 times")
        unauthorised = await h.client.post(
            "/api/events/held:1/retry", headers={"Authorization": "Bearer wrong"}
        )
        assert unauthorised.status_code == 401  # the admin token guards it
        config = str(cli_config(h, tmp_path))
        assert await anyio.to_thread.run_sync(main, ["-c", config, "status"]) == 0
        shown = capsys.readouterr().out
        assert "1 quarantined" in shown and "held:1" in shown and "3 times" in shown
        async with watch_feed(h, "side") as feed:
            code = await anyio.to_thread.run_sync(main, ["-c", config, "events", "retry", "held:1"])
            assert code == 0
            assert "back in session side's queue" in capsys.readouterr().out
            await feed.wait_for(lambda i: i.get("type") == "reply" and "id" in i)  # via the outbox
        code = await anyio.to_thread.run_sync(main, ["-c", config, "events", "retry", "held:1"])
        err = capsys.readouterr().err
        assert code == 1 and "not quarantined" in err and err.count("\n") == 1


async def test_max_event_crashes_comes_from_the_config(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[loop] max_event_crashes = 1: one crashed run is enough to quarantine."""
    settings = daemon_settings(tmp_path, model_server.base_url, loop={"max_event_crashes": 1})
    async with harness(settings) as h, watch_feed(h) as feed:
        poison_provider(h, monkeypatch, "POISON", RuntimeError("provider bug"))
        poison = await h.send("POISON once")
        await wait_until(feed, lambda: _has_status(h, poison, "quarantined"))
        alerts = [i for i in feed.items if "restarting it" in str(i.get("text"))]
        assert len(alerts) == 1
        assert "session 'main' crashed once" in (await event_status(h, poison))["failure"]
