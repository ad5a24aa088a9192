"""Tests for running a command in its own process group and stopping all of it."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest

from tests.processes import wait_for_file
from wakeful.tools.process import group_alive, run_process


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def wait_group_gone(pgid: int, within_s: float) -> bool:
    """Whether every process of ``pgid`` is gone within ``within_s`` seconds."""
    with anyio.move_on_after(within_s):
        while group_alive(pgid):  # noqa: ASYNC110 - process exit has no event to await
            await anyio.sleep(0.02)
        return True
    return False


@pytest.mark.anyio
async def test_collects_combined_output_and_exit_code(tmp_path: Path) -> None:
    """stdout and stderr arrive interleaved in one text, with the exit code."""
    result = await run_process("echo out; echo err >&2; exit 3", cwd=tmp_path)
    assert result.output == "out\nerr\n"
    assert result.exit_code == 3
    assert not result.killed


@pytest.mark.anyio
async def test_runs_in_cwd(tmp_path: Path) -> None:
    """The command runs in the given directory."""
    result = await run_process("pwd", cwd=tmp_path)
    assert result.output.strip() == str(tmp_path)


@pytest.mark.anyio
async def test_timeout_stops_the_command_and_keeps_partial_output(tmp_path: Path) -> None:
    """A command past its timeout is stopped, reported as killed, with its output so far."""
    result = await run_process("echo started; sleep 30", cwd=tmp_path, timeout_s=0.5)
    assert result.killed
    assert result.output == "started\n"
    assert result.exit_code is not None and result.exit_code < 0
    assert result.duration_s < 5


@pytest.mark.anyio
async def test_cancel_kills_the_whole_group_including_grandchildren(tmp_path: Path) -> None:
    """Cancelling the caller stops the shell and its background sleeps within the grace period."""
    marker = tmp_path / "started"
    command = f"sleep 1000 & sleep 1000 & echo ready > {marker}; wait"
    pgids: list[int] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: run_process(command, cwd=tmp_path, grace_s=1.0, on_start=pgids.append)
        )
        await wait_for_file(marker)
        assert group_alive(pgids[0])
        started = time.monotonic()
        tg.cancel_scope.cancel()
    assert time.monotonic() - started < 1.0 + 1.0
    assert await wait_group_gone(pgids[0], within_s=0.5)


@pytest.mark.anyio
async def test_cancellation_propagates_to_the_caller(tmp_path: Path) -> None:
    """run_process does not swallow the caller's cancellation."""
    finished = False
    with anyio.move_on_after(0.3) as scope:
        await run_process("sleep 30", cwd=tmp_path)
        finished = True
    assert scope.cancelled_caught
    assert not finished


@pytest.mark.anyio
async def test_sigterm_ignored_escalates_to_sigkill(tmp_path: Path) -> None:
    """A group that ignores SIGTERM is killed with SIGKILL after the grace period."""
    started = time.monotonic()
    result = await run_process("trap '' TERM; sleep 1000", cwd=tmp_path, timeout_s=0.2, grace_s=0.3)
    elapsed = time.monotonic() - started
    assert result.killed
    assert result.exit_code == -9
    assert 0.4 < elapsed < 3


@pytest.mark.anyio
async def test_background_children_are_stopped_when_the_command_exits(tmp_path: Path) -> None:
    """A command that leaves `sleep &` behind returns at once and leaves nothing running."""
    pgids: list[int] = []
    result = await run_process("sleep 1000 & echo bg", cwd=tmp_path, on_start=pgids.append)
    assert result.output == "bg\n"
    assert result.exit_code == 0
    assert result.background_stopped
    assert result.duration_s < 5
    assert not group_alive(pgids[0])


@pytest.mark.anyio
async def test_output_kept_in_memory_is_bounded(tmp_path: Path) -> None:
    """Huge output keeps its start and end and says how many bytes were not kept."""
    command = "echo FIRST; head -c 200000 /dev/zero | tr '\\0' x; echo; echo LAST"
    result = await run_process(command, cwd=tmp_path, max_output_bytes=1000)
    assert result.output.startswith("FIRST\n")
    assert result.output.endswith("LAST\n")
    assert "bytes of output were not kept in memory" in result.output
    assert len(result.output) < 1200
