"""Tests for the built-in tools: shell_exec, read_file, get_time, reply_to_user, tasks."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.processes import wait_for_file
from tests.tool_calls import run_tool
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.tools.clock import GetTime
from wakeful.tools.files import ReadFile
from wakeful.tools.process import group_alive
from wakeful.tools.registry import default_registry
from wakeful.tools.shell import ShellExec
from wakeful.tools.tasks import CancelTask, TaskStatus
from wakeful.tools.user import ReplyToUser


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class FakeTasks:
    """A dict-backed TaskView."""

    def __init__(self, tasks: dict[str, dict[str, Any]]) -> None:
        self.tasks = tasks
        self.cancelled: list[str] = []

    def describe(self, task_id: str) -> dict[str, Any] | None:
        return self.tasks.get(task_id)

    def list_tasks(self) -> list[dict[str, Any]]:
        return list(self.tasks.values())

    async def cancel(self, task_id: str) -> dict[str, Any] | None:
        if task_id not in self.tasks:
            return None
        self.cancelled.append(task_id)
        self.tasks[task_id] = {**self.tasks[task_id], "state": "cancelling"}
        return self.tasks[task_id]


def make_ctx(
    tmp_path: Path, tasks: FakeTasks | None = None, replies: list[str] | None = None
) -> ToolContext:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    sent = replies if replies is not None else []
    return ToolContext(
        session="s",
        call_id="call_9",
        workspace=workspace,
        output_dir=tmp_path / "out",
        tasks=tasks or FakeTasks({}),
        outbox=RecordingOutbox(sent),
    )


class RecordingOutbox:
    """Stands in for the outgoing-message port: records and reports like the chat channel."""

    def __init__(self, sent: list[str]) -> None:
        self.sent = sent
        self.keys: list[str] = []

    async def send(self, text: str, *, key: str) -> str:
        self.sent.append(text)
        self.keys.append(key)
        return "queued for chat:web; nobody is connected"

    async def notify(self, text: str, *, urgency: str, key: str) -> str:
        self.sent.append(f"[{urgency}] {text}")
        self.keys.append(key)
        return "queued for chat:web; nobody is connected"


# --- shell_exec -------------------------------------------------------------


@pytest.mark.anyio
async def test_shell_exec_reports_status_duration_and_output(tmp_path: Path) -> None:
    """A finished command reports its exit status, duration and output."""
    out = await run_tool(ShellExec(), {"command": "echo hello; exit 2"}, make_ctx(tmp_path))
    assert re.match(r"exit status 2 after \d+\.\d s\nhello\n$", out.text)
    assert out.data["exit_code"] == 2


@pytest.mark.anyio
async def test_shell_exec_runs_in_the_workspace_and_relative_cwd(tmp_path: Path) -> None:
    """Commands run in the workspace, or in cwd resolved inside it."""
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "sub").mkdir()
    out = await run_tool(ShellExec(), {"command": "pwd"}, ctx)
    assert out.text.splitlines()[1] == str(ctx.workspace)
    out = await run_tool(ShellExec(), {"command": "pwd", "cwd": "sub"}, ctx)
    assert out.text.splitlines()[1] == str(ctx.workspace / "sub")


@pytest.mark.anyio
async def test_shell_exec_missing_cwd_is_an_error(tmp_path: Path) -> None:
    """A cwd that does not exist is an error that says what to pass instead."""
    out = await run_tool(ShellExec(), {"command": "pwd", "cwd": "nope"}, make_ctx(tmp_path))
    assert out.is_error
    assert "not a directory" in out.text


@pytest.mark.anyio
async def test_shell_exec_timeout_stops_sleep_and_reports_it(tmp_path: Path) -> None:
    """`sleep 30` with timeout_s=1 is stopped after about a second and reported as timed out."""
    started = time.monotonic()
    out = await run_tool(
        ShellExec(grace_s=0.5),
        {"command": "echo before; sleep 30", "timeout_s": 1},
        make_ctx(tmp_path),
    )
    assert time.monotonic() - started < 4
    assert out.is_error
    assert out.text.startswith("timed out after 1 s; the command was stopped")
    assert "before" in out.text
    assert out.data["killed"] is True


@pytest.mark.anyio
async def test_shell_exec_long_output_is_shaped_and_saved(tmp_path: Path) -> None:
    """Long output keeps head and tail, and the saved file holds every line."""
    ctx = make_ctx(tmp_path)
    out = await run_tool(ShellExec(), {"command": "seq 1 1000"}, ctx)
    lines = out.text.splitlines()
    assert lines[1:3] == ["1", "2"]
    assert lines[-1] == "1000"
    saved = list(ctx.output_dir.iterdir())
    assert len(saved) == 1
    assert saved[0].read_text() == "".join(f"{i}\n" for i in range(1, 1001))
    assert str(saved[0]) in out.text


@pytest.mark.anyio
async def test_cancelling_shell_exec_kills_grandchildren(tmp_path: Path) -> None:
    """Cancelling a running shell_exec stops its process group, background sleeps included."""
    ctx = make_ctx(tmp_path)
    registry = default_registry(shell_grace_s=1.0)
    marker = tmp_path / "pgid"
    command = f"sleep 1000 & sleep 1000 & echo $$ > {marker}; wait"
    async with anyio.create_task_group() as tg:
        tg.start_soon(registry.execute, "shell_exec", f'{{"command": "{command}"}}', ctx)
        pgid = int(await wait_for_file(marker))
        assert group_alive(pgid)
        tg.cancel_scope.cancel()
    with anyio.fail_after(1.0 + 0.5):
        while group_alive(pgid):  # noqa: ASYNC110 - process exit has no event to await
            await anyio.sleep(0.02)


# --- read_file --------------------------------------------------------------


def _write_lines(path: Path, count: int) -> None:
    path.write_text("".join(f"row {i}\n" for i in range(1, count + 1)))


@pytest.mark.anyio
async def test_read_file_pages_through_lines(tmp_path: Path) -> None:
    """The first page shows numbered lines 1-200 and the offset for the next page."""
    ctx = make_ctx(tmp_path)
    _write_lines(ctx.workspace / "big.txt", 500)
    out = await run_tool(ReadFile(), {"path": "big.txt"}, ctx)
    lines = out.text.splitlines()
    assert lines[0] == "     1\trow 1"
    assert lines[199] == "   200\trow 200"
    assert lines[-1] == "lines 1-200 of 500; to read more call read_file with offset=200, limit=200"


@pytest.mark.anyio
async def test_read_file_last_page_says_end_of_file(tmp_path: Path) -> None:
    """Reading from an offset near the end returns the rest and says it is the end."""
    ctx = make_ctx(tmp_path)
    _write_lines(ctx.workspace / "big.txt", 500)
    out = await run_tool(ReadFile(), {"path": "big.txt", "offset": 450, "limit": 100}, ctx)
    lines = out.text.splitlines()
    assert lines[0] == "   451\trow 451"
    assert len(lines) == 51
    assert lines[-1] == "lines 451-500 of 500 (end of file)"


@pytest.mark.anyio
async def test_read_file_offset_past_end_is_an_error(tmp_path: Path) -> None:
    """An offset beyond the last line is an error that gives the valid range."""
    ctx = make_ctx(tmp_path)
    _write_lines(ctx.workspace / "small.txt", 3)
    out = await run_tool(ReadFile(), {"path": "small.txt", "offset": 10}, ctx)
    assert out.is_error
    assert "has 3 lines" in out.text


@pytest.mark.anyio
async def test_read_file_reads_saved_output_by_absolute_path(tmp_path: Path) -> None:
    """The full-output file named by shell_exec can be read with its absolute path."""
    ctx = make_ctx(tmp_path)
    await run_tool(ShellExec(), {"command": "seq 1 1000"}, ctx)
    saved = next(ctx.output_dir.iterdir())
    out = await run_tool(ReadFile(), {"path": str(saved), "offset": 50, "limit": 2}, ctx)
    assert out.text.splitlines()[:2] == ["    51\t51", "    52\t52"]


@pytest.mark.anyio
async def test_read_file_errors_say_what_to_do(tmp_path: Path) -> None:
    """Missing files, directories and binary files give errors that say what to use instead."""
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "dir").mkdir()
    (ctx.workspace / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02")
    missing = await run_tool(ReadFile(), {"path": "nope.txt"}, ctx)
    directory = await run_tool(ReadFile(), {"path": "dir"}, ctx)
    binary = await run_tool(ReadFile(), {"path": "blob.bin"}, ctx)
    assert missing.is_error and "no such file" in missing.text
    assert directory.is_error and "is a directory" in directory.text
    assert binary.is_error and "looks binary" in binary.text
    assert "find_file" in missing.text and "find_file" in directory.text
    assert "shell_exec" in binary.text


@pytest.mark.anyio
async def test_read_file_cuts_very_long_lines(tmp_path: Path) -> None:
    """A line longer than 2000 characters is cut and says how much was cut."""
    ctx = make_ctx(tmp_path)
    (ctx.workspace / "wide.txt").write_text("x" * 5000 + "\n")
    out = await run_tool(ReadFile(), {"path": "wide.txt"}, ctx)
    assert "[3000 more characters cut]" in out.text


# --- get_time, reply_to_user --------------------------------------------------


def _fixed_now() -> datetime:
    return datetime(2024, 1, 1, 0, 0, 0, tzinfo=UTC)


@pytest.mark.anyio
async def test_get_time_in_a_time_zone(tmp_path: Path) -> None:
    """The time is given in the requested IANA zone, with weekday and abbreviation."""
    out = await run_tool(GetTime(now=_fixed_now), {"timezone": "Asia/Tokyo"}, make_ctx(tmp_path))
    assert out.text.startswith("Monday, 2024-01-01 09:00:00 JST")
    assert out.data["iso"] == "2024-01-01T09:00:00+09:00"


@pytest.mark.anyio
async def test_get_time_defaults_to_utc(tmp_path: Path) -> None:
    """Without a zone the time is in UTC."""
    out = await run_tool(GetTime(now=_fixed_now), {}, make_ctx(tmp_path))
    assert out.text.startswith("Monday, 2024-01-01 00:00:00 UTC")


@pytest.mark.anyio
async def test_get_time_unknown_zone_is_an_error(tmp_path: Path) -> None:
    """An unknown or malformed zone name is an error with examples of valid ones."""
    for zone in ("Mars/Olympus", "../etc"):
        out = await run_tool(GetTime(), {"timezone": zone}, make_ctx(tmp_path))
        assert out.is_error
        assert "unknown time zone" in out.text


@pytest.mark.anyio
async def test_reply_to_user_delivers_the_text(tmp_path: Path) -> None:
    """reply_to_user sends through the outbox, keyed by its call, and reports what the
    outbox says happened (not a blanket "delivered")."""
    replies: list[str] = []
    ctx = make_ctx(tmp_path, replies=replies)
    out = await run_tool(ReplyToUser(), {"text": "halfway there"}, ctx)
    assert out == ToolOutput("queued for chat:web; nobody is connected")
    assert replies == ["halfway there"]
    assert isinstance(ctx.outbox, RecordingOutbox) and ctx.outbox.keys == ["s:tool:call_9"]


# --- task_status, cancel_task -------------------------------------------------


def _two_tasks() -> FakeTasks:
    return FakeTasks(
        {
            "T1": {"task_id": "T1", "state": "running", "progress": 0.66},
            "T2": {"task_id": "T2", "state": "running", "progress": 0.33},
        }
    )


@pytest.mark.anyio
async def test_task_status_describes_one_task(tmp_path: Path) -> None:
    """task_status with an id shows that task's state and progress."""
    out = await run_tool(TaskStatus(), {"task_id": "T1"}, make_ctx(tmp_path, tasks=_two_tasks()))
    assert not out.is_error
    assert '"progress": 0.66' in out.text and "T2" not in out.text


@pytest.mark.anyio
async def test_task_status_without_id_lists_all(tmp_path: Path) -> None:
    """task_status without an id lists every task."""
    out = await run_tool(TaskStatus(), {}, make_ctx(tmp_path, tasks=_two_tasks()))
    assert "T1" in out.text and "T2" in out.text


@pytest.mark.anyio
async def test_unknown_task_id_lists_known_ids(tmp_path: Path) -> None:
    """Both task tools answer an unknown id with the ids that do exist."""
    ctx = make_ctx(tmp_path, tasks=_two_tasks())
    for out in (
        await run_tool(TaskStatus(), {"task_id": "T9"}, ctx),
        await run_tool(CancelTask(), {"task_id": "T9"}, ctx),
    ):
        assert out.is_error
        assert "unknown task id 'T9'" in out.text and "T1, T2" in out.text


@pytest.mark.anyio
async def test_cancel_task_cancels_through_the_task_view(tmp_path: Path) -> None:
    """cancel_task asks the TaskView to cancel and shows the resulting state."""
    tasks = _two_tasks()
    out = await run_tool(CancelTask(), {"task_id": "T2"}, make_ctx(tmp_path, tasks=tasks))
    assert tasks.cancelled == ["T2"]
    assert "cancel requested for T2" in out.text and "cancelling" in out.text
