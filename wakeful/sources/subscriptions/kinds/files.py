"""``file``: a file or directory watched with inotify, changes debounced.

A path must lie in the workspace or one of ``[subscriptions] watch_paths``
(resolved, symlinks followed, by the same function the file tools use). A
single file is watched through its directory, filtered to its name, so an
editor that saves by renaming a new file over it is still seen. Changes
closer together than ``debounce_ms`` become one ``file.changed`` event;
changes made while the daemon was down are not reported (there is no one
to see them).

Every file subscription's watches live in one inotify descriptor awaited on
the event loop (kinds/inotify.py): one per subscription would spend a
per-user kernel limit (128 instances by default) that every program of the
user shares; no thread, and no wake-up while nothing changes. Disconnecting
removes only that subscription's watches. A burst of changes ends when none
came for half of ``debounce_ms`` (at least 50 ms) or ``debounce_ms`` after
its first.
"""

from __future__ import annotations

import fnmatch
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from wakeful.core.effects import Effect, Reach
from wakeful.kernel.event_kinds import EventKind
from wakeful.safety.confinement import Outside, resolve_inside
from wakeful.sources.subscriptions.events import subscription_event
from wakeful.sources.subscriptions.kinds.base import Asking, Fire, Planned, Refusal, Report
from wakeful.sources.subscriptions.kinds.inotify import DirectoryWatch, Inotify, net_changes
from wakeful.sources.subscriptions.records import Kind, Subscription
from wakeful.sources.subscriptions.request import ConnectRequest

_MAX_LISTED = 20  # changed paths named in one event; the count is always exact


class FileKind:
    kind: Kind = "file"
    effect = Effect.CONTROL  # it reads names of files the agent may read anyway

    def __init__(self, watch_paths: Sequence[Path], debounce_ms: int) -> None:
        self._watch_paths = list(watch_paths)
        self._debounce_ms = debounce_ms
        self._quiet_ms = max(50, debounce_ms // 2)  # a pause this long ends a burst
        self.inotify = Inotify()  # shared by every file subscription of this daemon

    def reach(self, request: ConnectRequest) -> Reach:
        return Reach()  # confined here, to the workspace *or* watch_paths (see plan)

    async def plan(self, request: ConnectRequest, asking: Asking) -> Planned:
        if not request.path:
            raise Refusal(
                "path: a file subscription needs path, a file or directory relative to the "
                'workspace, e.g. {"kind": "file", "path": "reports", "glob": "*.csv"}'
            )
        workspace = asking.workspace
        place = resolve_inside(request.path, workspace, also=self._watch_paths)
        if isinstance(place, Outside):
            extra = (
                f" or [subscriptions] watch_paths ({', '.join(map(str, self._watch_paths))})"
                if self._watch_paths
                else " (the operator can allow more in [subscriptions] watch_paths)"
            )
            raise Refusal(f"path: {place.reason.split('; ')[0]}; watch inside the workspace{extra}")
        if not place.exists():
            raise Refusal(f"path: {request.path} ({place}) does not exist; create it first")
        directory = place if place.is_dir() else place.parent
        only = None if place.is_dir() else place.name
        return Planned(
            {
                "path": str(place),
                "glob": request.glob,
                "_dir": str(directory),
                "_only": only,
            }
        )

    async def watch(self, sub: Subscription, fire: Fire, report: Report) -> None:
        directory = anyio.Path(sub.spec["_dir"])
        if not await directory.is_dir():
            raise FileNotFoundError(f"{directory} no longer exists")
        # A single file is watched through its directory alone; a directory, with its tree.
        recursive = sub.spec["_only"] is None
        watching = DirectoryWatch(Path(directory), recursive=recursive, inotify=self.inotify)
        async with watching as watch:
            await report(f"watching {sub.spec['path']}")
            while True:
                batch = await watch.next_batch(self._quiet_ms, self._debounce_ms)
                changes = _matching(net_changes(batch), sub.spec)
                if changes:
                    await fire(_event(sub, changes))

    def disarmed(self, sub: Subscription) -> None:
        pass  # the watch closes with the subscription's task


def _matching(net: dict[str, str], spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(what happened, path) for the changes the subscription asked about, sorted."""
    root = Path(spec["path"])
    found = set()
    for text, what in net.items():
        path = Path(text)
        if what == "changed":  # the kernel dropped events: only "something changed" is known
            found.add((what, text))
            continue
        if spec["_only"] is not None and path.name != spec["_only"]:
            continue
        if spec["glob"] and not fnmatch.fnmatch(path.name, spec["glob"]):
            continue
        if spec["_only"] is None and path == root:
            continue  # the directory's own metadata
        found.add((what, text))
    return sorted(found, key=lambda item: item[1])


def _event(sub: Subscription, changes: list[tuple[str, str]]) -> Any:
    listed = ", ".join(f"{what} {path}" for what, path in changes[:_MAX_LISTED])
    more = f" and {len(changes) - _MAX_LISTED} more" if len(changes) > _MAX_LISTED else ""
    count = f"{len(changes)} change{'s' if len(changes) != 1 else ''}"
    return subscription_event(
        sub,
        event_id=f"sub:{sub.id}:file:{uuid.uuid4().hex}",
        kind=EventKind.FILE_CHANGED,
        text=f"{count} under {sub.spec['path']}: {listed}{more}",
        data={
            "path": sub.spec["path"],
            "changes": [{"change": what, "path": path} for what, path in changes[:200]],
            "count": len(changes),
        },
        source_type="file",
    )
