"""The status bar: code-maintained, last in the context, never stored."""

from __future__ import annotations

from datetime import UTC, datetime

from wakeful.core.loop.limits import LoopLimits, Run
from wakeful.core.loop.status_bar import STATUS_BAR_HEADER, render_status_bar


def test_status_bar_lists_time_tasks_timers_and_limits() -> None:
    """It shows the current time, running tasks with progress, timers and counters."""
    run = Run(LoopLimits(max_model_calls_per_run=7))
    run.model_calls = 2
    bar = render_status_bar(
        run,
        running_tasks=[
            {
                "task_id": "shell-1",
                "kind": "shell",
                "runtime_s": 12.4,
                "progress": "66%",
                "state": "running",
            }
        ],
        timers=[
            {"task_id": "t2", "next_fire_time": "2026-12-01T09:00:00Z", "message": "later"},
            {"task_id": "t1", "next_fire_time": "2026-11-30T09:00:00Z", "message": "sooner"},
        ],
        pending_events=3,
        now=datetime(2026, 11, 30, 8, 0, tzinfo=UTC),
    )
    lines = bar["content"].splitlines()
    assert bar["role"] == "user" and lines[0] == STATUS_BAR_HEADER
    assert "Current time: 2026-11-30 08:00:00 UTC (Monday)" in lines
    assert "Model calls this run: 2 of 7" in lines
    assert "Events waiting for the next safe point: 3" in lines
    assert "- shell-1: shell for 12 s, progress 66% (running)" in lines
    assert "Active timers: 2" in lines
    assert lines.index("- t1: next 2026-11-30T09:00:00Z sooner") < lines.index(
        "- t2: next 2026-12-01T09:00:00Z later"
    )
