"""The beat's checks: deterministic, cheap (store reads, no model), each finding said
once. What they read: every session's plan (items now due and not done), background
tasks (finished since they were last looked at), approvals waiting on the owner too
long, and events quarantined after crashing their session — and beside them every
check another component offered (``ComponentSetup.add_check``: unread mail, stale
subscriptions, open alerts), each bounded by a timeout: one that fails or hangs is a
finding of its own, never a crashed beat.

A finding carries ids, states and the agent's own titles — never a task's output or a
third party's words: the event it becomes is the daemon's own report.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import structlog

from wakeful.core.approvals import Approvals
from wakeful.core.heartbeat_checks import Finding, HeartbeatCheck
from wakeful.core.loop.task_views import SessionTaskViews
from wakeful.core.plan import PlanStatus, SessionPlans
from wakeful.store.base import Store

SEEN_KEY = "heartbeat:seen"
MAX_SEEN = 2000  # finding keys remembered (the oldest go first)
CHECK_TIMEOUT_S = 10.0  # a component's check longer than this is a failed check

log = structlog.get_logger(__name__)

__all__ = ["CHECK_TIMEOUT_S", "Checks", "Finding"]


class Checks:
    def __init__(
        self,
        store: Store,
        plans: SessionPlans,
        approvals: Approvals,
        task_views: Callable[[], Sequence[SessionTaskViews]],
        approval_waiting: timedelta,
        skip_session: str,
        offered: Callable[[], Mapping[str, HeartbeatCheck]] = dict,
    ) -> None:
        self._store = store
        self._plans = plans
        self._approvals = approvals
        self._task_views = task_views
        self.approval_waiting = approval_waiting
        self._skip = skip_session  # the heartbeat's own session: its tasks are its own
        self._seen: list[str] | None = None
        self._offered = offered  # read at each beat: components configure after this one
        self.timeout_s = CHECK_TIMEOUT_S

    async def run(self, now: datetime) -> list[Finding]:
        """Every check, then only what was not said before (remembered in the store)."""
        first_look = await self._load_seen()
        sessions = [s for s in await self._store.sessions() if s != self._skip]
        found = [
            *await self._plan_due(sessions, now),
            *self._tasks_finished(sessions),
            *await self._approvals_waiting(now),
            *await self._quarantined(),
            *await self._components(now),
        ]
        seen = set(self._seen or [])
        new = [f for f in found if f.key not in seen]
        if first_look:  # finished tasks from before the heartbeat was on: not news
            new = [f for f in new if not f.key.startswith("task:")]
            self._remember([f.key for f in found if f.key.startswith("task:")])
        return new

    async def said(self, findings: Sequence[Finding]) -> None:
        """The findings were handed over: never again."""
        self._remember([f.key for f in findings])
        await self._store.put_state(SEEN_KEY, json.dumps(self._seen))

    async def _load_seen(self) -> bool:
        if self._seen is not None:
            return False
        raw = await self._store.get_state(SEEN_KEY)
        self._seen = list(json.loads(raw)) if raw else []
        return raw is None

    def _remember(self, keys: Sequence[str]) -> None:
        seen = self._seen if self._seen is not None else []
        known = set(seen)
        seen.extend(k for k in keys if k not in known)
        self._seen = seen[-MAX_SEEN:]

    async def _plan_due(self, sessions: Sequence[str], now: datetime) -> list[Finding]:
        found = []
        for session in sessions:
            plan = await self._plans.get(session)
            for number, item in enumerate(plan.items, start=1):
                if item.due is None or item.status is PlanStatus.DONE:
                    continue
                if datetime.fromisoformat(item.due) <= now:
                    label = " (the plan was written while that session was tainted)"
                    found.append(
                        Finding(
                            f"plan:{session}:{item.title}:{item.due}",
                            f"plan item [{number}] of session {session!r} is due since "
                            f"{item.due} and {item.status.value}: {item.title!r}"
                            + (label if plan.tainted else ""),
                        )
                    )
        return found

    def _tasks_finished(self, sessions: Sequence[str]) -> list[Finding]:
        found = []
        for session in sessions:
            for views in self._task_views():
                for task in views(session).list_tasks():
                    if task.get("kind") != "shell" or task.get("state") == "running":
                        continue
                    found.append(
                        Finding(
                            f"task:{task['task_id']}",
                            f"background task {task['task_id']} of session {session!r} "
                            f"{_ended(task)} (task_status {task['task_id']} has its output)",
                        )
                    )
        return found

    async def _approvals_waiting(self, now: datetime) -> list[Finding]:
        found = []
        for approval in await self._approvals.pending(None):
            since = datetime.fromisoformat(approval.requested_at)
            if since.tzinfo is None:
                since = since.replace(tzinfo=UTC)
            if now - since >= self.approval_waiting:
                found.append(
                    Finding(
                        f"approval:{approval.id}",
                        f"approval {approval.id} ({approval.tool}, session "
                        f"{approval.session!r}) has waited for the owner since "
                        f"{approval.requested_at}",
                    )
                )
        return found

    async def _components(self, now: datetime) -> list[Finding]:
        found: list[Finding] = []
        offered = dict(self._offered())
        # Side by side: a slow check delays the beat by at most one timeout.
        async with anyio.create_task_group() as group:
            for name, check in sorted(offered.items()):
                group.start_soon(_run_offered, name, check, self.timeout_s, now, found)
        return sorted(found, key=lambda f: f.key)

    async def _quarantined(self) -> list[Finding]:
        return [
            Finding(
                f"quarantined:{stored.event.id}",
                f"event {stored.event.id} ({stored.event.kind}, session "
                f"{stored.event.session!r}) is quarantined after crashing its session; "
                f"the owner can retry it: wakeful events retry {stored.event.id}",
            )
            for stored in await self._store.quarantined()
        ]


async def _run_offered(
    name: str, check: HeartbeatCheck, timeout_s: float, now: datetime, out: list[Finding]
) -> None:
    """One component's check; its failure or its hang is one finding (once a day)."""
    failed = Finding(f"check-failed:{name}:{now.date().isoformat()}", "")
    try:
        with anyio.fail_after(timeout_s):
            out.extend(await check())
        return
    except TimeoutError:
        why = f"no answer within {timeout_s:g} s"
    except Exception as exc:  # any failure of a component's check: reported, the beat goes on
        # The type only: an exception's message may quote a server (a third party).
        why = type(exc).__name__
        log.warning("heartbeat check failed", check=name, error=f"{why}: {exc}")
    out.append(Finding(failed.key, f"check {name} failed: {why}"))


def _ended(task: dict[str, Any]) -> str:
    state = str(task.get("state"))
    code = task.get("exit_code")
    return f"ended: {state}" + (f", exit code {code}" if code is not None else "")
