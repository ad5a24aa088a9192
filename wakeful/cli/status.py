"""`wakeful status` made short: each session's running tasks and its few latest finished
ones, one line each; the rest is a count; the safety block as what needs the owner
(pending approvals, tainted sessions, tripped breakers) with the command for each;
with a fleet, its daemons, the stream and what was dead-lettered (``--json`` shows
everything)."""

from __future__ import annotations

from typing import Any

RECENT_FINISHED = 3
PREVIEW_CHARS = 60


def compact_status(status: dict[str, Any]) -> dict[str, Any]:
    """The status with each session's task list cut down to lines."""
    safety = status.get("safety")
    if isinstance(safety, dict):
        status = {**status, "safety": compact_safety(safety)}
    fleet = status.get("fleet")
    if isinstance(fleet, dict):
        status = {**status, "fleet": compact_fleet(fleet)}
    sessions = status.get("sessions")
    if not isinstance(sessions, dict):
        return status
    compact = {
        name: _compact_session(info) if isinstance(info, dict) else info
        for name, info in sessions.items()
    }
    return {**status, "sessions": compact}


def compact_safety(safety: dict[str, Any]) -> dict[str, Any]:
    """What waits for the owner, one line each, with the command that acts on it."""
    pending = safety.get("pending_approvals") or 0
    tainted = safety.get("tainted") or {}
    breaker = safety.get("breaker") or {}
    trip_after = breaker.get("trip_after")
    denials = breaker.get("denials") or {}
    tripped = {
        session: count
        for session, count in denials.items()
        if isinstance(count, int) and isinstance(trip_after, int) and count >= trip_after
    }
    approvals = f"{pending}" + (" (`wakeful approvals` lists them)" if pending else "")
    return {
        "pending approvals": approvals,
        "tainted sessions": [
            f"{session}: since {taint.get('since')}, by {taint.get('summary')}"
            f" (`wakeful taint clear {session}` trusts it again)"
            for session, taint in tainted.items()
            if isinstance(taint, dict)
        ],
        "tripped breakers": [
            f"{session}: {count} denied calls (`wakeful breaker reset {session}`)"
            for session, count in tripped.items()
        ],
    }


def compact_fleet(fleet: dict[str, Any]) -> dict[str, Any]:
    """The daemons sharing the prefix, one line each; the stream; what was dead-lettered."""
    me = fleet.get("me")
    daemons = []
    for name, row in sorted((fleet.get("daemons") or {}).items()):
        if not isinstance(row, dict):
            continue
        sessions = row.get("sessions") or []
        info = row.get("info") or {}
        state = "alive" if row.get("alive") else "silent (its sessions move when leases lapse)"
        daemons.append(
            f"{name}{' (this one)' if name == me else ''}: {state}, {info.get('url', '?')},"
            f" {len(sessions)} session(s) {', '.join(sorted(sessions))}".rstrip()
            + f"; {row.get('pending', 0)} entries held"
        )
    dead = fleet.get("dead") or {}
    return {
        "daemons": daemons,
        "stream": (
            f"{fleet.get('entries', 0)} entries, {fleet.get('pending', 0)} delivered and not"
            f" yet consumed, lag {fleet.get('lag', 0)} (not yet delivered)"
        ),
        "dead-lettered": [
            f"{row.get('id')} ({row.get('session')}): {row.get('reason')}"
            f" (`wakeful events retry {row.get('id')}`)"
            for row in dead.get("newest") or []
            if isinstance(row, dict)
        ]
        or f"{dead.get('count', 0)}",
    }


def _compact_session(info: dict[str, Any]) -> dict[str, Any]:
    tasks = [t for t in info.get("tasks") or [] if isinstance(t, dict)]
    running = [t for t in tasks if t.get("state") == "running"]
    finished = [t for t in tasks if t.get("state") != "running"]
    lines = [task_line(t) for t in running + finished[-RECENT_FINISHED:]]
    older = len(finished) - RECENT_FINISHED
    if older > 0:
        lines.append(f"(+{older} older finished task{'s' if older != 1 else ''})")
    compact: dict[str, Any] = {**info, "tasks": lines}
    plan = info.get("plan")
    if isinstance(plan, dict):
        compact["plan"] = plan_lines(plan)
    context = info.get("context")
    if isinstance(context, dict):
        compact["context"] = context_line(context)
    return compact


def plan_lines(plan: dict[str, Any]) -> list[str] | str:
    """``[2] draft the answer (in_progress, due …)`` per step; "none" without a plan."""
    items = [i for i in plan.get("items") or [] if isinstance(i, dict)]
    if not items:
        return "none"
    lines = []
    for number, item in enumerate(items, 1):
        due = f", due {item['due']}" if item.get("due") else ""
        lines.append(f"[{number}] {item.get('title')} ({item.get('status')}{due})")
    if plan.get("tainted"):
        lines.append("(written while the session was tainted)")
    return lines


def context_line(context: dict[str, Any]) -> str:
    """``12345 of 119808 tokens, 2 compactions, 14 results pruned`` (+ a problem)."""
    line = f"{context.get('tokens', 0)} of {context.get('budget', '?')} tokens"
    if context.get("compactions"):
        line += f", {context['compactions']} compactions"
    if context.get("pruned_results"):
        line += f", {context['pruned_results']} results pruned"
    if context.get("compaction_breaker", "closed") != "closed":
        line += (
            f", compaction breaker {context['compaction_breaker']} after "
            f"{context.get('failed_compactions', '?')} failed compactions"
        )
    if context.get("last_problem"):
        line += f"; PROBLEM: {context['last_problem']}"
    return line


def task_line(task: dict[str, Any]) -> str:
    """``id  tool  state  runtime  first line of the result (or the arguments)``."""
    name = task.get("tool") or task.get("kind") or "task"
    runtime = task.get("runtime_s")
    fields = [str(task.get("task_id", "?")), str(name), str(task.get("state", "?"))]
    if isinstance(runtime, int | float):
        fields.append(f"{runtime:g}s")
    detail = task.get("result_preview") or task.get("arguments") or ""
    text = " ".join(str(detail).split())
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1] + "…"
    return "  ".join(fields) + (f"  {text}" if text else "")
