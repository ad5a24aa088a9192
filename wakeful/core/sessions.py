"""The session loops: one per session, created on first use, each under its supervisor.

The supervisors run in one task group (the daemon's); a loop that raises is
restarted by its own supervisor (:mod:`wakeful.core.loop.supervisor`), so
no session can take the daemon down.

A session a component ended for good (a cancelled subagent) is *closed*: its
loop starts no run again, in this process — a component that keeps such
sessions across restarts closes them again before sessions resume.

In a fleet (``fleet``) a loop runs only for the sessions this daemon owns:
:meth:`Sessions.get` still gives a loop object (the dispatcher reads whether it
is busy), but only :meth:`Sessions.adopt` (the fleet member, once it holds the
session's lease) starts it, and :meth:`Sessions.release` or a refused write
(the lease was lost) ends it, and :meth:`Sessions.hand_off` ends an idle one the
fleet gives to another daemon. Each started loop runs in a cancel scope of its own.
"""

from __future__ import annotations

import anyio
import structlog
from anyio.abc import TaskGroup

from wakeful.core.fleet_port import FleetPort
from wakeful.core.loop.deps import LoopDeps, Submit
from wakeful.core.loop.session_loop import SessionLoop
from wakeful.core.loop.supervisor import PoisonGate, SessionSupervisor
from wakeful.kernel import tracing

log = structlog.get_logger(__name__)


class Sessions:
    def __init__(
        self,
        deps: LoopDeps,
        group: TaskGroup,
        submit: Submit,
        *,
        fleet: FleetPort | None = None,
    ) -> None:
        """``fleet``: a loop runs only once this daemon owns its session, and the fleet
        is told when one ends here for good (it forgets the lease)."""
        self._deps = deps
        self._group = group
        self._submit = submit
        self._fleet = fleet
        self._loops: dict[str, SessionLoop] = {}
        self._running: dict[str, anyio.CancelScope] = {}
        self._ended: dict[str, anyio.Event] = {}  # set once the loop's task has returned
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
            if self._fleet is None:
                self._start(loop)
        return loop

    def owns(self, session: str) -> bool:
        """Its loop runs here (always, for a single daemon, once it was asked for)."""
        return session in self._running

    def adopt(self, session: str) -> SessionLoop:
        """Start the session's loop (fleet: this daemon now holds its lease). A fresh
        loop: whatever an earlier owner wrote is read from the store, not a cache."""
        if session in self._running:
            return self._loops[session]
        loop = self._loops[session] = SessionLoop(session, self._deps, self._submit)
        if session in self._closed:
            loop.close(self._closed[session])
        self._start(loop)
        return loop

    def release(self, session: str) -> None:
        """End the session's loop here (fleet: its lease went to another daemon)."""
        scope = self._running.pop(session, None)
        if scope is not None:
            scope.cancel()
            self._loops.pop(session, None)
            self.supervisors.pop(session, None)

    def resting(self) -> list[str]:
        """The sessions running here whose loop is at rest (see SessionLoop.at_rest)."""
        return [session for session in self._running if self._loops[session].at_rest]

    async def hand_off(self, session: str) -> None:
        """End a resting session's loop here; returns once its task has returned (the
        fleet gives the session to another daemon next). The caller took ``session``
        from :meth:`resting` with no pause since, so no run started after that check."""
        ended = self._ended.get(session)
        self.release(session)
        if ended is not None:
            await ended.wait()

    def _start(self, loop: SessionLoop) -> None:
        supervisor = self.supervisors[loop.session] = self._supervise(loop)
        scope = self._running[loop.session] = anyio.CancelScope()
        ended = self._ended[loop.session] = anyio.Event()
        # The task copies the current context: not the span of the event that asked for
        # the session first (its runs continue each event's trace themselves).
        with tracing.tracer().detached():
            self._group.start_soon(
                self._run, supervisor, scope, ended, name=f"session {loop.session}"
            )

    async def _run(
        self, supervisor: SessionSupervisor, scope: anyio.CancelScope, ended: anyio.Event
    ) -> None:
        try:
            await self._supervised(supervisor, scope)
        finally:
            ended.set()
            if self._ended.get(supervisor.loop.session) is ended:
                del self._ended[supervisor.loop.session]

    async def _supervised(self, supervisor: SessionSupervisor, scope: anyio.CancelScope) -> None:
        session = supervisor.loop.session
        with scope:
            try:
                await supervisor.run()  # returns only when another daemon owns the session
            except* Exception as failed:
                # Only cleanup after a release can raise here (the placeholders of its
                # running tools, refused: the session is another daemon's now).
                log.warning("session let go", session=session, error=str(failed.exceptions[0]))
        if self._running.get(session) is scope:
            del self._running[session]
            self._loops.pop(session, None)
            self.supervisors.pop(session, None)
        if session not in self._running and self._fleet is not None:
            self._fleet.let_go(session)  # not taken again meanwhile (a newer lease)

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

    def wake_all(self) -> None:
        """Every loop looks at its queue again; one with nothing waiting rests at once."""
        for loop in self.all():
            loop.notify()

    def is_busy(self, session: str) -> bool:
        loop = self._loops.get(session)
        return loop is not None and loop.busy

    def all(self) -> list[SessionLoop]:
        """The loops running here."""
        return [self._loops[session] for session in self._running]

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
