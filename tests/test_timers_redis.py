"""Timers with the Redis backend: the jobs are shared and each run fires once across daemons."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
import pytest
import redis

from tests.fleet_components import FleetMember, fleet_settings, run_member
from tests.redis_server import REDIS_URL
from wakeful.app.config import Settings
from wakeful.core.components.context import ComponentSetup
from wakeful.kernel.schedules import make_schedule
from wakeful.sources.timers.component import TimersComponent
from wakeful.sources.timers.config import TimerConfig
from wakeful.sources.timers.service import TimerRequest

pytestmark = pytest.mark.anyio


class ObservedTimers(TimersComponent):
    """The timers component, telling the test when a fire has settled (event and bookkeeping)."""

    async def configure(self, setup: ComponentSetup) -> None:
        await super().configure(setup)
        self.fired = anyio.Event()
        self.executor.on_outcome = lambda fire, outcome: self.fired.set()


def settings(tmp_path: Path, name: str, prefix: str, *timers: TimerConfig) -> Settings:
    base = fleet_settings(tmp_path / name, prefix, scheduler={"misfire_grace_s": 60})
    return base.model_copy(update={"timers": list(timers)})


async def wait_for_runs(members: list[FleetMember], count: int, timeout_s: float = 8) -> None:
    with anyio.fail_after(timeout_s):
        while len({e.id for m in members for e in m.submitted}) < count:
            async with anyio.create_task_group() as group:
                for member in members:

                    async def one(m: FleetMember = member) -> None:
                        await m.next_submit()
                        group.cancel_scope.cancel()

                    group.start_soon(one)


async def test_two_daemons_fire_each_scheduled_run_once(tmp_path: Path, redis_prefix: str) -> None:
    """Two timer components on one prefix with the same config timer: one submit per run."""
    tick = TimerConfig(name="tick", interval="1s", message="tick")
    first, second = TimersComponent(), TimersComponent()
    async with run_member("a", first, settings(tmp_path, "a", redis_prefix, tick)) as a:
        await first.store.flush()  # the job is in Redis before the second daemon reads it
        async with run_member("b", second, settings(tmp_path, "b", redis_prefix, tick)) as b:
            assert [t["timer_id"] for t in second.service.timers()] == ["config:tick"]
            await wait_for_runs([a, b], 3)
    submitted = Counter(e.id for m in (a, b) for e in m.submitted)
    assert submitted and all(n == 1 for n in submitted.values()), submitted
    stored = [e for e in await _events(redis_prefix) if e.startswith("timer:config:tick:")]
    assert sorted(stored) == sorted(submitted)


async def _events(prefix: str) -> list[str]:
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        return [k.removeprefix(f"{prefix}ev:") for k in client.scan_iter(match=f"{prefix}ev:*")]
    finally:
        client.close()


async def test_a_timer_set_on_one_daemon_fires_on_another(
    tmp_path: Path, redis_prefix: str
) -> None:
    """A timer a tool set on daemon A is known to B at once; with A gone, B fires it."""
    first, second = TimersComponent(), ObservedTimers()
    async with run_member("b", second, settings(tmp_path, "b", redis_prefix)) as b:
        async with run_member("a", first, settings(tmp_path, "a", redis_prefix)) as a:
            schedule = make_schedule(after="2s")
            first.service.add(TimerRequest(schedule, "from a", "main"), "t-shared")
            cancelled = make_schedule(after="2s")
            first.service.add(TimerRequest(cancelled, "never", "main"), "t-cancelled")
            await first.store.flush()
            first.service.cancel("t-cancelled")
            await first.store.flush()
        assert a.submitted == []  # A stopped before the run fell due
        with anyio.fail_after(5):
            await second.fired.wait()
        assert second.service.get("t-cancelled") is None  # removed on A, so on B too
    assert [e.id.split(":")[1] for e in b.submitted] == ["t-shared"]


async def test_a_run_claimed_elsewhere_is_not_fired_and_pending_fires_replay(
    tmp_path: Path, redis_prefix: str
) -> None:
    """A fire left in flight by a daemon that died is replayed by the next one that starts."""
    first = TimersComponent()
    async with run_member("a", first, settings(tmp_path, "a", redis_prefix)):
        due = datetime.now(UTC) + timedelta(hours=1)
        first.service.add(TimerRequest(make_schedule(at=due.isoformat()), "m", "main"), "t-x")
        await first.store.flush()
    # A died between claiming a run and committing its event: its claim and fire remain.
    run_time = (datetime.now(UTC) - timedelta(seconds=1)).isoformat()
    body = {"message": "m", "session": "main", "timer_id": "t-x", "name": ""}
    fire = json.dumps({"job_id": "t-x", "run_time": run_time, "body": body})
    client = redis.Redis.from_url(REDIS_URL, decode_responses=True)
    client.hset(f"{redis_prefix}timer:fires", f"t-x {run_time}", fire)
    client.close()
    second = ObservedTimers()
    async with run_member("b", second, settings(tmp_path, "b", redis_prefix)) as b:
        with anyio.fail_after(5):
            await second.fired.wait()
        await second.store.flush()
    assert [e.kind for e in b.submitted] == ["timer.trigger"]
    assert not redis.Redis.from_url(REDIS_URL).hlen(f"{redis_prefix}timer:fires")


async def test_timers_in_the_sqlite_file_move_to_redis_once(
    tmp_path: Path, redis_prefix: str
) -> None:
    """A daemon switched to the Redis backend keeps the timers its SQLite file held."""
    on_sqlite = fleet_settings(tmp_path / "a", redis_prefix)
    on_sqlite = on_sqlite.model_copy(
        update={"store": on_sqlite.store.model_copy(update={"backend": "sqlite"})}
    )
    before = TimersComponent()
    async with run_member("a", before, on_sqlite):
        before.service.add(TimerRequest(make_schedule(after="1h"), "kept", "main"), "t-kept")
        await before.store.flush()
    after = TimersComponent()
    async with run_member("a", after, settings(tmp_path, "a", redis_prefix)):
        assert [t["message"] for t in after.service.timers()] == ["kept"]
    again = TimersComponent()  # the file was emptied: nothing is imported a second time
    async with run_member("a", again, settings(tmp_path, "a", redis_prefix)):
        again.service.cancel("t-kept")
        await again.store.flush()
    last = TimersComponent()
    async with run_member("a", last, settings(tmp_path, "a", redis_prefix)):
        assert last.service.timers() == []
