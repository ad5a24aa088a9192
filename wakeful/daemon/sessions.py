"""The session loops: one per session, created on first use, owned by one task group."""

from __future__ import annotations

from anyio.abc import TaskGroup

from wakeful.daemon.loop.session_loop import LoopDeps, SessionLoop


class Sessions:
    def __init__(self, deps: LoopDeps, group: TaskGroup) -> None:
        self._deps = deps
        self._group = group
        self._loops: dict[str, SessionLoop] = {}

    def get(self, session: str) -> SessionLoop:
        loop = self._loops.get(session)
        if loop is None:
            loop = self._loops[session] = SessionLoop(session, self._deps)
            self._group.start_soon(loop.run_forever, self._group, name=f"session {session}")
        return loop

    def is_busy(self, session: str) -> bool:
        loop = self._loops.get(session)
        return loop is not None and loop.busy

    def all(self) -> list[SessionLoop]:
        return list(self._loops.values())
