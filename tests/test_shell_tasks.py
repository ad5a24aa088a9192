"""Background shell tasks with real processes: exit, cancel, monitors, rate limit, records."""

from __future__ import annotations

import json
import os
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from anyio.abc import TaskStatus

from tests.daemon_harness import daemon_settings
from tests.fleet_components import run_member
from tests.processes import group_members
from tests.tool_calls import run_tool
from wakeful.core.tool import ToolContext
from wakeful.kernel.events import Event
from wakeful.sources.shell.component import ShellComponent
from wakeful.sources.shell.lines import LineSplitter, OutputTail, parse_progress
from wakeful.sources.shell.manager import ShellOptions, ShellTaskManager
from wakeful.sources.shell.monitor import Pattern
from wakeful.sources.shell.records import Loaded, RecordStore, TaskRecord, boot_id, start_ticks
from wakeful.sources.shell.recovery import report_unfinished
from wakeful.sources.shell.tools import MonitorShell, StartShell
from wakeful.sources.shell.view import SessionShellTasks

pytestmark = pytest.mark.anyio


async def recover(manager: ShellTaskManager) -> int:
    """The recovery as the component runs it, on the records as they are now."""
    return await report_unfinished(manager, await manager.records.load_all())


class Events:
    """What the manager submitted, with a way to wait for a particular one."""

    def __init__(self) -> None:
        self.items: list[Event] = []
        self._changed = anyio.Event()

    async def submit(self, event: Event) -> None:
        self.items.append(event)
        self._changed.set()
        self._changed = anyio.Event()

    async def wait_for(self, predicate: Callable[[Event], bool], timeout_s: float = 10) -> Event:
        with anyio.fail_after(timeout_s):
            while True:
                for event in self.items:
                    if predicate(event):
                        return event
                await self._changed.wait()

    def kinds(self, kind: str) -> list[Event]:
        return [e for e in self.items if e.kind == kind]


@asynccontextmanager
async def running_manager(
    directory: Path, events: Events, **options: float
) -> AsyncIterator[ShellTaskManager]:
    await anyio.Path(directory).mkdir(exist_ok=True)
    async with anyio.create_task_group() as group:
        settings = ShellOptions(**{"grace_s": 0.5, **options})  # type: ignore[arg-type]
        yield ShellTaskManager(RecordStore(directory), events.submit, group, settings)
        group.cancel_scope.cancel()


def exit_of(task_id: str) -> Callable[[Event], bool]:
    return lambda e: e.id == f"shell:{task_id}:exit"


def read_record(directory: Path, task_id: str) -> TaskRecord:
    return TaskRecord.from_json((directory / f"{task_id}.json").read_text())


async def wait_for_line(manager: ShellTaskManager, task_id: str, text: str) -> None:
    task = manager.get("main", task_id)
    assert task is not None
    with anyio.fail_after(10):
        while not any(text in line for line in task.last_lines(50)):  # noqa: ASYNC110
            await anyio.sleep(0.02)  # output arrives from a pipe: no event to await here


async def test_exit_event_has_status_duration_and_shaped_output(tmp_path: Path) -> None:
    """A finished command raises shell.exited with its status, duration and head + tail."""
    events = Events()
    async with running_manager(tmp_path / "tasks", events) as manager:
        command = "seq 1 300; echo done >&2; exit 3"
        task = await manager.start("main", command, tmp_path, [])
        event = await events.wait_for(exit_of(task.task_id))
    text = event.content.text
    assert event.kind == "shell.exited" and event.session == "main"
    # What a program prints is anyone's words: never trusted (wakeful/kernel/trust.py).
    assert event.channel == f"shell:{task.task_id}" and not event.trusted
    assert event.context.related_task_id == task.task_id
    assert "exit status 3" in text and "state failed" in text
    assert "\n1\n2\n" in text and "\n300\ndone" in text  # head and tail, stderr included
    assert "201 lines omitted" in text and task.record.output_file in text
    full = (await anyio.Path(task.record.output_file).read_text()).splitlines()
    assert full[:3] == ["1", "2", "3"] and full[-1] == "done" and len(full) == 301
    assert event.content.data["exit_code"] == 3 and event.content.data["duration_s"] >= 0


async def test_cancel_kills_grandchildren(tmp_path: Path) -> None:
    """cancel_task stops the whole group, a TERM-ignoring grandchild too, and says what ran."""
    events = Events()
    # Each grandchild says it is there (a file) before the task prints, so the group is
    # whole when "42%" arrives, however slowly a loaded machine forks.
    command = (
        "sh -c 'sleep 600 & sleep 600 & touch kids; wait' & "
        "sh -c \"trap '' TERM; touch looping; while :; do sleep 0.05; done\" & "
        "while [ ! -e kids ] || [ ! -e looping ]; do sleep 0.01; done; "
        "echo started; echo 'step 42%'; sleep 600"
    )
    async with running_manager(tmp_path / "tasks", events) as manager:
        task = await manager.start("main", command, tmp_path, [])
        await wait_for_line(manager, task.task_id, "42%")
        pgid = task.record.pgid
        assert pgid is not None and len(group_members(pgid)) >= 5
        started = time.monotonic()
        result = await SessionShellTasks(manager, "main").cancel(task.task_id)
        elapsed = time.monotonic() - started
        assert group_members(pgid) == []
    assert result is not None and result["state"] == "cancelled"
    assert result["was_running"]["command"] == command
    assert result["was_running"]["last_lines"] == ["started", "step 42%"]
    assert result["was_running"]["progress"] == "42%"
    assert "SIGKILL" in result["stopped"] and 0.4 < elapsed < 5  # TERM was ignored: grace, KILL
    assert events.kinds("shell.exited") == []  # cancel_task's own result is the report
    assert read_record(tmp_path / "tasks", task.task_id).state == "cancelled"


async def test_monitor_pattern_raises_output_event(tmp_path: Path) -> None:
    """A line matching a regex added by monitor_shell becomes a shell.output event."""
    events = Events()
    gate = tmp_path / "gate"
    command = (
        f"echo 'ERROR before'; while [ ! -e {gate} ]; do sleep 0.02; done; "
        "echo 'epoch 1 done'; echo 'noise'; echo 'epoch 2 done'"
    )
    async with running_manager(tmp_path / "tasks", events) as manager:
        tool = MonitorShell(manager)
        task = await manager.start("main", command, tmp_path, [])
        ctx = tool_context(tmp_path)
        added = await run_tool(
            tool, {"task_id": task.task_id, "patterns": [r"epoch \d+"], "regex": True}, ctx
        )
        assert not added.is_error, added.text
        bad = await run_tool(
            tool, {"task_id": task.task_id, "patterns": ["(unclosed"], "regex": True}, ctx
        )
        assert bad.is_error and "not a valid Python regular expression" in bad.text
        gate.touch()
        await events.wait_for(exit_of(task.task_id))
    outputs = events.kinds("shell.output")
    assert [e.id for e in outputs] == [f"shell:{task.task_id}:out:2", f"shell:{task.task_id}:out:4"]
    assert (
        "epoch 1 done" in outputs[0].content.text
        and "regex 'epoch \\\\d+'" in outputs[0].content.text
    )
    assert outputs[0].channel == f"shell:{task.task_id}" and outputs[0].session == "main"
    assert [e.content.data["line"] for e in outputs] == ["epoch 1 done", "epoch 2 done"]


async def test_rate_limit_counts_what_it_holds_back(tmp_path: Path) -> None:
    """200 matching lines give 3 events and one summary; every match is accounted for."""
    events = Events()
    command = 'for i in $(seq 1 200); do echo "hit $i"; done; sleep 0.8'
    async with running_manager(
        tmp_path / "tasks", events, events_per_window=3, window_s=0.3
    ) as manager:
        task = await manager.start("main", command, tmp_path, [Pattern.make("hit", regex=False)])
        exited = await events.wait_for(exit_of(task.task_id))
    outputs = events.kinds("shell.output")
    lines = [e for e in outputs if "line_no" in e.content.data]
    summaries = [e for e in outputs if "suppressed" in e.content.data]
    assert [e.content.data["line_no"] for e in lines] == [1, 2, 3]
    assert len(summaries) == 1
    assert summaries[0].content.data["suppressed"] == 197
    assert summaries[0].content.data["last_line_no"] == 200
    assert "197 more lines" in summaries[0].content.text
    assert "197 lines matching its monitored patterns were not sent" in exited.content.text


async def test_status_shows_progress_and_last_lines(tmp_path: Path) -> None:
    """task_status reports runtime, the last lines and the last progress printed."""
    events = Events()
    command = "echo 'loading'; printf 'progress: 0.25\\rprogress: 0.42\\n'; sleep 600"
    async with running_manager(tmp_path / "tasks", events) as manager:
        view = SessionShellTasks(manager, "main")
        task = await manager.start("main", command, tmp_path, [])
        await wait_for_line(manager, task.task_id, "0.42")
        status = view.describe(task.task_id)
        assert SessionShellTasks(manager, "other").describe(task.task_id) is None
        await view.cancel(task.task_id)
    assert status is not None
    assert status["state"] == "running" and status["kind"] == "shell"
    assert status["progress"] == "42%"
    assert status["last_lines"] == ["loading", "progress: 0.25", "progress: 0.42"]
    assert status["runtime_s"] >= 0 and "42%" in status["summary"]


async def test_shutdown_stops_tasks_and_next_start_reports_them(tmp_path: Path) -> None:
    """Stopping the daemon stops each group and records it; the next start reports it once."""
    directory = tmp_path / "tasks"
    events = Events()
    async with running_manager(directory, events) as manager:
        task = await manager.start("main", "echo working; sleep 600", tmp_path, [])
        await wait_for_line(manager, task.task_id, "working")
        pgid = task.record.pgid
    assert pgid is not None and group_members(pgid) == []
    record = read_record(directory, task.task_id)
    assert (record.state, record.reason, record.reported) == (
        "cancelled",
        "the daemon stopped",
        False,
    )
    assert events.items == []
    later = Events()
    async with running_manager(directory, later) as manager:
        assert await recover(manager) == 1
        assert await recover(manager) == 0
        status = SessionShellTasks(manager, "main").describe(task.task_id)
    [event] = later.items
    assert event.id == f"shell:{task.task_id}:exit" and event.kind == "shell.exited"
    assert "because the daemon shut down" in event.content.text
    assert "working" in event.content.text
    assert status is not None and status["state"] == "cancelled"


async def test_old_reported_records_are_pruned(tmp_path: Path) -> None:
    """Records and output files of tasks reported long ago are deleted at start-up."""
    directory = tmp_path / "tasks"
    events = Events()
    async with running_manager(directory, events) as manager:
        task = await manager.start("main", "echo old", tmp_path, [])
        await events.wait_for(exit_of(task.task_id))
        assert await anyio.Path(task.record.output_file).exists()
    async with running_manager(directory, events, retain_s=3600) as manager:
        await recover(manager)  # ended just now: kept
    assert await anyio.Path(task.record.output_file).exists()
    async with running_manager(directory, events, retain_s=0) as manager:
        await recover(manager)
    assert await anyio.Path(directory).exists()
    assert [p.name async for p in anyio.Path(directory).iterdir()] == []


async def test_lost_task_group_is_stopped_and_reported(tmp_path: Path) -> None:
    """A record left "running" whose group still runs: the group is stopped, the loss reported."""
    directory = tmp_path / "tasks"
    await anyio.Path(directory).mkdir()
    output = directory / "shell-orphan1.log"
    await anyio.Path(output).write_text("half way 50%\n")
    events = Events()
    async with await anyio.open_process(["sleep", "600"], start_new_session=True) as proc:
        try:
            record = TaskRecord(
                task_id="shell-orphan1",
                session="user:alice",
                command="sleep 600",
                cwd=str(tmp_path),
                started_at=time.time() - 30,
                output_file=str(output),
                pgid=proc.pid,
                boot_id=boot_id(),
                leader_start_ticks=start_ticks(proc.pid),
            )
            await RecordStore(directory).save(record)
            async with running_manager(directory, events) as manager:
                await recover(manager)
            with anyio.fail_after(5):
                assert await proc.wait() == -15
        finally:
            if proc.returncode is None:
                os.killpg(proc.pid, 9)
    [event] = events.items
    assert event.session == "user:alice" and event.kind == "shell.exited"
    assert "was lost: the daemon restarted while it ran" in event.content.text
    assert "has been stopped" in event.content.text and "half way 50%" in event.content.text
    assert read_record(directory, "shell-orphan1").state == "lost"


async def test_start_shell_tool_refuses_and_explains(tmp_path: Path) -> None:
    """start_shell returns a task id at once, and refuses a bad cwd (what a command may do
    is the policy chain's decision: tests/test_policy_chain.py)."""
    events = Events()
    async with running_manager(tmp_path / "tasks", events) as manager:
        tool = StartShell(manager)
        ctx = tool_context(tmp_path)
        started = time.monotonic()
        ok = await run_tool(tool, {"command": "sleep 600", "patterns": ["x"]}, ctx)
        assert time.monotonic() - started < 2
        info = json.loads(ok.text.split("\n", 1)[1])
        assert info["task_id"].startswith("shell-") and info["monitored_patterns"] == ["'x'"]
        assert (await run_tool(tool, {"command": "ls", "cwd": "nope"}, ctx)).is_error
        await manager.cancel("main", info["task_id"])


def test_lines_progress_and_tail() -> None:
    """Lines split on \\n and \\r across reads; progress is the last percentage or fraction."""
    splitter = LineSplitter()
    lines = [*splitter.feed(b"a 10%\rb 2"), *splitter.feed("0% é".encode()[:-1])]
    lines += [*splitter.feed("é".encode()[-1:] + b"\nc"), *splitter.close()]
    assert lines == ["a 10%", "b 20% é", "c"]
    assert parse_progress("epoch 3: 12.5% (loss 0.2)") == 12.5
    assert parse_progress("progress=0.66") == pytest.approx(66)
    assert parse_progress("2 of 3 done") is None and parse_progress("250%") is None
    tail = OutputTail(head_lines=2, tail_lines=2, memory_lines=10)
    for n in range(7):
        tail.add(f"line {n} {n * 10}%")
    shaped = tail.shaped(Path("/tmp/out.log"))
    assert shaped.startswith("line 0 0%\nline 1 10%\n[... 3 lines omitted")
    assert shaped.endswith("line 5 50%\nline 6 60%") and tail.progress == 60


def tool_context(tmp_path: Path) -> ToolContext:
    return ToolContext(
        session="main",
        call_id="call_1",
        workspace=tmp_path,
        output_dir=tmp_path / "out",
        tasks=None,  # type: ignore[arg-type]
        outbox=None,  # type: ignore[arg-type]
    )


async def test_a_secret_a_background_command_prints_is_never_kept(tmp_path: Path) -> None:
    """Redacted as the output comes in: not in the log file, the exit event, or the tail."""
    from wakeful.kernel.logging import add_secrets

    secret = "sk-background-secret-98765"
    add_secrets([secret])
    events = Events()
    async with running_manager(tmp_path / "tasks", events) as manager:
        task = await manager.start("main", f"echo the key is {secret}; env", tmp_path, [])
        event = await events.wait_for(exit_of(task.task_id))
    kept = await anyio.Path(task.record.output_file).read_text()
    assert secret not in kept and "the key is [REDACTED]" in kept
    # (Its first line quotes the command, which the model wrote: what it printed follows.)
    printed = event.content.text.split("\n", 1)[1]
    assert secret not in printed and "the key is [REDACTED]" in printed
    assert secret not in json.dumps(task.record.last_lines)


async def test_a_command_started_as_the_component_starts_is_not_taken_for_a_leftover(
    tmp_path: Path,
) -> None:
    """The recovery of the last run's tasks runs in the background; a command this run
    starts at once (an event queued before a restart, answered straight away) must not
    be in what it recovers. Here the records are listed only once the test's command
    is running, if the listing happens after the component said it started: read then,
    the new record was taken for a leftover, its group stopped and reported "lost"."""
    component = ShellComponent()
    started = False
    command_running = anyio.Event()
    recovered: list[int] = []
    recovery_done = anyio.Event()
    load_all = RecordStore.load_all

    async def listed_late(self: RecordStore) -> Loaded:
        if started:  # after the component said it started: the command goes first
            await command_running.wait()
        return await load_all(self)

    async def watched(manager: ShellTaskManager, left: Loaded) -> int:
        recovered.append(await report_unfinished(manager, left))
        recovery_done.set()
        return recovered[-1]

    run = component.run

    async def run_noting_the_start(*, task_status: TaskStatus[None]) -> None:
        class Noted:
            def started(self, value: None = None) -> None:
                nonlocal started
                started = True
                task_status.started(value)

        await run(task_status=Noted())  # type: ignore[arg-type]

    settings = daemon_settings(tmp_path / "daemon", "http://127.0.0.1:9")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(RecordStore, "load_all", listed_late)
        patch.setattr("wakeful.sources.shell.component.report_unfinished", watched)
        patch.setattr(component, "run", run_noting_the_start)
        async with run_member("solo", component, settings) as member:
            task = await component.manager.start("main", "sleep 30", tmp_path, [])
            command_running.set()
            with anyio.fail_after(10):
                await recovery_done.wait()
            assert recovered == [0] and task.running
            assert member.submitted == []
