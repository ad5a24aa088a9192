"""The session loops: one per session, created on first use, each under its supervisor.

The supervisors run in one task group (the daemon's); a loop that raises is
restarted by its own supervisor (:mod:`wakeful.daemon.loop.supervisor`), so
no session can take the daemon down.

A session a component ended for good (a cancelled subagent) is *closed*: its
loop starts no run again, in this process — a component that keeps such
sessions across restarts closes them again before sessions resume.
"""

from __future__ import annotations

import anyio
import structlog
from anyio.abc import TaskGroup

from wakeful.daemon.loop.deps import LoopDeps, Submit
from wakeful.daemon.loop.session_loop import SessionLoop
from wakeful.daemon.loop.supervisor import PoisonGate, SessionSupervisor

log = structlog.get_logger(__name__)


class Sessions:
    def __init__(self, deps: LoopDeps, group: TaskGroup, submit: Submit) -> None:
        self._deps = deps
        self._group = group
        self._submit = submit
        self._loops: dict[str, SessionLoop] = {}
        self.supervisors: dict[str, SessionSupervisor] = {}
        self._closed: dict[str, str] = {}  # session → why it was closed

    @property
    def deps(self) -> LoopDeps:
        """What every session loop shares (the status reads its model health)."""
        return self._deps

    def get(self, session: str) -> SessionLoop:
        loop = self._loops.get(session)
        if loop is None:
            loop = self._loops[session] = SessionLoop(session, self._deps, self._submit)
            if session in self._closed:
                loop.close(self._closed[session])
            supervisor = self.supervisors[session] = self._supervise(loop)
            self._group.start_soon(supervisor.run, name=f"session {session}")
        return loop

    def _supervise(self, loop: SessionLoop) -> SessionSupervisor:
        deps, limits = self._deps, self._deps.limits
        gate = PoisonGate(loop.session, deps.store, limits.max_event_crashes, self._submit)
        return SessionSupervisor(
            loop,
            gate,
            deps.store,
            first_backoff_s=limits.restart_backoff_s,
            max_backoff_s=limits.max_restart_backoff_s,
        )

    async def close(self, session: str, cause: str) -> None:
        """End ``session`` for good: its run is cut short (running tool calls stopped),
        its background tasks (shell commands, its own subagents) are cancelled, and it
        starts no run again."""
        self._closed[session] = cause
        loop = self._loops.get(session)
        if loop is None:
            return
        loop.close(cause)
        for task in loop.all_tasks.running():
            task_id = str(task.get("task_id", task.get("id", "")))
            try:
                await loop.all_tasks.cancel(task_id)
            except Exception:  # one task that cannot be stopped must not keep the others
                log.exception("could not cancel a closed session's task", task_id=task_id)

    def is_closed(self, session: str) -> bool:
        return session in self._closed

    def is_busy(self, session: str) -> bool:
        loop = self._loops.get(session)
        return loop is not None and loop.busy

    def all(self) -> list[SessionLoop]:
        return list(self._loops.values())

    async def drain(self, bound_s: float, cleanup_s: float) -> list[str]:
        """Let every loop reach a safe point within ``bound_s``; then force the rest.

        Forced loops drop their model stream and write placeholders for their
        running tools (within ``cleanup_s``). Returns the sessions that were forced.
        """
        loops = self.all()
        async with anyio.create_task_group() as group:
            for loop in loops:
                group.start_soon(_drain_one, loop, bound_s, cleanup_s)
        return [loop.session for loop in loops if loop.forced_stop]


async def _drain_one(loop: SessionLoop, bound_s: float, cleanup_s: float) -> None:
    with anyio.move_on_after(bound_s):
        await loop.drain()
        return
    loop.stop_now()
    with anyio.move_on_after(cleanup_s):
        await loop.drain()
