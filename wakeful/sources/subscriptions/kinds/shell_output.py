"""``shell_output``: a running background task's output lines, through the shell channel.

The shell channel already turns monitored lines into rate-limited
``shell.output`` events; a subscription adds its pattern there, tagged with
its id, so the event carries ``subscription`` and nothing is counted twice.
It ends with the task; a task does not survive a restart (it is reported
lost), so neither does its subscription: it is shown as ended.
"""

from __future__ import annotations

from wakeful.core.effects import Effect, Reach
from wakeful.sources.shell.manager import ShellTaskManager
from wakeful.sources.shell.monitor import Pattern, PatternError
from wakeful.sources.subscriptions.kinds.base import Asking, Ended, Fire, Planned, Refusal, Report
from wakeful.sources.subscriptions.records import Kind, Subscription
from wakeful.sources.subscriptions.request import ConnectRequest


class ShellOutputKind:
    kind: Kind = "shell_output"
    effect = Effect.CONTROL  # watches a task the session already started

    def __init__(self, manager: ShellTaskManager) -> None:
        self._manager = manager

    def reach(self, request: ConnectRequest) -> Reach:
        return Reach()

    async def plan(self, request: ConnectRequest, asking: Asking) -> Planned:
        session = asking.session
        if not request.task_id or not request.pattern:
            raise Refusal(
                "task_id and pattern: a shell_output subscription needs the id of a task "
                'start_shell started and the text to look for, e.g. {"kind": "shell_output", '
                '"task_id": "shell-1a2b3c4d", "pattern": "ERROR"}'
            )
        task = self._manager.get(session, request.task_id)
        if task is None:
            known = ", ".join(t.task_id for t in self._manager.tasks_of(session)) or "(none)"
            raise Refusal(
                f"task_id: no shell task {request.task_id!r} in this session (its tasks: "
                f"{known}); start one with start_shell first"
            )
        if not task.running:
            raise Refusal(f"task_id: {request.task_id} has already ended ({task.record.state})")
        try:
            Pattern.make(request.pattern, regex=request.regex)
        except PatternError as exc:
            raise Refusal(f"pattern: {exc}") from None
        return Planned(
            {"task_id": request.task_id, "pattern": request.pattern, "regex": request.regex}
        )

    async def watch(self, sub: Subscription, fire: Fire, report: Report) -> None:
        task = self._manager.get(sub.session, sub.spec["task_id"])
        if task is None or not task.running:
            state = "lost in a restart" if task is None else task.record.state
            raise Ended(f"shell task {sub.spec['task_id']} is no longer running ({state})")
        pattern = Pattern.make(sub.spec["pattern"], regex=sub.spec["regex"], tag=sub.id)
        try:
            task.patterns.add([pattern])
        except PatternError as exc:
            raise Ended(str(exc)) from None
        await report(f"watching the output of {task.task_id}")
        try:
            await task.done.wait()
        finally:
            task.patterns.remove_tagged(sub.id)
        raise Ended(f"shell task {task.task_id} ended ({task.record.state})")

    def disarmed(self, sub: Subscription) -> None:
        task = self._manager.get(sub.session, sub.spec["task_id"])
        if task is not None:
            task.patterns.remove_tagged(sub.id)
