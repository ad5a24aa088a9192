"""shell_exec: run one shell command in the workspace and wait for it."""

from __future__ import annotations

import dataclasses
import signal
from pathlib import Path

import anyio
from pydantic import Field

from wakeful.core.effects import Effect, Reach
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.core.tool_output import DEFAULT_OUTPUTS_MAX_BYTES, shape_output
from wakeful.safety.confinement import Outside, resolve_inside
from wakeful.safety.sandbox import NO_SANDBOX, Sandbox, off_result_text
from wakeful.tools.child_env import child_environment
from wakeful.tools.effect_text import command_effect, short_command
from wakeful.tools.process import DEFAULT_GRACE_S, ProcessResult, run_process

MAX_TIMEOUT_S = 3600
DEFAULT_TIMEOUT_S = 120


class ShellExec:
    name = "shell_exec"
    resident = True  # sent with its schema in every request (tool_surface.py)
    description = (
        "Run one shell command (/bin/sh -c) in the workspace and wait until it finishes. "
        "Returns the exit status, the duration and the combined stdout+stderr; long output "
        "keeps the first and last 50 lines and saves the full text to a file you can page "
        "through with read_file. Use it for quick commands (builds, tests, grep, ls, git "
        "status). It cannot be interactive (stdin is empty), and background processes "
        "started with & are stopped when the command ends. If the command runs longer than "
        "timeout_s seconds (default 120, max 3600 or the operator's lower limit) the whole "
        "process group is stopped "
        "(SIGTERM, then SIGKILL 2 s later) and the partial output is returned. Every call "
        "passes the daemon's safety policy: destructive commands and commands that read "
        "secrets are refused with the reason, and some calls wait for the owner's approval. "
        'Example: {"command": "pytest -q tests/test_api.py", "timeout_s": 300}'
    )

    class Args(ToolArgs):
        command: str = Field(min_length=1, description="the shell command line")
        timeout_s: int = Field(
            default=DEFAULT_TIMEOUT_S,
            ge=1,
            le=MAX_TIMEOUT_S,
            description="seconds before it is stopped",
        )
        cwd: str | None = Field(
            default=None, description="directory to run in, relative to the workspace"
        )

    read_only = False
    effect = Effect.SHELL
    # The command's own timeout_s is enforced inside; this is only a backstop.
    timeout_s: float | None = MAX_TIMEOUT_S + 2 * DEFAULT_GRACE_S + 5

    def __init__(
        self,
        *,
        grace_s: float = DEFAULT_GRACE_S,
        max_timeout_s: float = MAX_TIMEOUT_S,
        outputs_max_bytes: int = DEFAULT_OUTPUTS_MAX_BYTES,
        sandbox: Sandbox = NO_SANDBOX,
    ) -> None:
        self._grace_s = grace_s
        self._sandbox = sandbox
        confined = sandbox.describe()
        if confined:  # per instance: what the model may expect depends on the host
            self.description = f"{ShellExec.description} {confined}"
        # The operator's [loop] tool_timeout_s: the model's timeout_s cannot exceed it.
        self._max_timeout_s = max(1, int(max_timeout_s))
        self._outputs_max_bytes = outputs_max_bytes

    async def reach(self, a: Args) -> Reach:
        return Reach(command=a.command, cwd=a.cwd)

    async def describe_effect(self, a: Args, ctx: ToolContext) -> str:
        return command_effect(f"run (timeout {a.timeout_s} s)", a.command, a.cwd, ctx)

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        if self._sandbox.off:
            return ToolOutput(
                off_result_text(self.name, str(self._sandbox.off_because)), is_error=True
            )
        cwd = await preflight(self.name, a.command, a.cwd, ctx.workspace)
        if isinstance(cwd, ToolOutput):
            return cwd
        timeout_s = min(a.timeout_s, self._max_timeout_s)
        result = await run_process(
            a.command,
            cwd=cwd,
            timeout_s=timeout_s,
            grace_s=self._grace_s,
            env=child_environment(ctx.workspace),
            sandbox=self._sandbox,
        )
        output = _format(result, timeout_s, ctx, self._outputs_max_bytes, self._max_timeout_s)
        if result.output.strip():
            # What a program prints may be anyone's words (a file it read, a page it
            # fetched); only a command that printed nothing vouches for its result.
            output = dataclasses.replace(
                output, untrusted_source=f"shell_exec output of `{short_command(a.command, 60)}`"
            )
        stopped = self._sandbox.diagnose(result.exit_code, result.output)
        if stopped is not None:
            output = dataclasses.replace(output, text=f"{stopped}\n{output.text}")
        if timeout_s < a.timeout_s and "timeout_s" in a.model_fields_set:
            note = (
                f"(timeout_s {a.timeout_s} was capped to {timeout_s} s, the operator's limit "
                "for one tool call; split longer work into shorter steps)"
            )
            output = dataclasses.replace(output, text=f"{note}\n{output.text}")
        return output


def _format(
    result: ProcessResult,
    timeout_s: int,
    ctx: ToolContext,
    outputs_max_bytes: int,
    max_timeout_s: int,
) -> ToolOutput:
    output = shape_output(
        result.output,
        output_dir=ctx.output_dir,
        name_hint=f"shell_exec-{ctx.call_id}",
        outputs_max_bytes=outputs_max_bytes,
    )
    data = {
        "exit_code": result.exit_code,
        "duration_s": round(result.duration_s, 3),
        "killed": result.killed,
    }
    if result.killed:
        header = (
            f"timed out after {timeout_s} s; the command was stopped (its whole process "
            "group). It may have partially executed - check its effects before retrying. "
            f"If it needs longer, rerun with a larger timeout_s (at most {max_timeout_s}); "
            "otherwise narrow the command. Output before it was stopped:"
        )
        return ToolOutput(f"{header}\n{output}", is_error=True, data=data)
    header = f"{_status(result.exit_code)} after {result.duration_s:.1f} s"
    if result.background_stopped:
        header += " (background processes it left running were stopped)"
    return ToolOutput(f"{header}\n{output}", data=data)


def _status(exit_code: int | None) -> str:
    if exit_code is not None and exit_code < 0:
        try:
            return f"killed by signal {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"killed by signal {-exit_code}"
    return f"exit status {exit_code}"


async def preflight(
    tool: str, command: str, cwd_arg: str | None, workspace: Path
) -> Path | ToolOutput:
    """The check every shell tool makes before running: a working directory that
    exists inside the workspace. Returns the directory or the error to give the model.
    (What a command may do is the policy chain's decision, wakeful/safety/.)"""
    cwd = resolve_inside(cwd_arg, workspace) if cwd_arg else workspace
    if isinstance(cwd, Outside):
        return ToolOutput(
            f"cwd {cwd_arg!r} resolves outside the workspace ({workspace}); commands run "
            "only inside it: pass a directory relative to the workspace, or omit cwd.",
            is_error=True,
        )
    if not await anyio.Path(cwd).is_dir():
        return ToolOutput(
            f"cwd {cwd_arg!r} is not a directory (resolved to {cwd}); pass a directory "
            "relative to the workspace, or omit cwd to run in the workspace itself.",
            is_error=True,
        )
    return cwd
