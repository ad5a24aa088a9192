"""Shell tasks with the Redis backend: a task's session is told by another daemon when the
daemon running it is gone, never while it lives."""

from __future__ import annotations

import json
import time
from dataclasses import asdict
from pathlib import Path

import anyio
import pytest
import redis

from tests.fleet_components import FleetMember, fleet_settings, run_member
from tests.redis_server import REDIS_URL
from wakeful.app.config import Settings
from wakeful.sources.shell.component import ShellComponent
from wakeful.sources.shell.records import TaskRecord

pytestmark = pytest.mark.anyio
TTL_S = 0.3


class QuickNotice(ShellComponent):
    lease_ttl_s = TTL_S  # a gone daemon is noticed within about two of these


def settings(tmp_path: Path, name: str, prefix: str) -> Settings:
    return fleet_settings(tmp_path / name, prefix)


def exits(member: FleetMember) -> list[str]:
    return [e.content.text for e in member.submitted if e.kind == "shell.exited"]


async def wait_for_exit(member: FleetMember, timeout_s: float = 5) -> str:
    with anyio.fail_after(timeout_s):
        while not exits(member):
            await member.next_submit()
    [text] = exits(member)
    return text


async def test_a_stopped_daemons_task_is_reported_by_another(
    tmp_path: Path, redis_prefix: str
) -> None:
    """A's running task is left alone while A lives; when A stops, B tells its session."""
    first, second = QuickNotice(), QuickNotice()
    async with run_member("b", second, settings(tmp_path, "b", redis_prefix)) as b:
        async with run_member("a", first, settings(tmp_path, "a", redis_prefix)) as a:
            task = await first.manager.start("main", "sleep 30", tmp_path, [])
            await anyio.sleep(3 * TTL_S)  # B sweeps several times while A runs the task
            assert exits(b) == []
            a.stop()
            await a.stopped.wait()
        text = await wait_for_exit(b)
    assert exits(a) == []  # a daemon stopping cannot commit the report itself
    assert task.task_id in text and "because the daemon shut down" in text
    assert [e.id for e in b.submitted] == [f"shell:{task.task_id}:exit"]


async def test_a_task_of_a_killed_daemon_is_reported_lost(
    tmp_path: Path, redis_prefix: str
) -> None:
    """A task listed by a daemon that died (its lease lapsed) is reported lost, once."""
    record = TaskRecord(
        "shell-dead0001", "main", "make build", str(tmp_path), time.time(), "/x.log"
    )
    entry = {"owner": "elsewhere:4242:deadbeef", "record": asdict(record)}
    client = redis.Redis.from_url(REDIS_URL)
    client.hset(f"{redis_prefix}shell:tasks", record.task_id, json.dumps(entry))
    client.close()
    first, second = QuickNotice(), QuickNotice()
    async with (
        run_member("a", first, settings(tmp_path, "a", redis_prefix)) as a,
        run_member("b", second, settings(tmp_path, "b", redis_prefix)) as b,
    ):
        with anyio.fail_after(5):
            while not (exits(a) or exits(b)):  # noqa: ASYNC110 - either daemon may notice
                await anyio.sleep(0.02)
        await anyio.sleep(3 * TTL_S)  # later sweeps find nothing more to report
    texts = exits(a) + exits(b)
    assert len(texts) == 1 or texts[0] == texts[1]  # two noticing at once: one stored event
    assert "the daemon running it stopped" in texts[0] and "elsewhere:4242" in texts[0]
    assert not redis.Redis.from_url(REDIS_URL).hlen(f"{redis_prefix}shell:tasks")
