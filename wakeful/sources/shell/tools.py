"""start_shell and monitor_shell: long commands in the background (SPEC §6)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field

from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.kernel.field_defaults import empty_list
from wakeful.safety.sandbox import off_result_text
from wakeful.sources.shell.manager import ShellTaskManager
from wakeful.sources.shell.monitor import Pattern, PatternError
from wakeful.tools.effect_text import command_effect
from wakeful.tools.shell import preflight


class StartShell:
    name = "start_shell"
    group = "background shells"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Start a shell command (/bin/sh -c) in the background, in the workspace; returns a "
        "task id at once; a shell.exited event arrives when it finishes (exit status, "
        "duration, the first and last lines of its output and the file holding all of it); "
        "use monitor_shell to be told about output lines. Use it for commands that take "
        "longer than a minute or so (long builds, test suites, downloads, batch jobs) or "
        "that should run side by side; use shell_exec for quick ones. patterns (optional) "
        "are texts: each output line containing one raises a shell.output event "
        "(rate-limited). task_status(task_id) shows its state, runtime, last lines and "
        "progress (the last percentage it printed); cancel_task(task_id) stops its whole "
        "process group. limit_s (optional) declares how long it should take: past it a "
        "process.timeout event arrives and it keeps running, unless kill_on_timeout is true. "
        "It cannot be interactive (stdin is empty). Obviously destructive "
        "commands are refused. "
        'Example: {"command": "make -j4 all", "patterns": ["error:"]}'
    )

    class Args(ToolArgs):
        command: str = Field(min_length=1, description="the shell command line")
        cwd: str | None = Field(
            default=None, description="directory to run in, relative to the workspace"
        )
        patterns: list[str] = Field(
            default_factory=empty_list,
            description="texts that, when an output line contains one, raise a shell.output event",
        )
        limit_s: float | None = Field(
            default=None,
            gt=0,
            description="how long it should take at most, in seconds: past it a "
            "process.timeout event arrives (it keeps running unless kill_on_timeout)",
        )
        kill_on_timeout: bool = Field(
            default=False, description="true: stop its process group when limit_s passes"
        )

    read_only = False
    effect = Effect.SHELL
    timeout_s: float | None = 30.0

    def __init__(self, manager: ShellTaskManager) -> None:
        self._manager = manager

    async def reach(self, a: Args) -> Reach:
        return Reach(command=a.command, cwd=a.cwd)

    async def describe_effect(self, a: Args, ctx: ToolContext) -> str:
        return command_effect("start in the background", a.command, a.cwd, ctx)

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        sandbox = self._manager.sandbox
        if sandbox.off:
            return ToolOutput(off_result_text(self.name, str(sandbox.off_because)), is_error=True)
        cwd = await preflight(self.name, a.command, a.cwd, ctx.workspace)
        if isinstance(cwd, ToolOutput):
            return cwd
        try:
            patterns = [Pattern.make(p, regex=False) for p in a.patterns]
            task = await self._manager.start(
                ctx.session,
                a.command,
                cwd,
                patterns,
                home=ctx.workspace,
                tainted_by=ctx.taint.summary() if ctx.taint else None,
                limit_s=a.limit_s,
                kill_on_timeout=a.kill_on_timeout,
            )
        except PatternError as exc:
            return ToolOutput(f"invalid pattern: {exc}; nothing was started", is_error=True)
        info: dict[str, Any] = {
            "task_id": task.task_id,
            "state": "running",
            "output_file": task.record.output_file,
            "monitored_patterns": task.patterns.describe(),
        }
        if a.limit_s is not None:
            info |= {"limit_s": a.limit_s, "kill_on_timeout": a.kill_on_timeout}
        return ToolOutput(
            f"started {task.task_id} in the background; a shell.exited event will arrive when "
            f"it finishes.\n{_dump(info)}",
            data=info,
        )


class MonitorShell:
    name = "monitor_shell"
    group = "background shells"  # deferred: listed by name under this heading (tool_surface.py)
    description = (
        "Watch the output of a background task started with start_shell: from now on, each "
        "output line that contains one of the patterns (or, with regex=true, matches one as "
        "a Python regular expression) raises a shell.output event with the line and its "
        "number, so you need not poll. Patterns add to those already set. Lines printed "
        "before the call are not searched (read the task's output file for those). A chatty "
        "command cannot flood you: at most {limit} such events per {window:g} s per task; "
        "matches beyond that are counted and the count is reported, never dropped silently. "
        'Example: {{"task_id": "shell-1a2b3c4d", "patterns": ["ERROR", "epoch \\\\d+ done"], '
        '"regex": true}}'
    )

    class Args(ToolArgs):
        task_id: str = Field(min_length=1, description="the id start_shell returned")
        patterns: list[str] = Field(min_length=1, description="texts or regular expressions")
        regex: bool = Field(default=False, description="true: patterns are regular expressions")

    read_only = False
    effect = Effect.CONTROL
    timeout_s: float | None = 10.0

    def __init__(self, manager: ShellTaskManager) -> None:
        self._manager = manager
        options = manager.options
        # Per instance: the figures come from config, fixed for the daemon's life.
        self.description = MonitorShell.description.format(
            limit=options.events_per_window, window=options.window_s
        )

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        task = self._manager.get(ctx.session, a.task_id)
        if task is None:
            known = [t.task_id for t in self._manager.tasks_of(ctx.session)]
            listing = ", ".join(known) or "(none - start one with start_shell)"
            return ToolOutput(
                f"unknown shell task {a.task_id!r}; this session's shell tasks are: {listing}",
                is_error=True,
            )
        if not task.running:
            return ToolOutput(
                f"{a.task_id} has already ended ({task.record.state}); nothing more will be "
                f"printed. Its output is in {task.record.output_file} (read it with read_file).",
                is_error=True,
            )
        try:
            new = [Pattern.make(p, regex=a.regex) for p in a.patterns]
            patterns = task.patterns.add(new)
        except PatternError as exc:
            return ToolOutput(f"invalid pattern: {exc}", is_error=True)
        info = {"task_id": task.task_id, "monitored_patterns": [p.describe() for p in patterns]}
        return ToolOutput(f"monitoring {task.task_id}:\n{_dump(info)}", data=info)


def _dump(value: Any) -> str:
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False)
