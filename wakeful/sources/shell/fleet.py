"""Shell tasks when daemons share Redis: whose process it is, and telling its session if that
daemon is gone.

A task belongs to the daemon that runs its process; its record stays a file
in that daemon's data directory (``records.py``). Where daemons share the store
(Redis: it hands out a ``Coordination``) every record not yet reported is also
listed in the roster ``shell:tasks`` (task id → owner and record) and each daemon
holds a lease ``shell:owner:<owner>`` while its shell component runs. Every daemon looks
through the list once per lease TTL: a task whose owner's lease lapsed (or
whose owner's process on this host has ended) is reported to its session by
whichever daemon notices — ``shell.exited`` with the owner-gone text if it
was still running, else the report its owner would have made at its next
start. The event id is the task's one end-of-task id, so the owner reporting
it too after a restart, or two daemons noticing at once, stores one event.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import anyio
import structlog

from wakeful.core.front_door import DaemonUnavailable
from wakeful.kernel.events import Event
from wakeful.sources.shell import events
from wakeful.sources.shell.manager import Submit
from wakeful.sources.shell.records import RUNNING, RecordStore, TaskRecord
from wakeful.sources.shell.task import Stop
from wakeful.store.base import StoreUnavailable
from wakeful.store.fleet.holders import holder_process_gone
from wakeful.store.fleet.port import Coordination

log = structlog.get_logger(__name__)

TASKS = "shell:tasks"  # the roster: task id → its owner and record


def owner_lease(owner: str) -> str:
    return f"shell:owner:{owner}"


class TaskRoster:
    """The fleet's list of unreported shell tasks and this daemon's lease on its own."""

    def __init__(self, coordination: Coordination, ttl_s: float) -> None:
        self.owner = coordination.holder
        self._coordination = coordination
        self._tasks = coordination.roster(TASKS)
        self._lease = coordination.lease(owner_lease(self.owner), ttl_s=ttl_s)

    async def publish(self, record: TaskRecord) -> None:
        """List the task while its end is unreported; drop it once reported."""
        try:
            if record.reported:
                await self._tasks.delete(record.task_id)
            else:
                entry = json.dumps({"owner": self.owner, "record": asdict(record)})
                await self._tasks.put(record.task_id, entry)
        except StoreUnavailable as exc:  # the file record is the task's truth; this is a notice
            log.warning("cannot list a shell task in Redis", task_id=record.task_id, error=str(exc))

    async def claim_lease(self) -> None:
        """Take our lease before the first task is listed under our name."""
        await self._lease.acquire()

    async def hold(self, submit: Submit) -> None:
        """Until cancelled: renew our lease; report tasks of gone owners every TTL."""

        async def sweep_forever() -> None:
            while True:
                await self.report_orphans(submit)
                await anyio.sleep(self._lease.ttl_s)

        await self._lease.hold(sweep_forever)

    async def report_orphans(self, submit: Submit) -> int:
        """Report every listed task whose owner is gone; how many were reported."""
        try:
            entries = await self._tasks.entries()
        except StoreUnavailable as exc:
            log.warning("cannot read the fleet's shell tasks", error=str(exc))
            return 0
        reported = 0
        for task_id, raw in entries.items():
            try:
                owner = str(json.loads(raw)["owner"])
                if owner != self.owner and await self._gone(owner):
                    reported += await self._report(task_id, raw, submit)
            except Exception:  # one bad entry (or a store blip) must not stop the others
                log.exception("cannot report a shell task of the fleet", task_id=task_id)
        return reported

    async def _gone(self, owner: str) -> bool:
        return holder_process_gone(owner) or await self._coordination.lapsed(owner_lease(owner))

    async def _report(self, task_id: str, raw: str, submit: Submit) -> int:
        entry = json.loads(raw)
        record = TaskRecord(**entry["record"])
        event = orphan_event(record, str(entry["owner"]))
        try:
            await submit(event)  # first: a sweeper dying here leaves the entry for the next
        except (DaemonUnavailable, StoreUnavailable) as exc:
            log.warning("shell task of a gone daemon not reported yet", task_id=task_id,
                        error=str(exc))  # fmt: skip
            return 0
        await self._tasks.delete_if(task_id, raw)
        log.warning("shell task of a daemon that is gone reported", task_id=task_id,
                    owner=entry["owner"], state=record.state)  # fmt: skip
        return 1


def orphan_event(record: TaskRecord, owner: str) -> Event:
    """The end report for a task whose daemon is gone, as its session should hear it."""
    if record.state != RUNNING:
        if record.reason == Stop.SHUTDOWN.value:
            return events.stopped_at_shutdown_event(record)
        lines = "\n".join(record.last_lines) or "(no output)"
        return events.exited_event(record, f"[its last {len(record.last_lines)} lines]\n{lines}", 0)
    record.state = "lost"
    record.reason = (
        f"The daemon running it ({owner}) stopped: nothing on this daemon can tell whether "
        f"the command still runs there; its output file is on that daemon's host."
    )
    return events.owner_gone_event(record)


class FleetRecordStore(RecordStore):
    """Task records as files, each save also listed in the fleet's roster."""

    def __init__(self, directory: Path, roster: TaskRoster, *, logs: Path | None = None) -> None:
        super().__init__(directory, logs=logs)
        self.roster = roster

    async def save(self, record: TaskRecord) -> None:
        await super().save(record)
        await self.roster.publish(record)
