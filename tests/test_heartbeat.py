"""The heartbeat (issue 24): it checks in without the model, and calls the model only
when a check found something. Proved on a real daemon with a simulated clock (each
beat is run at a chosen moment; the component's own sleep is 30 minutes away): 24
hours with nothing happening → 0 model requests; one finished background task → one
request at the next beat, and none at the beat after.

The schedule's invariant (hypothesis): the next beat is after now, inside the active
hours, on the interval's grid of its day, and no active grid point is skipped."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.daemon_harness import Harness, daemon_settings, harness, watch_feed
from tests.fakes.model_replies import ToolCallSpec
from tests.fakes.model_server import FakeModelServer, Reply
from wakeful.app.components import default_components
from wakeful.sources.heartbeat.component import HeartbeatComponent
from wakeful.sources.heartbeat.config import HeartbeatSection
from wakeful.sources.heartbeat.schedule import active, next_beat

pytestmark = pytest.mark.anyio
DAY = datetime(2026, 12, 3, tzinfo=UTC)


def test_beats_keep_to_the_grid_and_the_active_hours() -> None:
    section = HeartbeatSection(
        every_minutes=30, active_hours="08:00-22:00", timezone="Europe/Berlin"
    )
    zone = ZoneInfo("Europe/Berlin")
    at = datetime(2026, 12, 3, 21, 10, tzinfo=UTC)  # 22:10 in Berlin: the window has closed
    assert next_beat(at, section, zone) == datetime(2026, 12, 4, 7, 0, tzinfo=UTC)
    at = datetime(2026, 12, 3, 9, 5, tzinfo=UTC)  # 10:05 in Berlin
    assert next_beat(at, section, zone) == datetime(2026, 12, 3, 9, 30, tzinfo=UTC)


@settings(max_examples=300, deadline=None)
@given(
    every=st.sampled_from([1, 7, 15, 30, 45, 60, 90, 240, 1440]),
    start=st.integers(0, 23),
    end=st.integers(0, 24),
    zone=st.sampled_from(["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"]),
    offset_s=st.integers(0, 400 * 24 * 3600),
)
def test_the_next_beat_is_the_first_one(
    every: int, start: int, end: int, zone: str, offset_s: int
) -> None:
    """After now, inside the active hours, never more than a day and a step away, the
    same from any moment before it (no beat in between), and within one step while the
    window stays open (a narrow window still gets its beat at its start)."""
    section = HeartbeatSection(
        every_minutes=every, active_hours=f"{start:02d}:00-{end:02d}:00", timezone=zone
    )
    tz = ZoneInfo(zone)
    now = DAY + timedelta(seconds=offset_s)
    beat = next_beat(now, section, tz)
    step = timedelta(minutes=every)
    assert now < beat <= now + timedelta(days=1, hours=2) + step
    assert active(beat, section, tz)
    for between in (now + (beat - now) / 3, beat - timedelta(seconds=1)):
        if between > now:
            assert next_beat(between, section, tz) == beat
    if active(now, section, tz) and active(now + step, section, tz):
        assert beat <= now + step


async def test_a_reload_cuts_the_sleep_short_and_the_beat_follows_the_new_schedule(
    tmp_path: Path, model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run loop sleeps until tomorrow's beat; a reload to another interval wakes it
    and it beats when the new schedule says. The real schedule's grid is whole minutes
    (tests/test_heartbeat_reload.py checks the moved time on a real process), so here a
    schedule that puts the first section's beat a day away (the real grid would put a
    daily beat at the next midnight, which may be minutes away) and a 30-minute
    section's next beat 0.2 s away stands for the wait."""

    def soon_for_the_new_interval(
        now: datetime, section: HeartbeatSection, zone: ZoneInfo
    ) -> datetime:
        if section.every_minutes == 30:
            return now + timedelta(seconds=0.2)
        return now + timedelta(days=1)

    monkeypatch.setattr("wakeful.sources.heartbeat.component.next_beat", soon_for_the_new_interval)
    settings_ = daemon_settings(
        tmp_path, model_server.base_url, heartbeat={"enabled": True, "every_minutes": 1440}
    )
    components, heart = with_heartbeat(settings_)
    async with harness(settings_, components):
        with anyio.fail_after(10):
            while heart.next_due is None:  # noqa: ASYNC110 — the run loop has no event
                await anyio.sleep(0.01)
        assert heart.next_due > datetime.now(UTC) + timedelta(hours=1)
        assert heart.beats == 0
        await heart.reload(
            settings_.model_copy(update={"heartbeat": HeartbeatSection(enabled=True)})
        )
        with anyio.fail_after(5):
            while heart.beats == 0:  # noqa: ASYNC110 — the run loop has no event
                await anyio.sleep(0.02)
    assert model_server.requests == []  # nothing found: no model call


def with_heartbeat(h_settings: Any) -> tuple[list[Any], HeartbeatComponent]:
    components = default_components(h_settings)
    (beat,) = [c for c in components if isinstance(c, HeartbeatComponent)]
    return components, beat


def heartbeat_requests(model_server: FakeModelServer) -> list[dict[str, Any]]:
    return [
        r.body
        for r in model_server.requests
        if any(
            "Heartbeat: the daemon's checks" in str(m.get("content")) for m in r.body["messages"]
        )
    ]


async def until_exited(h: Harness) -> None:
    """The shell task's exit reached the main session (it was answered)."""

    async def exited() -> bool:
        events = await h.daemon.event_log("main", limit=100)
        return any(e["kind"] == "shell.exited" and e["status"] == "consumed" for e in events)

    with anyio.fail_after(20):
        # The store has no "changed" event to wait on from here: polled.
        while not await exited():  # noqa: ASYNC110
            await anyio.sleep(0.05)


async def idle(h: Harness, session: str) -> None:
    loop = h.daemon.sessions.get(session)
    async with watch_feed(h, session) as feed:
        if loop.busy:
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", 20)


async def test_an_idle_day_costs_no_model_call_and_a_finished_task_costs_one(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    settings_ = daemon_settings(tmp_path, model_server.base_url, heartbeat={"enabled": True})
    components, heart = with_heartbeat(settings_)
    async with harness(settings_, components) as h:
        moment = DAY
        for _ in range(48):  # a day of beats, every 30 minutes, nothing happening
            moment = next_beat(moment, heart.section, ZoneInfo("UTC"))
            assert await heart.beat(moment) == []
        assert model_server.requests == [] and heart.beats == 48

        start = ToolCallSpec("start_shell", {"command": "true"})
        model_server.push(Reply(tool_calls=[start]), Reply(text="Started."))
        await h.send("run true in the background")
        await until_exited(h)
        await idle(h, "main")
        checklist = settings_.safety.workspace_path(tmp_path) / "HEARTBEAT.md"
        await anyio.Path(checklist).write_text("- tell the owner of failed backups\n")
        before = len(model_server.requests)
        moment = next_beat(moment, heart.section, ZoneInfo("UTC"))
        async with watch_feed(h, "heartbeat") as feed:
            found = await heart.beat(moment)
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", 20)
        assert [f.key.split(":")[0] for f in found] == ["task"], found
        assert len(model_server.requests) == before + 1
        (asked,) = heartbeat_requests(model_server)
        assert "tell the owner of failed backups" in str(asked["messages"][-2]["content"])
        moment = next_beat(moment, heart.section, ZoneInfo("UTC"))
        assert await heart.beat(moment) == []  # said once
        status = (await h.client.get("/api/status")).json()["heartbeat"]
    assert len(model_server.requests) == before + 1
    assert {k: status[k] for k in ("beats", "findings")} == {"beats": 50, "findings": 1}
    assert datetime.fromisoformat(status["next_beat"]) > datetime.now(UTC)  # the run loop's


def test_the_guides_example_config_loads_as_written(tmp_path: Path) -> None:
    from tests.test_documented_commands import ROOT
    from wakeful.app.config import load_settings

    text = (ROOT / "docs" / "heartbeat.md").read_text()
    path = tmp_path / "wakeful.toml"
    path.write_text(text.split("```toml\n", 1)[1].split("```", 1)[0])
    section = load_settings(path).heartbeat
    assert section.enabled and section.active_hours == "08:00-22:00"
    assert section.timezone == "Europe/Berlin" and section.session == "heartbeat"


def test_a_bad_active_hours_is_one_clear_line(tmp_path: Path) -> None:
    from wakeful.app.config import load_settings
    from wakeful.kernel.config_base import ConfigError

    path = tmp_path / "wakeful.toml"
    path.write_text('[heartbeat]\nenabled = true\nactive_hours = "8-22"\n')
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    assert "active_hours" in str(caught.value) and "HH:MM-HH:MM" in str(caught.value)


async def test_with_a_fast_model_the_heartbeat_asks_it_and_the_owner_gets_the_main_one(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """[llm] fast_model names a cheaper model: the heartbeat's session calls it; the
    owner's own session still calls [llm] model."""
    llm = {"fast_model": "fake-nano"}
    settings_ = daemon_settings(
        tmp_path, model_server.base_url, heartbeat={"enabled": True}, llm=llm
    )
    components, heart = with_heartbeat(settings_)
    async with harness(settings_, components) as h:
        moment = next_beat(DAY, heart.section, ZoneInfo("UTC"))
        assert await heart.beat(moment) == []  # the first look: nothing from before counts
        model_server.push(Reply(tool_calls=[ToolCallSpec("start_shell", {"command": "true"})]))
        await h.send("run true in the background")
        await until_exited(h)
        await idle(h, "main")
        async with watch_feed(h, "heartbeat") as feed:
            assert await heart.beat(next_beat(moment, heart.section, ZoneInfo("UTC")))
            await feed.wait_for(lambda i: i["type"] == "run" and i["state"] == "idle", 20)
    (asked,) = heartbeat_requests(model_server)
    assert asked["model"] == "fake-nano"
    owners = [
        r.body for r in model_server.requests if r.body not in heartbeat_requests(model_server)
    ]
    assert owners and {b["model"] for b in owners} == {"fake-model"}
