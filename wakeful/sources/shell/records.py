"""Durable records of background shell tasks: one JSON file per task.

Why files and not a table in ``wakeful.db``: a record is written twice per
task (start, end) and read only at start-up, so it needs no queries; a file
per task sits next to the task's output file under ``<data_dir>/tasks/``,
works whatever the event store backend is (SQLite or Redis), and never takes
the event store's write lock, which webhook ingest and the loop contend for.
Each write goes to a temporary file, is fsynced and renamed over the old
one, so a crash leaves the old record or the new one, never half of either.

A record also says how to recognise the task's process group after a
restart (boot id and the leader's start time), so a pid that the kernel has
since reused for something else is never killed by mistake.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import anyio.to_thread

from wakeful.kernel.atomic_file import write_atomic

RUNNING = "running"


@dataclass
class TaskRecord:
    task_id: str
    session: str
    command: str
    cwd: str
    started_at: float  # wall clock (time.time())
    output_file: str
    pgid: int | None = None
    boot_id: str = ""
    leader_start_ticks: int | None = None
    state: str = RUNNING
    exit_code: int | None = None
    finished_at: float | None = None
    reason: str = ""  # why it ended when it did not end by itself
    duration_s: float | None = None
    last_lines: list[str] = field(default_factory=list)
    progress: float | None = None
    reported: bool = False  # its end was committed as an event
    # Started by a tainted run: its events are untrusted too (what a stranger
    # asked for must not come back later as the daemon's own word).
    tainted_by: str | None = None
    # The limit declared at start (start_shell's limit_s): past it a process.timeout
    # event goes to the session, and the task is stopped only with kill_on_timeout.
    limit_s: float | None = None
    kill_on_timeout: bool = False
    timed_out: bool = False

    @classmethod
    def from_json(cls, raw: str) -> TaskRecord:
        data: dict[str, Any] = json.loads(raw)
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


# Every readable record, and a note for each file that could not be read.
Loaded = tuple[list[TaskRecord], list[str]]


class RecordStore:
    def __init__(self, directory: Path, *, logs: Path | None = None) -> None:
        self.directory = directory
        # Where each task's full output goes: the daemon puts it among the saved
        # outputs, the one place outside the workspace read_file may read.
        self.logs = logs if logs is not None else directory

    def path_for(self, task_id: str, suffix: str) -> Path:
        return self.directory / f"{task_id}{suffix}"

    def log_path(self, task_id: str) -> Path:
        return self.logs / f"{task_id}.log"

    async def save(self, record: TaskRecord) -> None:
        await anyio.to_thread.run_sync(self._write, record)

    def _write(self, record: TaskRecord) -> None:
        path = self.path_for(record.task_id, ".json")
        write_atomic(path, json.dumps(asdict(record), ensure_ascii=False))

    async def remove(self, record: TaskRecord) -> None:
        """Delete a record and its output file."""

        def unlink() -> None:
            Path(record.output_file).unlink(missing_ok=True)
            self.path_for(record.task_id, ".json").unlink(missing_ok=True)

        await anyio.to_thread.run_sync(unlink)

    async def load_all(self) -> Loaded:
        """Every readable record, and a note for each file that could not be read."""
        return await anyio.to_thread.run_sync(self._read_all)

    def _read_all(self) -> tuple[list[TaskRecord], list[str]]:
        records, problems = [], []
        for path in sorted(self.directory.glob("*.json")):
            try:
                records.append(TaskRecord.from_json(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError) as exc:
                problems.append(f"{path}: {exc}")
        return records, problems


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot), or None if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2 :].split()
    # Field 22 of stat is starttime; fields here start at field 3.
    return int(fields[19]) if len(fields) > 19 else None


def still_ours(record: TaskRecord) -> bool:
    """Whether the record's process group id can still only be the task's group.

    After a reboot nothing of it survives. While any member of a group lives,
    the kernel does not reuse its id as a pid; so the id is the task's unless
    a new process now holds the leader's pid (a different start time).
    """
    if record.pgid is None or record.pgid <= 1 or record.pgid == os.getpgrp():
        return False  # a damaged record must never make us signal init or ourselves
    if not record.boot_id or record.boot_id != boot_id():
        return False
    ticks = start_ticks(record.pgid)
    return ticks is None or ticks == record.leader_start_ticks
