"""The events a background shell task raises, with deterministic ids.

``shell:<task>:exit`` is the one end-of-task report (an exit, a stop at
shutdown, or a loss across a restart share it, so a task is never reported
twice); ``shell:<task>:out:<line>`` a matching output line;
``shell:<task>:suppressed:<line>`` the count of matches the rate limit held
back, ending at that line.
"""

from __future__ import annotations

import signal
from datetime import UTC, datetime
from typing import Any

from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.events import Event
from wakeful.sources.shell.records import TaskRecord
from wakeful.tools.effect_text import short_command


def exit_status(exit_code: int | None) -> str:
    if exit_code is None:
        return "an unknown exit status"
    if exit_code < 0:
        try:
            return f"killed by signal {signal.Signals(-exit_code).name}"
        except ValueError:
            return f"killed by signal {-exit_code}"
    return f"exit status {exit_code}"


def _event(record: TaskRecord, event_id: str, kind: str, text: str, data: dict[str, Any]) -> Event:
    tainted = {"tainted_by": record.tainted_by} if record.tainted_by else {}
    return Event.parse(
        {
            "id": event_id,
            "kind": kind,
            # What a program prints is anyone's words: never trusted (wakeful/kernel/trust.py
            # declares no shell kind trustable); tainted_by still names the run that
            # started it.
            "source": {"type": "system", "principal": "wakeful", "trusted": False},
            "channel": f"shell:{record.task_id}",
            "content": {"text": text, "data": {"task_id": record.task_id, **data, **tainted}},
            "context": {"related_task_id": record.task_id},
            "session": record.session,
        }
    )


def _header(record: TaskRecord) -> str:
    return f"{record.task_id} (`{short_command(record.command)}`)"


def _end_data(record: TaskRecord) -> dict[str, Any]:
    return {
        "command": record.command,
        "state": record.state,
        "exit_code": record.exit_code,
        "duration_s": record.duration_s,
        "output_file": record.output_file,
    }


def exited_event(record: TaskRecord, output: str, suppressed: int) -> Event:
    """The task ended by itself (done or failed)."""
    text = (
        f"{_header(record)} finished with {exit_status(record.exit_code)} after "
        f"{record.duration_s or 0:.1f} s (state {record.state}). Output "
        f"(full output in {record.output_file}):\n{output}"
    )
    if record.reason:
        text += f"\nNote: {record.reason}"
    if suppressed:
        text += (
            f"\n{suppressed} lines matching its monitored patterns were not sent as "
            "events (rate limit); they are in the output file."
        )
    return _exit_event(record, text)


def stopped_at_shutdown_event(record: TaskRecord) -> Event:
    """Reported after a restart: the daemon stopped the task when it shut down."""
    text = (
        f"{_header(record)} was stopped after {record.duration_s or 0:.1f} s because the "
        f"daemon shut down (state {record.state}; its whole process group was stopped). "
        "It may have partially executed - check its effects before running it again. "
        f"Its last output lines (full output in {record.output_file}):\n"
        + _lines(record.last_lines)
    )
    return _exit_event(record, text)


def lost_event(record: TaskRecord) -> Event:
    """Reported after a restart: the daemon died while the task ran."""
    started = datetime.fromtimestamp(record.started_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    text = (
        f"{_header(record)}, started {started}, was lost: the daemon restarted while it ran, "
        f"so its exit status is unknown (state lost). {record.reason} It may have partially "
        f"executed - check its effects before running it again. Its last output lines "
        f"(full output in {record.output_file}):\n" + _lines(record.last_lines)
    )
    return _exit_event(record, text)


def timeout_event(record: TaskRecord, runtime_s: float, grace_s: float) -> Event:
    """The task is still running past its declared limit; says what happens to it."""
    if record.kill_on_timeout:
        fate = (
            "It is being stopped (kill_on_timeout): its whole process group gets SIGTERM, "
            f"then SIGKILL after {grace_s:g} s; its shell.exited event follows."
        )
    else:
        fate = (
            "It was left running: decide whether to wait (its shell.exited event still "
            "comes when it ends), look at it with task_status, or stop it with cancel_task."
        )
    text = (
        f"{_header(record)} is still running after {runtime_s:.0f} s, past its declared "
        f"limit of {record.limit_s:g} s (limit_s). {fate}"
    )
    data = {
        "command": record.command,
        "limit_s": record.limit_s,
        "runtime_s": round(runtime_s, 1),
        "kill_on_timeout": record.kill_on_timeout,
    }
    return _event(record, f"shell:{record.task_id}:timeout", EventKind.PROCESS_TIMEOUT, text, data)


def owner_gone_event(record: TaskRecord) -> Event:
    """Reported by another daemon of the fleet: the daemon running the task is gone."""
    started = datetime.fromtimestamp(record.started_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    text = (
        f"{_header(record)}, started {started}, was lost: the daemon running it stopped, "
        f"so its exit status is unknown (state lost). {record.reason} It may have partially "
        f"executed - check its effects before running it again. Its output file: "
        f"{record.output_file}"
    )
    return _exit_event(record, text)


def output_event(
    record: TaskRecord,
    line_no: int,
    line: str,
    pattern: str,
    held: int,
    subscription: str | None = None,
) -> Event:
    text = f"Line {line_no} of {_header(record)} matched {pattern}:\n{line}"
    if held:
        text += (
            f"\n({held} earlier matching lines were held back by the rate limit; they are "
            f"in {record.output_file})"
        )
    data: dict[str, Any] = {
        "line_no": line_no,
        "line": line,
        "pattern": pattern,
        "suppressed_before": held,
    }
    if subscription is not None:  # set by connect_channel(kind="shell_output")
        data["subscription"] = subscription
    event_id = f"shell:{record.task_id}:out:{line_no}"
    return _event(record, event_id, EventKind.SHELL_OUTPUT, text, data)


def suppressed_event(record: TaskRecord, held: int, last_no: int, last_line: str) -> Event:
    text = (
        f"{held} more lines of {_header(record)} matched its monitored patterns but were "
        f"held back by the rate limit. The last was line {last_no}:\n{last_line}\n"
        f"All of them are in {record.output_file}."
    )
    data = {"suppressed": held, "last_line_no": last_no, "line": last_line}
    event_id = f"shell:{record.task_id}:suppressed:{last_no}"
    return _event(record, event_id, EventKind.SHELL_OUTPUT, text, data)


def _lines(lines: list[str]) -> str:
    return "\n".join(lines) if lines else "(no output)"


def _exit_event(record: TaskRecord, text: str) -> Event:
    """The one event a task's end makes, whichever way it ended."""
    return _event(
        record, f"shell:{record.task_id}:exit", EventKind.SHELL_EXITED, text, _end_data(record)
    )
