"""The subagents of every session: spawn, talk to, settle, cancel, and their budgets.

A child is an ordinary session of the daemon: it starts with the first event
submitted for it (its task) and runs under its own supervisor. This manager
owns what makes it a child: its record, its result events to the parent, and
its end. It learns that a child went idle, that a child's run stopped, or
that a parent was told to stop, from the feed (:meth:`SubagentManager.observe`),
and always reads what happened from the store — so the same settling after a
restart finds the same answer and submits the same event, which the store
then drops as a duplicate.
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from wakeful.core.components.context import SessionControl
from wakeful.core.feed import FeedItem
from wakeful.core.front_door import SubmitResult
from wakeful.core.router import stopped_tools
from wakeful.core.session_taint import KEY_PREFIX as TAINT_KEY_PREFIX
from wakeful.core.taint import Taint
from wakeful.kernel.events import Event
from wakeful.store.base import Store, StoredEvent
from wakeful.subagents import events
from wakeful.subagents.config import SubagentsSection
from wakeful.subagents.limits import (
    BudgetAsked,
    Refused,
    check_fan_out,
    child_budget,
    child_depth,
    child_tools,
)
from wakeful.subagents.records import RecordBook, State, SubagentRecord

log = structlog.get_logger(__name__)

Submit = Callable[[Event], Awaitable[SubmitResult]]
PAGE = 200  # events read at a time when looking for a parent's stops after a restart
Message = dict[str, Any]


@dataclass(frozen=True)
class Usage:
    model_calls: int
    tokens: int
    seconds: float


@dataclass(frozen=True)
class _Signal:
    kind: str  # "idle" (a child's run ended), "alert" (a child's), "stop" (a parent's)
    session: str
    text: str = ""


class SubagentManager:
    def __init__(
        self,
        book: RecordBook,
        store: Store,
        submit: Submit,
        sessions: SessionControl,
        options: SubagentsSection,
        all_tools: Callable[[], Sequence[str]],
    ) -> None:
        self.book = book
        self._store = store
        self._submit = submit
        self._sessions = sessions
        self.options = options
        self._all_tools = all_tools  # the registry's names (frozen once sessions run)
        self._alerts: dict[str, str] = {}  # child session → why its last run stopped
        self._changed = anyio.Event()  # a deadline may have moved
        self._spawning = anyio.Lock()
        send, receive = anyio.create_memory_object_stream[_Signal](math.inf)
        self._signals: MemoryObjectSendStream[_Signal] = send
        self._inbox: MemoryObjectReceiveStream[_Signal] = receive

    # -- what the tools ask -------------------------------------------------------------

    async def spawn(
        self,
        parent: str,
        call_id: str,
        task: str,
        tools: Sequence[str] | None,
        budget: BudgetAsked | None,
        tainted_by: str | None,
    ) -> SubagentRecord:
        """The new child (raises :class:`Refused`). Its id comes from the parent's call,
        so the same call spawns the same child, once."""
        subagent_id = "sub-" + hashlib.sha256(f"{parent}\n{call_id}".encode()).hexdigest()[:10]
        existing = self.book.get(subagent_id)
        if existing is not None:
            return existing
        newest = await self._store.event_log_newest(parent, limit=1)
        async with self._spawning:  # one at a time: the fan-out check counts the others
            record = self._new_record(subagent_id, parent, task, tools, budget, tainted_by)
            record.parent_seq = newest.events[-1].seq if newest.events else 0
            await self._save(record)  # first: after a crash the record says what to resubmit
        await self._submit(events.task_event(record))
        log.info("subagent spawned", subagent_id=subagent_id, parent=parent, depth=record.depth)
        return record

    def _new_record(
        self,
        subagent_id: str,
        parent: str,
        task: str,
        tools: Sequence[str] | None,
        budget: BudgetAsked | None,
        tainted_by: str | None,
    ) -> SubagentRecord:
        depth = child_depth(self.book, parent, self.options)
        # The arguments first: a wrong one is worth fixing even when the fan-out is full.
        allowed = child_tools(self._tools_of(parent), tools, depth=depth, options=self.options)
        limits = child_budget(budget, self.options)
        check_fan_out(self.book, parent, self.options)
        return SubagentRecord(
            subagent_id=subagent_id,
            parent=parent,
            depth=depth,
            task=task,
            tools=allowed,
            budget=limits,
            created_at=time.time(),
            tainted_by=tainted_by,
        )

    async def send_message(self, parent: str, subagent_id: str, text: str, call_id: str) -> str:
        record = self.child_of(parent, subagent_id)
        if record.state.ended:
            raise Refused(
                f"{subagent_id} has ended ({record.state.value}: {record.reason}); it takes no "
                "more messages - spawn a new subagent for new work"
            )
        record.state = State.RUNNING
        await self._save(record)
        taint = await self._taint_of(parent)  # the parent's now: what it read since the spawn
        await self._submit(events.message_event(record, text, call_id, tainted_by=taint))
        return f"sent to {subagent_id}; its answer will arrive as a subagent.result event"

    async def cancel(self, record: SubagentRecord, reason: str) -> None:
        """End the child for good: its run, its tool calls and process groups, its own
        children (its background tasks)."""
        if record.state.ended:
            return
        record.state, record.reason = State.CANCELLED, reason
        await self._save(record)
        log.info("subagent cancelled", subagent_id=record.subagent_id, reason=reason)
        await self._sessions.close(record.session, f"the subagent was cancelled ({reason})")
        # Its loop's task view ends them too while it runs; not so at start, before the
        # sessions resume (and a crash may have come between the two).
        for child in self._live_children(record.session):
            await self.cancel(child, f"its parent {record.subagent_id} was cancelled")

    async def report(self, child_session: str, call_id: str, text: str, urgent: bool) -> str:
        record = self.book.by_session(child_session)
        if record is None:
            raise Refused(
                "report_to_parent works only in a subagent's session; this session has no "
                "parent (use reply_to_user to talk to the user)"
            )
        words = f"Subagent {record.subagent_id} reports (still working on its task): {text}"
        await self._deliver(record, f"report-{call_id}", words, final=False, urgent=urgent)
        how = "interrupting it" if urgent else "at its next safe point"
        return f"delivered to your parent ({record.parent}), {how}"

    def child_of(self, parent: str, subagent_id: str) -> SubagentRecord:
        record = self.book.get(subagent_id)
        if record is None or record.parent != parent:
            known = ", ".join(r.subagent_id for r in self.book.children_of(parent))
            raise Refused(
                f"unknown subagent {subagent_id!r}; this session's subagents are: "
                f"{known or '(none - start one with spawn_subagent)'}"
            )
        return record

    async def usage(self, record: SubagentRecord) -> Usage:
        calls = await self._store.model_calls(record.session, limit=record.budget.model_calls + 1)
        tokens = sum(c.prompt_tokens + c.completion_tokens for c in calls)
        return Usage(len(calls), tokens, max(0.0, time.time() - record.created_at))

    async def budget_spent(self, session: str) -> str | None:
        """Why the child's runs must stop (its budget is used up); None: go on."""
        record = self.book.by_session(session)
        if record is None:
            return None
        used, budget = await self.usage(record), record.budget
        if used.model_calls >= budget.model_calls:
            return f"its budget of {budget.model_calls} model calls is used up"
        if used.tokens >= budget.tokens:
            return f"its budget of {budget.tokens} tokens is used up ({used.tokens} used)"
        if used.seconds >= budget.seconds:
            return f"its time budget of {budget.seconds:g} s is used up"
        return None

    # -- what the feed tells ---------------------------------------------------------------

    def observe(self, item: FeedItem) -> None:
        """Every feed item of every session; keeps (never blocking) the few that matter."""
        session = str(item.get("session", ""))
        kind = item.get("type")
        if kind == "run" and item.get("state") == "idle" and self.book.by_session(session):
            self._signals.send_nowait(_Signal("idle", session))
        elif kind == "alert" and self.book.by_session(session):
            self._signals.send_nowait(_Signal("alert", session, str(item.get("text", ""))))
        elif kind == "event" and item.get("stop_tools") and self._live_children(session):
            self._signals.send_nowait(_Signal("stop", session))

    async def handle_signals(self) -> None:
        """One at a time, in order; a failure is logged and the next one handled."""
        async for signal in self._inbox:
            try:
                await self._handle(signal)
            except Exception:
                log.exception("subagent bookkeeping failed", session=signal.session)

    async def _handle(self, signal: _Signal) -> None:
        if signal.kind == "alert":
            self._alerts[signal.session] = signal.text
        elif signal.kind == "stop":
            # Idle ones too: a child that answered may still have shell tasks running.
            for child in self._live_children(signal.session):
                await self.cancel(child, f"its parent {signal.session} was told to stop")
        elif (record := self.book.by_session(signal.session)) is not None:
            await self.settle(record)

    # -- results ---------------------------------------------------------------------------

    async def settle(self, record: SubagentRecord) -> None:
        """If the child has finished what it was given, tell its parent (once)."""
        if record.state.ended or self._sessions.is_busy(record.session):
            return
        if await self._store.pending(record.session):
            return  # more for it to do: its loop runs again and goes idle again
        messages = await self._store.trajectory(record.session)
        if not messages:
            return
        key = str(len(messages))  # the same answer after a restart: the same event id
        if _is_final_answer(messages[-1]):
            text = f"Subagent {record.subagent_id} finished: {_final_text(messages)}"
            record.state = State.IDLE
            await self._deliver(record, key, text, final=True)
            return
        spent = await self.budget_spent(record.session)
        if spent is not None:
            record.state, record.reason = State.EXHAUSTED, spent
            await self._sessions.close(record.session, f"the subagent stopped: {spent}")
            text = (
                f"Subagent {record.subagent_id} stopped before it finished: {spent}. "
                f"What it last said: {_final_text(messages)}"
            )
        else:
            why = self._alerts.pop(record.session, "its run stopped before it answered")
            record.state = State.IDLE
            text = (
                f"Subagent {record.subagent_id} has not finished: {why}. "
                "send_message_to_subagent continues it; cancel_subagent ends it."
            )
        await self._deliver(record, key, text, final=True)

    async def exhaust_when_late(self) -> None:
        """The seconds budget, enforced while a child works (its model calls and tokens are
        checked at its safe points): a child past its time is cancelled and its parent told."""
        while True:
            changed = self._changed
            working = [r for r in self.book.all() if r.state is State.RUNNING]
            deadline = min((r.created_at + r.budget.seconds for r in working), default=None)
            delay = math.inf if deadline is None else max(0.0, deadline - time.time())
            with anyio.move_on_after(delay):
                await changed.wait()
            if changed.is_set():
                continue
            for record in working:
                if time.time() >= record.created_at + record.budget.seconds:
                    await self._time_is_up(record)

    async def _time_is_up(self, record: SubagentRecord) -> None:
        spent = f"its time budget of {record.budget.seconds:g} s is used up"
        if record.state.ended:
            return
        record.state, record.reason = State.EXHAUSTED, spent
        await self._save(record)
        await self._sessions.close(record.session, f"the subagent stopped: {spent}")
        messages = await self._store.trajectory(record.session)
        text = (
            f"Subagent {record.subagent_id} was stopped before it finished: {spent}. "
            f"What it last said: {_final_text(messages)}"
        )
        await self._deliver(record, f"{len(messages)}-timeout", text, final=True)

    async def _deliver(
        self, record: SubagentRecord, key: str, text: str, *, final: bool, urgent: bool = False
    ) -> None:
        taint = await self._taint_of(record.session)
        event = events.result_event(
            record, key=key, text=text, final=final, urgent=urgent, tainted_by=taint
        )
        try:
            result = await self._submit(event)
        except Exception as exc:  # stopping or the store down: the next start settles it
            log.warning("subagent result not delivered yet", event_id=event.id, error=str(exc))
            await self._save(record)
            return
        if not result.duplicate:
            record.results += 1
            record.last_result = text[:500]
            log.info("subagent result delivered", subagent_id=record.subagent_id, final=final)
        await self._save(record)

    async def _taint_of(self, session: str) -> str | None:
        # Read from the store each time: the session's taint is kept there by the one
        # place that marks it (wakeful.core.session_taint), and changes as it runs.
        raw = await self._store.get_state(TAINT_KEY_PREFIX + session)
        taint = Taint.from_json(raw) if raw else None
        return taint.summary() if taint else None

    # -- after a restart -------------------------------------------------------------------

    async def recover(self) -> None:
        """Before sessions resume: ended children stay closed, and so do the children a
        crash kept from being ended (a parent's stop stored, or a parent cancelled, before
        they were); a working child's task is submitted again (the store drops it if it
        was in), in case the crash fell between its record and its event. Its results
        come when its loop goes idle."""
        records = await self.book.load()
        for record in records:
            if record.state.ended:
                await self._sessions.close(record.session, f"the subagent ended ({record.reason})")
        await self._end_what_a_crash_left()
        for record in self.book.all():
            if record.state is State.RUNNING:
                await self._submit(events.task_event(record))

    async def _end_what_a_crash_left(self) -> None:
        """The stop signal comes from the in-memory feed, so a crash after the stop was
        stored and before its children were cancelled would leave them running. The
        stored routing decisions say it again: a child is cancelled if its parent was
        told to stop after it was spawned, or if its parent is a child that ended."""
        parents: dict[str, list[SubagentRecord]] = {}
        for record in self.book.all():
            if not record.state.ended:
                parents.setdefault(record.parent, []).append(record)
        for parent, children in parents.items():
            ended_parent = self.book.by_session(parent)
            if ended_parent is not None and ended_parent.state.ended:
                for child in children:
                    await self.cancel(child, f"its parent {ended_parent.subagent_id} had ended")
                continue
            for stop in await self._stops(parent, after=min(r.parent_seq for r in children)):
                for child in children:
                    if _spawned_before(child, stop):
                        await self.cancel(child, f"its parent {parent} was told to stop")

    async def _stops(self, session: str, *, after: int) -> list[StoredEvent]:
        """The session's events after seq ``after`` whose decision stopped its tools."""
        found: list[StoredEvent] = []
        while page := await self._store.event_log(session, after_seq=after, limit=PAGE):
            found += [s for s in page if stopped_tools(s.event, s.strategy)]
            after = page[-1].seq
            if len(page) < PAGE:
                break
        return found

    # -- helpers ---------------------------------------------------------------------------

    def _tools_of(self, session: str) -> Sequence[str]:
        record = self.book.by_session(session)
        return record.tools if record is not None else self._all_tools()

    def _live_children(self, parent: str) -> list[SubagentRecord]:
        return [r for r in self.book.children_of(parent) if not r.state.ended]

    async def _save(self, record: SubagentRecord) -> None:
        record.updated_at = time.time()
        await self.book.save(record)
        self._changed.set()
        self._changed = anyio.Event()


def _spawned_before(child: SubagentRecord, stop: StoredEvent) -> bool:
    if child.parent_seq:
        return stop.seq > child.parent_seq
    return stop.accepted_at >= child.created_at  # a record from before parent_seq was kept


def _is_final_answer(message: Message) -> bool:
    return message.get("role") == "assistant" and not message.get("tool_calls")


def _final_text(messages: list[Message]) -> str:
    """The child's last words since its last input: its newest non-empty reply."""
    for message in reversed(messages):
        if message.get("role") == "user":
            break
        content = message.get("content")
        if message.get("role") == "assistant" and isinstance(content, str) and content.strip():
            return content.strip()
    return "(it wrote no text)"
