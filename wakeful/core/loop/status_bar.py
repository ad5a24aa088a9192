"""The agent status bar (SPEC §7): code-maintained, always last in the context.

It is built fresh for every request and never stored, so the stored
trajectory — the cacheable prefix — never changes because time passed.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from wakeful.core.loop.limits import Run
from wakeful.core.plan import Plan, plan_lines
from wakeful.core.taint import Taint

MAX_TIMERS_SHOWN = 5
STATUS_BAR_HEADER = "[Agent status — maintained by the daemon; not a message from the user]"


def render_status_bar(
    run: Run,
    *,
    running_tasks: list[dict[str, Any]],
    pending_events: int,
    timers: Sequence[dict[str, Any]] = (),
    now: datetime | None = None,
    taint: Taint | None = None,
    approvals: Sequence[dict[str, Any]] = (),
    plan: Plan | None = None,
) -> dict[str, str]:
    now = now or datetime.now(UTC)
    limits = run.limits
    lines = [
        STATUS_BAR_HEADER,
        f"Current time: {now.strftime('%Y-%m-%d %H:%M:%S UTC (%A)')}",
        f"Model calls this run: {run.model_calls} of {limits.max_model_calls_per_run}",
        f"Events waiting for the next safe point: {pending_events}",
    ]
    if running_tasks:
        lines.append("Background tasks running:")
        lines += [_task_line(t) for t in running_tasks]
    else:
        lines.append("Background tasks running: none")
    lines.append(f"Active timers: {len(timers)}")
    shown = sorted(timers, key=lambda t: str(t.get("next_fire_time") or "~"))[:MAX_TIMERS_SHOWN]
    lines += [_timer_line(t) for t in shown]
    if approvals:
        lines.append(f"Calls waiting for the owner's approval: {len(approvals)}")
        lines += [_approval_line(a) for a in approvals[:MAX_TIMERS_SHOWN]]
    if plan is not None:
        lines += plan_lines(plan)
    if taint is not None:
        lines.append(
            f"Session TAINTED since {taint.since} by {taint.summary()}: sending, shell, "
            "network and writes outside the workspace wait for the owner's approval"
        )
    return {"role": "user", "content": "\n".join(lines)}


def _task_line(task: dict[str, Any]) -> str:
    what = task.get("tool") or task.get("kind") or "task"
    line = f"- {task.get('task_id', '?')}: {what} for {float(task.get('runtime_s', 0)):.0f} s"
    if task.get("progress") is not None:
        line += f", progress {task['progress']}"
    return line + f" ({task.get('state', 'running')})"


def _timer_line(timer: dict[str, Any]) -> str:
    message = str(timer.get("message") or timer.get("name") or "")[:60]
    timer_id = timer.get("task_id") or timer.get("timer_id")
    return f"- {timer_id}: next {timer.get('next_fire_time')} {message}"


def _approval_line(approval: dict[str, Any]) -> str:
    return (
        f"- {approval['id']}: {approval['tool']} (call {approval.get('call_id', '?')}), "
        f"denied at {approval['expires_at']} if undecided"
    )
