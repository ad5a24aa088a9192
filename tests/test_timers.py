"""Timers in the running daemon: persistence, restarts, misfires, tools, end to end."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from wakeful.app.config import Settings
from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.sources.timers.component import TimersComponent
from wakeful.sources.timers.config import TimerConfig
from wakeful.sources.timers.firing import TimerExecutor
from wakeful.store.timers.port import PendingFire

pytestmark = pytest.mark.anyio


async def call_tool(
    h: Harness, name: str, args: dict[str, Any], session: str = "main"
) -> ToolOutput:
    """Run a tool the way the session loop does, through the registry."""

    async def reply(_: str) -> None:
        return None

    data_dir = h.running.data_dir
    ctx = ToolContext(session, "call_test", data_dir, data_dir, CombinedTaskView([]), reply)
    return await h.running.registrations.tools.execute(name, json.dumps(args), ctx)


def settings_for(
    tmp_path: Path, model_server: FakeModelServer, *, grace_s: float = 600, timers: Any = ()
) -> Settings:
    settings = daemon_settings(
        tmp_path, model_server.base_url, scheduler={"misfire_grace_s": grace_s}
    )
    return settings.model_copy(update={"timers": list(timers)})


def stored_job_ids(data_dir: Path) -> list[str]:
    with sqlite3.connect(data_dir / "wakeful.db") as conn:
        return [row[0] for row in conn.execute("SELECT id FROM timer_jobs ORDER BY id")]


def stored_kinds(data_dir: Path) -> list[str]:
    with sqlite3.connect(data_dir / "wakeful.db") as conn:
        return [row[0] for row in conn.execute("SELECT kind FROM events ORDER BY seq")]


async def timer_events(h: Harness, kind: str = "timer.trigger") -> list[dict[str, Any]]:
    return [e for e in await h.daemon.event_log(None, limit=1000) if e["kind"] == kind]


async def wait_for_event(h: Harness, kind: str, timeout_s: float = 5) -> dict[str, Any]:
    """The first logged event of `kind`, whether it came before or after this call."""
    async with watch_feed(h) as feed:  # subscribed before looking: nothing slips between
        logged = await timer_events(h, kind)
        if logged:
            return logged[0]
        item = await feed.wait_for(lambda i: i.get("kind") == kind, timeout_s=timeout_s)
    return next(e for e in await timer_events(h, kind) if e["id"] == item["event_id"])


async def wait_until(moment: datetime) -> None:
    """The scenario needs wall-clock time to pass (a run falling due while the daemon is down)."""
    delay = (moment - datetime.now(UTC)).total_seconds()
    if delay > 0:
        await anyio.sleep(delay)


def at_in(seconds: float) -> str:
    return (datetime.now(UTC) + timedelta(seconds=seconds)).isoformat()


async def test_set_timer_wakes_the_model_end_to_end(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The model sets a one-shot timer; when it fires, the model is called with its message."""
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("set_timer", {"after": "1s", "message": "check the oven"})]),
        Reply(text="Timer set."),
        Reply(text="The oven is done."),
    )
    async with harness(settings_for(tmp_path, model_server)) as h, watch_feed(h) as feed:
        await h.send("remind me about the oven in a second")
        await feed.wait_for(lambda i: i.get("text") == "Timer set.")
        fired = await feed.wait_for(lambda i: i.get("kind") == "timer.trigger", timeout_s=5)
        await feed.wait_for(lambda i: i.get("text") == "The oven is done.")
    assert fired["event_id"].startswith("timer:t-")
    tool_result = model_server.requests[1].body["messages"][-2]["content"]
    assert "next fire at" in tool_result and "timer.trigger" in tool_result
    last = model_server.requests[2].body["messages"][-2]["content"]
    assert "Timer fired" in last and "check the oven" in last


async def test_one_shot_across_restart_fires_exactly_once(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A timer set before a stop fires once after the restart, and never again later."""
    settings = settings_for(tmp_path, model_server)
    due = datetime.now(UTC) + timedelta(seconds=2)  # after the first daemon has stopped
    async with harness(settings) as h:
        out = await call_tool(h, "set_timer", {"at": due.isoformat(), "message": "once"})
        assert not out.is_error, out.text
    assert stored_kinds(tmp_path).count("timer.trigger") == 0  # it did not fire before the stop
    await wait_until(due)
    async with harness(settings) as h:
        await wait_for_event(h, "timer.trigger")
    async with harness(settings) as h:
        await h.daemon.status()  # a full start: replays and misfires have been handled
        events = await timer_events(h)
    assert len(events) == 1 and events[0]["text"] == "once"
    assert stored_job_ids(tmp_path) == []


async def test_five_restarts_create_no_duplicate_jobs(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """Config and tool timers are stored once however often the daemon restarts."""
    config = [
        {"name": "daily", "cron": "0 9 * * *", "timezone": "Europe/Berlin", "message": "m"},
        {"name": "hourly", "interval": "1h", "message": "h"},
    ]
    settings = settings_for(tmp_path, model_server, timers=_timer_configs(config))
    async with harness(settings) as h:
        await call_tool(h, "set_timer", {"cron": "0 8 * * 1", "message": "weekly"})
        first = next_fire_times((await h.client.get("/api/status")).json())
    for _ in range(5):
        async with harness(settings) as h:
            assert next_fire_times((await h.client.get("/api/status")).json()) == first
    assert len(stored_job_ids(tmp_path)) == 3
    assert {"config:daily", "config:hourly"} <= set(stored_job_ids(tmp_path))
    trimmed = settings_for(tmp_path, model_server, timers=_timer_configs(config[:1]))
    async with harness(trimmed):
        pass
    assert "config:hourly" not in stored_job_ids(tmp_path)
    assert len(stored_job_ids(tmp_path)) == 2


def next_fire_times(status: dict[str, Any]) -> dict[str, str]:
    return {t["timer_id"]: t["next_fire_time"] for t in status["timers"]["timers"]}


def _timer_configs(entries: list[dict[str, str]]) -> list[TimerConfig]:
    return [TimerConfig(**entry) for entry in entries]


async def test_double_fire_makes_one_event(tmp_path: Path, model_server: FakeModelServer) -> None:
    """Firing the same scheduled run twice stores one event; the second is a duplicate."""
    async with harness(settings_for(tmp_path, model_server)) as h:
        out = await call_tool(h, "set_timer", {"after": "1h", "message": "twice?"})
        executor = _executor(h)
        run_time = datetime.fromisoformat(out.data["timer"]["next_fire_time"])
        body = {"message": "twice?", "session": "main", "name": "", "timer_id": "t-x"}
        fire = PendingFire("t-x", run_time - timedelta(hours=1), body)
        first, second = await executor.fire(fire), await executor.fire(fire)
        assert first is not None and second is not None
        assert (first.result.duplicate, second.result.duplicate) == (False, True)
        events = await timer_events(h)
    assert [e["id"] for e in events] == [first.result.event_id]


def _executor(h: Harness) -> TimerExecutor:
    set_timer = h.running.registrations.tools.get("set_timer")
    executor: TimerExecutor = set_timer._service.executor  # type: ignore[union-attr]
    return executor


async def test_run_missed_within_grace_fires_once_coalesced(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """An interval timer down for several runs fires once at restart, saying how many it folds."""
    settings = settings_for(tmp_path, model_server, grace_s=60)
    async with harness(settings) as h:
        out = await call_tool(h, "set_timer", {"interval": "1s", "message": "tick"})
        first_due = datetime.fromisoformat(out.data["timer"]["next_fire_time"])
    await wait_until(first_due + timedelta(seconds=2.5))
    async with harness(settings) as h:
        logged = await wait_for_event(h, "timer.trigger")
        stored = [e for e in await h.daemon.store.event_log(None) if e.event.id == logged["id"]]
    assert stored[0].event.content.data["coalesced_runs"] >= 2
    assert "Fired once for" in stored[0].event.content.text


async def test_run_missed_beyond_grace_is_recorded_as_missed(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A one-shot that fell due longer ago than the grace window becomes a missed-run alert."""
    settings = settings_for(tmp_path, model_server, grace_s=0.2)
    due = datetime.now(UTC) + timedelta(seconds=2)  # after the first daemon has stopped
    async with harness(settings) as h:
        await call_tool(h, "set_timer", {"at": due.isoformat(), "message": "too late"})
    assert stored_kinds(tmp_path).count("timer.trigger") == 0  # it did not fire before the stop
    await wait_until(due + timedelta(seconds=0.4))
    async with harness(settings) as h:
        alert = await wait_for_event(h, "system.alert")
        assert await timer_events(h) == []
        assert len(await timer_events(h, "system.alert")) == 1
    assert alert["id"].startswith("timer-missed:t-")
    assert "missed" in alert["text"] and "too late" in alert["text"]
    assert stored_job_ids(tmp_path) == []


async def test_tool_errors_say_what_to_fix(tmp_path: Path, model_server: FakeModelServer) -> None:
    """Bad cron, past time, unknown zone and unknown ids come back as tool errors."""
    async with harness(settings_for(tmp_path, model_server)) as h:
        cases = [
            ({"cron": "every day", "message": "x"}, "fields, not 5"),
            ({"at": "2001-01-01T00:00:00Z", "message": "x"}, "in the past"),
            ({"cron": "0 9 * * *", "timezone": "Nowhere/City", "message": "x"}, "time zone"),
            ({"after": "1m", "interval": "1m", "message": "x"}, "exactly one of"),
            ({"after": "1m"}, "message"),
        ]
        for args, words in cases:
            out = await call_tool(h, "set_timer", args)
            assert out.is_error and words in out.text, out.text
        other = await call_tool(h, "set_timer", {"after": "1h", "message": "x"}, session="other")
        out = await call_tool(h, "cancel_timer", {"timer_id": other.data["timer"]["timer_id"]})
        assert out.is_error and "no timer" in out.text
        out = await call_tool(h, "cancel_timer", {"timer_id": "t-nope"})
        assert out.is_error and "this session's timers are" in out.text


async def test_list_cancel_and_status(tmp_path: Path, model_server: FakeModelServer) -> None:
    """list_timers, /api/status and the task view show a timer until it is cancelled."""
    async with harness(settings_for(tmp_path, model_server)) as h:
        out = await call_tool(
            h, "set_timer", {"cron": "0 9 * * 1-5", "timezone": "Europe/Berlin", "message": "m"}
        )
        timer_id = out.data["timer"]["timer_id"]
        listed = await call_tool(h, "list_timers", {})
        assert [t["timer_id"] for t in listed.data["timers"]] == [timer_id]
        status = (await h.client.get("/api/status")).json()
        assert status["timers"]["active"] == 1
        views = [view("main") for view in h.running.registrations.task_views]
        described = [d for v in views if (d := v.describe(timer_id)) is not None]
        assert described[0]["state"] == "scheduled" and described[0]["kind"] == "timer"
        assert (await call_tool(h, "cancel_timer", {"timer_id": timer_id})).is_error is False
        assert (await call_tool(h, "list_timers", {})).data["timers"] == []
        assert (await h.client.get("/api/status")).json()["timers"]["active"] == 0
    assert stored_job_ids(tmp_path) == []


async def test_idle_scheduler_sleeps_until_the_next_fire_time(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """With one timer an hour away, the scheduler's only wake-up is armed for that hour."""
    async with harness(settings_for(tmp_path, model_server)) as h:
        await call_tool(h, "set_timer", {"after": "1h", "message": "later"})
        scheduler = _executor(h)._scheduler
        with anyio.fail_after(2):
            # The scheduler re-arms its one timer a loop turn later; no event to await.
            while getattr(scheduler, "_timeout", None) is None:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        delay = scheduler._timeout.when() - asyncio.get_running_loop().time()
        assert 3590 < delay <= 3600


async def test_reload_applies_config_timers_without_a_restart(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """SIGHUP's reload: unchanged keeps its next run, changed reschedules, removed goes,
    added is scheduled, and a tool's timer is never touched."""
    config = [
        {"name": "daily", "cron": "0 9 * * *", "timezone": "Europe/Berlin", "message": "m"},
        {"name": "hourly", "interval": "1h", "message": "h"},
        {"name": "weekly", "cron": "0 8 * * 1", "message": "w"},
    ]
    settings = settings_for(tmp_path, model_server, timers=_timer_configs(config))
    async with harness(settings) as h:
        await call_tool(h, "set_timer", {"after": "2h", "message": "mine"})
        before = next_fire_times((await h.client.get("/api/status")).json())
        (reloader,) = [r for r in h.running.reloadables if isinstance(r, TimersComponent)]
        changed = [
            config[0],
            {"name": "weekly", "cron": "0 8 * * 2", "message": "w"},
            {"name": "nightly", "cron": "0 23 * * *", "message": "n"},
        ]
        new = settings_for(tmp_path, model_server, timers=_timer_configs(changed))
        assert await reloader.reload(new) == ["timers"]
        after = next_fire_times((await h.client.get("/api/status")).json())
    tool_timer = next(t for t in before if not t.startswith("config:"))
    assert set(after) == {"config:daily", "config:weekly", "config:nightly", tool_timer}
    assert after["config:daily"] == before["config:daily"]
    assert after[tool_timer] == before[tool_timer]
    assert datetime.fromisoformat(after["config:weekly"]).weekday() == 1  # Tuesday now
    # Committed before the reload returned: the next start sees the same set.
    assert set(stored_job_ids(tmp_path)) == set(after)
