"""``file``: a file or directory watched with ``watchfiles`` (inotify), changes debounced.

A path must lie in the workspace or one of ``[subscriptions] watch_paths``
(resolved, symlinks followed, by the same function the file tools use). A
single file is watched through its directory, filtered to its name, so an
editor that saves by renaming a new file over it is still seen. Changes
closer together than ``debounce_ms`` become one ``file.changed`` event;
changes made while the daemon was down are not reported (there is no one
to see them).

Each watch blocks a thread of its own (its own limiter: the daemon's shared
worker threads stay free for SQLite and IMAP) that the cancellation of the
subscription's task stops within one step.
"""

from __future__ import annotations

import fnmatch
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from watchfiles import Change
from watchfiles._rust_notify import RustNotify

from wakeful.channels.subscriptions.events import subscription_event
from wakeful.channels.subscriptions.kinds.base import Asking, Fire, Planned, Refusal, Report
from wakeful.channels.subscriptions.records import Kind, Subscription
from wakeful.channels.subscriptions.request import ConnectRequest
from wakeful.safety.confinement import Outside, resolve_inside
from wakeful.safety.effects import Effect, Reach

_MAX_LISTED = 20  # changed paths named in one event; the count is always exact
_IDLE_TIMEOUT_MS = 24 * 3600 * 1000  # the watch thread returns only on change or stop
_CHANGE_NAMES = {Change.added: "added", Change.modified: "modified", Change.deleted: "deleted"}


class FileKind:
    kind: Kind = "file"
    effect = Effect.CONTROL  # it reads names of files the agent may read anyway

    def __init__(
        self, watch_paths: Sequence[Path], debounce_ms: int, limiter: anyio.CapacityLimiter
    ) -> None:
        self._watch_paths = list(watch_paths)
        self._debounce_ms = debounce_ms
        # The granularity of the debounce, and how often the idle thread looks at its
        # stop flag (in Rust, without the GIL).
        self._step_ms = max(50, debounce_ms // 2)
        self._limiter = limiter

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
        inside = place == workspace.resolve() or place.is_relative_to(workspace.resolve())
        directory = place if place.is_dir() else place.parent
        only = None if place.is_dir() else place.name
        return Planned(
            {
                "path": str(place),
                "glob": request.glob,
                "_dir": str(directory),
                "_only": only,
                "_in_workspace": inside,
            }
        )

    async def watch(self, sub: Subscription, fire: Fire, report: Report) -> None:
        directory = anyio.Path(sub.spec["_dir"])
        if not await directory.is_dir():
            raise FileNotFoundError(f"{directory} no longer exists")
        stop = anyio.Event()
        with RustNotify([str(directory)], False, False, 300, True, False) as notify:
            await report(f"watching {sub.spec['path']}")
            while True:
                raw = await _watch_once(
                    notify, self._debounce_ms, self._step_ms, stop, self._limiter
                )
                if raw in ("stop", "timeout", "signal"):
                    continue
                changes = _matching(raw, sub.spec)
                if changes:
                    await fire(_event(sub, changes))

    def disarmed(self, sub: Subscription) -> None:
        pass  # the watch thread stops with the subscription's task


async def _watch_once(
    notify: RustNotify,
    debounce_ms: int,
    step_ms: int,
    stop: anyio.Event,
    limiter: anyio.CapacityLimiter,
) -> Any:
    """One blocking ``watch`` call; a cancellation sets ``stop``, which ends it within a step."""
    async with anyio.create_task_group() as group:

        async def stop_on_cancel() -> None:
            try:
                await anyio.sleep_forever()
            finally:
                stop.set()

        group.start_soon(stop_on_cancel)
        try:
            return await anyio.to_thread.run_sync(
                notify.watch, debounce_ms, step_ms, _IDLE_TIMEOUT_MS, stop, limiter=limiter
            )
        finally:
            group.cancel_scope.cancel()


def _matching(raw: set[tuple[int, str]], spec: dict[str, Any]) -> list[tuple[str, str]]:
    """(what happened, path) for the changes the subscription asked about, sorted."""
    root = Path(spec["path"])
    found = set()
    for code, text in raw:
        path = Path(text)
        if spec["_only"] is not None and path.name != spec["_only"]:
            continue
        if spec["glob"] and not fnmatch.fnmatch(path.name, spec["glob"]):
            continue
        if spec["_only"] is None and path == root:
            continue  # the directory's own metadata
        found.add((_CHANGE_NAMES.get(Change(code), "changed"), text))
    return sorted(found, key=lambda item: item[1])


def _event(sub: Subscription, changes: list[tuple[str, str]]) -> Any:
    listed = ", ".join(f"{what} {path}" for what, path in changes[:_MAX_LISTED])
    more = f" and {len(changes) - _MAX_LISTED} more" if len(changes) > _MAX_LISTED else ""
    count = f"{len(changes)} change{'s' if len(changes) != 1 else ''}"
    return subscription_event(
        sub,
        event_id=f"sub:{sub.id}:file:{uuid.uuid4().hex}",
        kind="file.changed",
        text=f"{count} under {sub.spec['path']}: {listed}{more}",
        data={
            "path": sub.spec["path"],
            "changes": [{"change": what, "path": path} for what, path in changes[:200]],
            "count": len(changes),
        },
        # The workspace is the daemon's own; other watched directories are written by others.
        origin_trusted=bool(sub.spec["_in_workspace"]),
        source_type="file",
    )
