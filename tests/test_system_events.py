"""System events end to end: each kind through a real daemon and the fake model.

``system.alert`` (disk, memory, pending age, failing components, each active
then resolved), ``user.inactive`` once per silence, and ``process.timeout``
for a background shell task past its declared limit (kept running, or stopped
with ``kill_on_timeout``).
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus

from tests.daemon_harness import (
    ADMIN_TOKEN,
    FeedWatcher,
    Harness,
    daemon_settings,
    harness,
    last_user_text,
    watch_feed,
)
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.app.components import default_components
from wakeful.app.config import ConfigError, Settings, load_settings
from wakeful.app.lifespan import running_daemon
from wakeful.core.components.context import ComponentSetup
from wakeful.core.feed import FeedItem
from wakeful.kernel.events import Event
from wakeful.sources.system import memory
from wakeful.sources.system.alerts import AlertBook
from wakeful.sources.system.config import SystemSection
from wakeful.sources.system.pending_age import PendingAgeWatch
from wakeful.sources.system.pressure_trigger import open_trigger
from wakeful.sources.system.resources import ResourceWatch
from wakeful.store.base import QueueDepth

pytestmark = pytest.mark.anyio

# Every check off; each test turns on the one it is about.
QUIET: dict[str, Any] = {
    "disk_free_min_mb": None,
    "disk_free_min_percent": None,
    "rss_max_mb": None,
    "mem_available_min_mb": None,
    "memory_psi_stall_ms": None,
    "pending_age_max_s": None,
}


def settings(tmp_path: Path, server: FakeModelServer, **system: Any) -> Settings:
    return daemon_settings(tmp_path, server.base_url, system={**QUIET, "enabled": True, **system})


def alert(condition: str, *, resolved: bool = False) -> Any:
    def matches(item: FeedItem) -> bool:
        event_id = str(item.get("event_id", ""))
        return (
            item.get("type") == "event"
            and item.get("kind") == "system.alert"
            and event_id.startswith(f"alert:system:{condition}:")
            and event_id.endswith(":resolved") == resolved
        )

    return matches


def kind(name: str) -> Any:
    return lambda item: item.get("type") == "event" and item.get("kind") == name


def count(feed: FeedWatcher, predicate: Any) -> int:
    return sum(1 for item in feed.items if predicate(item))


async def stored_event(h: Harness, event_id: str) -> dict[str, Any]:
    """The whole event as stored (the HTTP event log shows only its text)."""
    for stored in await h.daemon.store.event_log(None, 0, 500):
        if stored.event.id == event_id:
            event: dict[str, Any] = stored.event.model_dump(mode="json")
            return event
    raise AssertionError(f"event {event_id} not stored")


async def events_of(h: Harness, kind: str) -> list[dict[str, Any]]:
    stored = await h.daemon.store.event_log(None, 0, 500)
    return [s.event.model_dump(mode="json") for s in stored if s.event.kind == kind]


async def system_status(h: Harness) -> dict[str, Any]:
    status: dict[str, Any] = (await h.client.get("/api/status")).json()["system"]
    return status


async def test_disk_nearly_full_alerts_once_and_resolves_after_a_restart(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """More free space asked than any disk has: one urgent alert, shown in status; still
    so after a restart: no second alert; after a restart with a threshold that is met,
    the same episode is resolved. (The first check is done before the daemon is ready.)"""
    full = settings(tmp_path, model_server, disk_free_min_percent=100)
    async with harness(full) as h:
        (active,) = await events_of(h, "system.alert")
        assert active["id"].startswith("alert:system:disk:")
        assert active["content"]["data"]["state"] == "active"
        assert active["context"]["priority"] == "urgent"
        assert "disk_free_min_percent" in active["content"]["text"]
        status = await system_status(h)
        assert status["active_alerts"] == 1
        assert status["alerts"][0].startswith("disk: since ")
    async with harness(full) as h:
        assert [e["id"] for e in await events_of(h, "system.alert")] == [active["id"]]
        assert (await system_status(h))["active_alerts"] == 1
    roomy = settings(tmp_path, model_server, disk_free_min_percent=0)
    async with harness(roomy) as h:
        ids = [e["id"] for e in await events_of(h, "system.alert")]
        assert ids == [active["id"], active["id"] + ":resolved"]
        (_, resolved) = await events_of(h, "system.alert")
        assert resolved["content"]["text"].startswith("Resolved: ")
        assert resolved["content"]["data"]["state"] == "resolved"
        assert (await system_status(h))["active_alerts"] == 0


async def test_an_old_pending_event_alerts_and_resolves_when_the_session_takes_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The loop is held in a model call that never ends; a second message waits past
    pending_age_max_s: alert (queued, not interrupting); once the user interrupts and
    the queue drains, resolved."""
    model_server.push(Reply(text="thinking", hang=True))
    config = settings(tmp_path, model_server, pending_age_max_s=1)
    async with harness(config) as h, watch_feed(h) as feed:
        await h.send("start a long job")
        await feed.wait_for(lambda i: i.get("type") == "run" and i.get("state") == "busy")
        await model_server.await_requests(1)
        await h.send("and one more thing")
        item = await feed.wait_for(alert("pending_age:main"))
        assert item["strategy"] == "queue"
        event = await stored_event(h, item["event_id"])
        assert event["content"]["data"]["pending"] >= 1
        assert "'main'" in event["content"]["text"]
        await h.send("stop", kind="user.interrupt")
        await feed.wait_for(alert("pending_age:main", resolved=True))
        assert count(feed, alert("pending_age:main")) == 1


async def test_with_no_model_configured_the_pending_alert_says_that_is_why(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """No model: events are stored and wait (by design). The alert names that and its
    fix, not a loop held by a long run that the user should interrupt."""
    config = settings(tmp_path, model_server, pending_age_max_s=1)
    config = config.model_copy(update={"llm": config.llm.model_copy(update={"model": ""})})
    async with harness(config) as h, watch_feed(h) as feed:
        await h.send("anyone there?")
        item = await feed.wait_for(alert("pending_age:main"))
        text = (await stored_event(h, item["event_id"]))["content"]["text"]
    assert "no model is configured: set [llm] model and base_url" in text, text
    assert "interrupt" not in text, text
    assert model_server.requests == []


class FailsTwice:
    """A component whose run raises twice, then stays up."""

    name = "flaky"

    def __init__(self) -> None:
        self.runs = 0

    async def configure(self, setup: ComponentSetup) -> None:
        pass

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self.runs += 1
        if self.runs <= 2:
            raise OSError("the device went away")
        task_status.started()
        await anyio.sleep_forever()


async def test_a_component_restarted_repeatedly_alerts_then_resolves(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    config = settings(tmp_path, model_server, component_failures=2, component_failure_window_s=2)
    components = [*default_components(config), FailsTwice()]
    feed = FeedWatcher()

    async def pump(stream: AsyncIterator[FeedItem]) -> None:
        async for got in stream:
            feed.add(got)

    async with (
        running_daemon(config, components) as running,
        running.daemon.subscribe("main") as stream,
        anyio.create_task_group() as group,
    ):
        group.start_soon(pump, stream)
        item = await feed.wait_for(alert("component:flaky"))
        assert "failed 2 times" in item["text"]
        assert "the device went away" in item["text"]
        await feed.wait_for(alert("component:flaky", resolved=True), timeout_s=15)
        group.cancel_scope.cancel()


async def test_user_inactive_fires_once_per_silence(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    config = settings(tmp_path, model_server, user_inactive_after="1s")
    async with harness(config) as h, watch_feed(h) as feed:
        await h.send("hello")
        first = await feed.wait_for(kind("user.inactive"))
        event = await stored_event(h, first["event_id"])
        assert event["source"] == {"type": "system", "principal": "wakeful", "trusted": True}
        assert "1s" in event["content"]["text"]
        # The model answers it; the silence goes on, and no second one comes.
        await wait_after(feed, first, lambda i: i.get("type") == "run" and i.get("state") == "idle")
        assert (await system_status(h))["user_inactive_sent"] == 1
        shown = [last_user_text(r.body) for r in model_server.requests]
        assert any("The user has been silent: The user has not written" in t for t in shown)
        # A new message starts a new silence: one more.
        await h.send("back again")
        await feed.wait_for(
            lambda i: kind("user.inactive")(i) and i["event_id"] != first["event_id"]
        )
        assert count(feed, kind("user.inactive")) == 2


async def wait_after(feed: FeedWatcher, after: FeedItem, predicate: Any) -> FeedItem:
    """The first item matching ``predicate`` that came after ``after``."""
    position = feed.items.index(after)
    return await feed.wait_for(lambda i: predicate(i) and feed.items.index(i) > position)


def start_shell_call(**arguments: Any) -> Reply:
    return Reply(tool_calls=[ToolCallSpec("start_shell", arguments)])


async def test_process_timeout_keeps_the_task_running(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    command = f"{sys.executable} -c 'import time; time.sleep(30)'"
    model_server.push(start_shell_call(command=command, limit_s=0.5), Reply(text="started"))
    async with harness(settings(tmp_path, model_server)) as h, watch_feed(h) as feed:
        await h.send("run the long thing")
        item = await feed.wait_for(kind("process.timeout"))
        event = await stored_event(h, item["event_id"])
        task_id = event["content"]["data"]["task_id"]
        assert item["event_id"] == f"shell:{task_id}:timeout"
        assert "It was left running" in event["content"]["text"]
        assert event["session"] == "main"
        status = (await h.client.get("/api/status")).json()
        (task,) = [t for t in status["sessions"]["main"]["tasks"] if t["task_id"] == task_id]
        assert task["state"] == "running"
        assert task["past_limit"] is True
        assert not any(i.get("kind") == "shell.exited" for i in feed.items)


async def test_process_timeout_with_kill_on_timeout_stops_the_task(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    command = f"{sys.executable} -c 'import time; time.sleep(30)'"
    call = start_shell_call(command=command, limit_s=0.5, kill_on_timeout=True)
    model_server.push(call, Reply(text="started"))
    async with harness(settings(tmp_path, model_server)) as h, watch_feed(h) as feed:
        await h.send("run the long thing, but not for long")
        item = await feed.wait_for(kind("process.timeout"))
        assert "It is being stopped (kill_on_timeout)" in item["text"]
        exited = await feed.wait_for(kind("shell.exited"))
        event = await stored_event(h, exited["event_id"])
        assert event["content"]["data"]["state"] == "failed"
        assert "stopped at its declared limit_s" in event["content"]["text"]


async def test_a_bad_duration_is_one_line_naming_the_key(tmp_path: Path) -> None:
    path = tmp_path / "wakeful.toml"
    path.write_text('[system]\nuser_inactive_after = "8 hours"\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(path)
    message = str(info.value)
    assert "system.user_inactive_after" in message
    assert "\n" not in message.strip()


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []
        self.state: dict[str, str] = {}
        self.changed = anyio.Event()

    async def submit(self, event: Event) -> None:
        self.events.append(event)
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_for_events(self, n: int) -> None:
        with anyio.fail_after(10):
            while len(self.events) < n:
                await self.changed.wait()

    async def get_state(self, key: str) -> str | None:
        return self.state.get(key)

    async def put_state(self, key: str, value: str | None) -> None:
        if value is None:
            self.state.pop(key, None)
        else:
            self.state[key] = value

    async def states_under(self, prefix: str) -> dict[str, str]:
        return {k: v for k, v in self.state.items() if k.startswith(prefix)}

    async def put_state_if(self, key: str, expected: str | None, value: str | None) -> bool:
        if self.state.get(key) != expected:
            return False
        await self.put_state(key, value)
        return True


async def test_alert_book_one_episode_per_condition() -> None:
    """Raised twice: one alert; resolved: the same id + ':resolved'; raised again: a new id."""
    recorder = Recorder()
    book = AlertBook(recorder.submit, recorder, "main")
    assert await book.raise_("disk", "full") is True
    assert await book.raise_("disk", "still full") is False
    assert json.loads(recorder.state["system:alert:disk"])["text"] == "full"
    assert await book.resolve("disk", "room again") is True
    assert await book.resolve("disk", "room again") is False
    await anyio.sleep(0.002)  # a new episode's id has its own start time (ms)
    await book.raise_("disk", "full again")
    first, resolved, again = recorder.events
    assert resolved.id == first.id + ":resolved"
    assert resolved.content.data["state"] == "resolved"
    assert again.id != first.id
    assert recorder.state.keys() == {"system:alert:disk"}
    # After a restart the open episode is sent once more under its own id (the store
    # drops the copy if the first one had arrived), then not again.
    restarted = AlertBook(recorder.submit, recorder, "main")
    await restarted.load()
    await restarted.raise_("disk", "full")
    await restarted.raise_("disk", "full")
    assert [e.id for e in recorder.events[3:]] == [again.id]


def test_defaults_are_event_driven() -> None:
    """Nothing checks more than once a minute by default; user.inactive is off."""
    section = SystemSection()
    assert section.check_interval_s >= 60
    assert section.user_inactive_after is None


class FakeQueue:
    """queue_depths as a test sets it; each read is counted and announced."""

    def __init__(self) -> None:
        self.depths: list[QueueDepth] = []
        self.reads = 0
        self.read = anyio.Event()

    async def queue_depths(self) -> list[QueueDepth]:
        self.reads += 1
        self.read.set()
        self.read = anyio.Event()
        return list(self.depths)


async def test_pending_age_reads_the_queue_only_when_it_may_have_changed() -> None:
    """Idle: one read, then none for the model's deltas; an arriving event reads it and
    arms the oldest's deadline, which fires the alert without any further change."""
    recorder, queue = Recorder(), FakeQueue()
    book = AlertBook(recorder.submit, recorder, "main")
    # Reads after a change are at least 1 s apart (MIN_REREAD_S): the second read comes
    # ~1 s after the first, when the event is not yet 1.5 s old.
    watch = PendingAgeWatch(queue, book, max_age_s=1.5)  # type: ignore[arg-type]
    async with anyio.create_task_group() as group:
        group.start_soon(watch.run)
        with anyio.fail_after(5):
            while queue.reads < 1:
                await queue.read.wait()
        watch.on_feed({"type": "delta", "delta": "tok"})
        watch.on_feed({"type": "reply", "text": "hi"})
        await anyio.sleep(0.05)  # a wrong read would have happened by now
        assert queue.reads == 1
        queue.depths = [QueueDepth("main", 1, time.time())]
        watch.on_feed({"type": "event", "kind": "user.input"})
        with anyio.fail_after(5):
            while not recorder.events:
                await queue.read.wait()
        assert queue.reads == 3  # the change, then the deadline: no polling in between
        (event,) = recorder.events
        assert event.id.startswith("alert:system:pending_age:main:")
        group.cancel_scope.cancel()


async def test_memory_pressure_trigger_is_armed_or_says_why_not() -> None:
    """Where PSI exists (this machine's kernel has it) the trigger arms, and its waiting
    thread ends as soon as the watch is cancelled; elsewhere it says why."""
    opened = open_trigger(500, 10)
    if isinstance(opened, str):
        assert "/proc/pressure/memory" in opened
        return
    threads = threading.active_count()
    try:
        with anyio.move_on_after(0.2):
            await opened.watch(lambda: None)
        assert threading.active_count() <= threads + 1  # anyio keeps its idle worker
    finally:
        opened.close()


async def test_a_memory_stall_alerts_and_ends_when_the_pressure_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PSI trigger fired: an alert naming the stall; it lasts while the 10 s average
    shows stalls, and ends at the first check that shows none."""
    pressure = tmp_path / "memory"
    monkeypatch.setattr(memory, "PRESSURE_FILE", pressure)
    recorder = Recorder()
    book = AlertBook(recorder.submit, recorder, "main")
    watch = ResourceWatch(book, SystemSection(**QUIET), tmp_path)
    pressure.write_text("some avg10=12.50 avg60=3.00 avg300=1.00 total=123\n")
    await watch.check(stalled=True)
    (alert,) = recorder.events
    assert "stalled waiting for memory (PSI some avg10 12.5 %)" in alert.content.text
    assert alert.context.priority == "urgent"
    await watch.check(stalled=False)  # the average still shows the stall
    assert len(recorder.events) == 1
    pressure.write_text("some avg10=0.00 avg60=2.00 avg300=1.00 total=124\n")
    await watch.check(stalled=False)
    assert recorder.events[-1].id == alert.id + ":resolved"


async def test_rss_over_its_limit_alerts_the_configured_session_and_status_lists_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """An RSS limit the daemon is over: an alert in [system] session, and the
    `wakeful status` command (a real CLI process) shows the open alert's line."""
    config = settings(tmp_path, model_server, rss_max_mb=1, session="ops")
    async with harness(config) as h:
        (event,) = await events_of(h, "system.alert")
        assert event["id"].startswith("alert:system:memory:")
        assert "rss_max_mb = 1" in event["content"]["text"]
        assert event["content"]["data"]["rss_mb"] > 1
        assert event["session"] == "ops"
        cli_config = tmp_path / "cli.toml"
        host_port = h.running.url.removeprefix("http://")
        cli_config.write_text(
            f'[daemon]\ndata_dir = "{tmp_path}"\n'
            f'[server]\nbind = "{host_port}"\nadmin_token = "{ADMIN_TOKEN}"\n',
            encoding="utf-8",
        )
        done = await anyio.run_process(
            [sys.executable, "-m", "wakeful", "-c", str(cli_config), "status"], check=False
        )
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.decode().splitlines()
    where = lines.index("  alerts:")
    assert any(line.startswith("system: ") for line in lines[:where])
    assert lines[where + 1].startswith("    - memory: since ")
    # The alert's text, with the rows it was wrapped onto (indented deeper) below it.
    rows = [lines[where + 1]]
    rows += itertools.takewhile(lambda row: row.startswith("        "), lines[where + 2 :])
    assert "rss_max_mb = 1" in " ".join(row.strip() for row in rows)


async def test_each_kernel_stall_wakes_a_check_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The PSI trigger's callback wakes the check between intervals, every time: a stall
    alerts, the next timed check resolves it once the average is back to 0, and a second
    stall alerts again."""
    pressure = tmp_path / "memory"
    monkeypatch.setattr(memory, "PRESSURE_FILE", pressure)
    recorder = Recorder()
    book = AlertBook(recorder.submit, recorder, "main")
    watch = ResourceWatch(book, SystemSection(**{**QUIET, "check_interval_s": 1}), tmp_path)
    async with anyio.create_task_group() as group:
        group.start_soon(watch.run)  # memory_psi_stall_ms off: no real trigger
        pressure.write_text("some avg10=20.00 avg60=0 avg300=0 total=1\n")
        watch.on_stall()
        await recorder.wait_for_events(1)
        pressure.write_text("some avg10=0.00 avg60=0 avg300=0 total=2\n")
        await recorder.wait_for_events(2)  # the timed check: resolved
        pressure.write_text("some avg10=20.00 avg60=0 avg300=0 total=3\n")
        watch.on_stall()
        await recorder.wait_for_events(3)
        group.cancel_scope.cancel()
    first, resolved, again = recorder.events
    assert resolved.id == first.id + ":resolved"
    assert "stalled waiting for memory" in again.content.text and again.id != first.id
