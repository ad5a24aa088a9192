"""Disk and memory, measured once per ``check_interval_s`` and when the kernel says so.

The only periodic wake-up of the package: one timer, once a minute by
default. A PSI trigger (``pressure_trigger.py``) wakes the check early when
tasks stall on memory, so pressure is seen within a window, not a minute.
"""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import structlog

from wakeful.sources.system import disk, memory
from wakeful.sources.system.alerts import AlertBook
from wakeful.sources.system.config import SystemSection
from wakeful.sources.system.pressure_trigger import PressureTrigger, open_trigger
from wakeful.sources.system.waiting import until_change_or

log = structlog.get_logger(__name__)

STILL_STALLING_AVG10 = 1.0  # % of the last 10 s with some task waiting on memory


class ResourceWatch:
    def __init__(self, book: AlertBook, config: SystemSection, data_dir: Path) -> None:
        self._book = book
        self._config = config
        self._data_dir = data_dir
        self._stalled = anyio.Event()
        self.trigger_note = "off ([system] memory_psi_stall_ms = 0)"
        self.checks = 0

    async def first_check(self) -> None:
        """At start-up, before the daemon is ready: what is wrong is said at once, and
        episodes from before a restart whose condition has gone are resolved."""
        await self.check(stalled=False)
        why = "the condition was gone when the daemon started again"
        await self._book.settle_unseen(disk.CONDITION, why)
        await self._book.settle_unseen(memory.CONDITION, why)

    async def run(self) -> None:
        """After :meth:`first_check`: check on the timer or when the kernel says so."""
        trigger = self._open_trigger()
        async with anyio.create_task_group() as group:
            if trigger is not None:
                group.start_soon(self._watch_pressure, trigger)
            await self._check_forever()

    def _open_trigger(self) -> PressureTrigger | None:
        stall_ms = self._config.memory_psi_stall_ms
        if not stall_ms:
            return None
        opened = open_trigger(stall_ms, self._config.memory_psi_window_s)
        if isinstance(opened, str):
            self.trigger_note = opened + "; memory is checked every check_interval_s"
            log.info("memory pressure trigger unavailable", detail=opened)
            return None
        self.trigger_note = f"armed: some {stall_ms} ms per {self._config.memory_psi_window_s:g} s"
        return opened

    async def _watch_pressure(self, trigger: PressureTrigger) -> None:
        try:
            await trigger.watch(self.on_stall)
        finally:
            trigger.close()

    def on_stall(self) -> None:
        """The kernel reported a memory stall: check now, not at the next interval."""
        self._stalled.set()  # the current event: each check replaces it

    async def _check_forever(self) -> None:
        while True:
            await until_change_or(self._stalled, time.time() + self._config.check_interval_s)
            stalled = self._stalled.is_set()
            self._stalled = anyio.Event()
            await self.check(stalled=stalled)

    async def check(self, *, stalled: bool) -> None:
        self.checks += 1
        config = self._config
        if config.disk_free_min_mb or config.disk_free_min_percent:
            # Inline, not in a worker thread: statvfs of the data directory (where the
            # store already writes) takes microseconds, and the hop to a thread and back
            # would triple the context switches of each minute's one wake-up.
            reading = disk.read_disk(self._data_dir)
            problem = disk.disk_problem(reading, config)
            if problem is not None:
                await self._book.raise_(
                    disk.CONDITION, problem, priority="urgent", free_mb=round(reading.free_mb, 1)
                )
            else:
                await self._book.resolve(disk.CONDITION, disk.disk_fine(reading))
        now = memory.read_memory()
        # Once alerted, a stall lasts while the 10 s average shows it, so a trigger
        # firing every window does not open and close an episode each time.
        stalling = self._book.is_active(memory.CONDITION) and (
            (now.stall_avg10 or 0.0) >= STILL_STALLING_AVG10
        )
        trouble = memory.memory_problem(now, config, stalled=stalled or stalling)
        if trouble is not None:
            await self._book.raise_(
                memory.CONDITION,
                trouble,
                priority="urgent",
                rss_mb=now.rss_mb,
                available_mb=now.available_mb,
                psi_some_avg10=now.stall_avg10,
            )
        else:
            await self._book.resolve(memory.CONDITION, memory.memory_fine(now))
