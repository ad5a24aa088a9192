"""SIGHUP re-reads [heartbeat] (a real `wakeful run` process): the run loop's sleep is
cut short and the next beat follows the new interval, active hours and time zone. A
session change waits for a restart. That the run loop then beats at the moved time is
tests/test_heartbeat.py's (the grid is whole minutes: waiting here took up to a minute)."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from tests.daemon_process import DaemonProcess, free_port, write_config
from wakeful.sources.heartbeat.config import HeartbeatSection
from wakeful.sources.heartbeat.schedule import next_beat


def status(daemon: DaemonProcess) -> dict[str, Any]:
    with daemon.client() as client:
        heartbeat: dict[str, Any] = client.get("/api/status").json()["heartbeat"]
    return heartbeat


def until_status(daemon: DaemonProcess, test: Any, timeout_s: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        # The daemon's status has no stream to wait on from another process: polled.
        if test(current := status(daemon)):
            return current
        time.sleep(0.2)
    raise TimeoutError(f"heartbeat status never matched: {status(daemon)}")


def with_heartbeat(base: str, **keys: object) -> str:
    lines = [f"{k} = {v!r}" if isinstance(v, str) else f"{k} = {v}" for k, v in keys.items()]
    return base + "[heartbeat]\nenabled = true\n" + "\n".join(lines).replace("'", '"') + "\n"


def test_sighup_moves_the_next_beat_to_the_new_schedule(tmp_path: Path) -> None:
    port = free_port()
    config = write_config(tmp_path / "data", None, port)
    base = config.read_text()
    # Once a day at midnight: no beat during the test unless the reload takes.
    config.write_text(with_heartbeat(base, every_minutes=1440))
    before = datetime.now(UTC)
    with DaemonProcess(config, port) as daemon:
        first = until_status(daemon, lambda s: s["next_beat"] is not None, 10)
        # The next midnight after the daemon's start: the one after `before`, or the one
        # after it when a midnight passed while the daemon started.
        day = before.date() + timedelta(days=1)
        midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
        assert datetime.fromisoformat(first["next_beat"]) in (
            midnight,
            midnight + timedelta(days=1),
        )

        # Every minute (the shortest interval, so the test sees a beat within one).
        config.write_text(with_heartbeat(base, every_minutes=1, session="elsewhere"))
        daemon.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
        daemon.wait_for_log("configuration reloaded")
        moved = until_status(daemon, lambda s: s["next_beat"] != first["next_beat"], 10)
        assert datetime.fromisoformat(moved["next_beat"]) <= datetime.now(UTC) + timedelta(
            seconds=61
        )
        (summary,) = [r for r in daemon.records() if r["event"] == "configuration reloaded"]
        assert "heartbeat.every_minutes" in summary["reloaded_by_components"]
        assert any(
            "heartbeat.session changes at the next start" in r["event"] for r in daemon.records()
        )

        # Active hours two hours ahead, in another zone: the next beat is their start.
        zone = "Asia/Kolkata"
        local = datetime.now(ZoneInfo(zone))
        hours = f"{(local.hour + 2) % 24:02d}:00-{(local.hour + 3) % 24 or 24:02d}:00"
        config.write_text(with_heartbeat(base, active_hours=hours, timezone=zone))
        daemon.proc.send_signal(signal.SIGHUP)  # type: ignore[union-attr]
        daemon.wait_for_log("configuration reloaded", count=2)
        later = until_status(daemon, lambda s: s["next_beat"] != moved["next_beat"], 10)
        due = datetime.fromisoformat(later["next_beat"])
        section = HeartbeatSection(active_hours=hours, timezone=zone)
        assert due == next_beat(datetime.now(UTC), section, ZoneInfo(zone))
        assert due.astimezone(ZoneInfo(zone)).hour == (local.hour + 2) % 24
        assert due - datetime.now(UTC) > timedelta(minutes=59)
