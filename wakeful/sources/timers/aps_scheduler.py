"""APScheduler's scheduler classes, imported without scanning every installed package.

APScheduler 3's ``BaseScheduler`` class body reads the entry points of every installed
distribution three times (``apscheduler.triggers``, ``.executors``, ``.jobstores``) to
map alias names such as ``"cron"`` or ``"memory"`` to plugins: ~12 ms of start → READY
in a development environment, more the more packages are installed. The timers never
name a plugin by alias (the trigger, the job store and the executor are passed as
objects), so the scan is put off: while the module is imported the scan finds nothing,
and each of the three tables is read from the entry points the first time anything
looks an alias up in it, as it would have been.
"""

from __future__ import annotations

import importlib.metadata
import sys
from collections.abc import Iterator, Mapping
from typing import Any

_PLUGIN_TABLES = {
    "_trigger_plugins": "apscheduler.triggers",
    "_executor_plugins": "apscheduler.executors",
    "_jobstore_plugins": "apscheduler.jobstores",
}


class PluginsOnDemand(Mapping[str, Any]):
    """An alias → entry point table read from the installed packages on first use."""

    def __init__(self, group: str) -> None:
        self.group = group
        self._table: dict[str, Any] | None = None

    def _read(self) -> dict[str, Any]:
        if self._table is None:
            found = importlib.metadata.entry_points(group=self.group)
            self._table = {entry.name: entry for entry in found}
        return self._table

    def __getitem__(self, alias: str) -> Any:
        return self._read()[alias]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())


def _import_base_without_scan() -> None:
    if "apscheduler.schedulers.base" in sys.modules:
        return  # imported already (its tables read): nothing left to save
    scan = importlib.metadata.entry_points
    importlib.metadata.entry_points = _nothing  # type: ignore[assignment]
    try:
        from apscheduler.schedulers import base
    finally:
        importlib.metadata.entry_points = scan
    base.entry_points = scan  # its own name for it, bound while the scan was put off
    for attribute, group in _PLUGIN_TABLES.items():
        setattr(base.BaseScheduler, attribute, PluginsOnDemand(group))


def _nothing(**selection: Any) -> importlib.metadata.EntryPoints:
    return importlib.metadata.EntryPoints(())


_import_base_without_scan()

from apscheduler.schedulers.asyncio import AsyncIOScheduler  # noqa: E402
from apscheduler.schedulers.base import BaseScheduler  # noqa: E402

__all__ = ["AsyncIOScheduler", "BaseScheduler", "PluginsOnDemand"]
