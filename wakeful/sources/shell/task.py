"""One background shell task as the daemon tracks it while it runs."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import anyio

from wakeful.sources.shell.lines import OutputTail, format_progress
from wakeful.sources.shell.monitor import Patterns, RateLimiter
from wakeful.sources.shell.records import RUNNING, TaskRecord
from wakeful.tools.effect_text import short_command

STATUS_LINES = 10  # last lines shown by task_status and cancel_task


class Stop(StrEnum):
    """Why wakeful stopped a task (it was not left to end by itself)."""

    CANCEL = "cancelled with cancel_task"
    SHUTDOWN = "the daemon stopped"
    ERROR = "wakeful stopped it after an internal error"
    TIMEOUT = "stopped at its declared limit_s (kill_on_timeout)"


@dataclass
class ShellTask:
    record: TaskRecord
    tail: OutputTail
    patterns: Patterns
    limiter: RateLimiter
    started_mono: float = field(default_factory=time.monotonic)
    finished_mono: float | None = None
    stop: Stop | None = None  # set when we stop it
    stop_detail: str = ""
    done: anyio.Event = field(default_factory=anyio.Event)
    suppressed: anyio.Event = field(default_factory=anyio.Event)  # wakes the summariser

    @property
    def task_id(self) -> str:
        return self.record.task_id

    @property
    def session(self) -> str:
        return self.record.session

    @property
    def running(self) -> bool:
        return self.record.state == RUNNING

    @property
    def output_file(self) -> Path:
        return Path(self.record.output_file)

    def runtime_s(self) -> float:
        if self.record.duration_s is not None:
            return self.record.duration_s
        return (self.finished_mono or time.monotonic()) - self.started_mono

    def progress(self) -> str | None:
        percent = self.tail.progress if self.running else self.record.progress
        return None if percent is None else format_progress(percent)

    def last_lines(self, n: int = STATUS_LINES) -> list[str]:
        if self.tail.lines == 0:  # a task known only from its record (before a restart)
            return self.record.last_lines[-n:]
        return self.tail.last(n)

    def describe(self) -> dict[str, Any]:
        runtime = round(self.runtime_s(), 1)
        info: dict[str, Any] = {
            "task_id": self.task_id,
            "kind": "shell",
            "command": self.record.command,
            "state": self.record.state,
            "runtime_s": runtime,
            "progress": self.progress(),
            "last_lines": self.last_lines(),
            "output_lines": self.tail.lines,
            "output_file": self.record.output_file,
            "summary": self._summary(runtime),
        }
        if not self.running:
            info["exit_code"] = self.record.exit_code
            if self.record.reason:
                info["reason"] = self.record.reason
        if self.record.limit_s is not None:
            info["limit_s"] = self.record.limit_s
            info["kill_on_timeout"] = self.record.kill_on_timeout
            info["past_limit"] = self.record.timed_out
        if self.patterns:
            info["monitored_patterns"] = self.patterns.describe()
        if self.limiter.suppressed_total:
            info["matches_suppressed_by_rate_limit"] = self.limiter.suppressed_total
        return info

    def _summary(self, runtime: float) -> str:
        text = (
            f"shell `{short_command(self.record.command)}` {self.record.state} for {runtime:.0f} s"
        )
        progress = self.progress()
        return f"{text}, progress {progress}" if progress else text
