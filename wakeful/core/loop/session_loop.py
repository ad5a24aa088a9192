"""One agent loop per session (SPEC §4): wait, take a batch, call the model,
record, run tools, repeat — consuming events only at safe points.

Safe points are the top of :meth:`SessionLoop._run_until_idle`'s cycle: after
a model reply is recorded and after the tools' results are. The two steps in
between — streaming a reply and waiting for tools — run inside a cancel
scope that :meth:`SessionLoop.interrupt` cancels to force a safe point early
(the cancel strategy). Everything written to the trajectory goes through
:class:`TrajectoryWriter`, which holds the five rules.
"""

from __future__ import annotations

import dataclasses
import time
from contextlib import ExitStack
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup
from structlog.contextvars import bind_contextvars, bound_contextvars, unbind_contextvars

from wakeful.core.context.compaction import COMPACTION_PROMPT
from wakeful.core.context.save_before_compaction import save_before_compaction
from wakeful.core.context.session_context import ContextFull, SessionContext
from wakeful.core.loop.batch_room import event_room, oldest_that_fit
from wakeful.core.loop.deps import BatchGate, Interrupt, LoopDeps, Submit
from wakeful.core.loop.late_results import late_result_event, lost_result_text, unpaid_promises
from wakeful.core.loop.limits import Run
from wakeful.core.loop.model_call_log import log_model_call, model_call_record
from wakeful.core.loop.owed_reply import last_answered, reply_key, send_owed_reply
from wakeful.core.loop.queued_events import QueuedEvents
from wakeful.core.loop.status_bar import render_status_bar
from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.core.loop.tool_activity import PROGRESS_EVERY_S, tool_item
from wakeful.core.loop.tool_tasks import ToolTask, ToolTaskManager
from wakeful.core.provider import (
    HOW_TO_CONFIGURE,
    ContextTooLong,
    DeltaCallback,
    ModelKeyRefused,
    ModelRequest,
    ModelResponse,
    ProviderError,
    ToolCall,
    Usage,
)
from wakeful.core.spend import SpendRefused, SpendRequest
from wakeful.core.tool import ToolContext, ToolOutput, UserOutbox
from wakeful.core.trajectory.rendering import render_event
from wakeful.core.trajectory.rules import (
    CallInFlight,
    Interruption,
    PartialOutput,
    TrajectoryWriter,
    needs_model_response,
)
from wakeful.kernel import metrics, tracing
from wakeful.kernel.events import Event
from wakeful.store.base import ConsumeConflict, StoredEvent

log = structlog.get_logger(__name__)

# How far back a restart looks for placeholders whose promised result never came.
LATE_PROMISE_LOOKBACK = 500


class SessionLoop:
    def __init__(self, session: str, deps: LoopDeps, submit: Submit) -> None:
        self.session = session
        self.deps = deps
        self._submit = submit  # the dispatcher: how late tool results re-enter
        self.writer = TrajectoryWriter(deps.store, session)
        self.tasks = ToolTaskManager(
            session, deps.tools, self._tool_context, self._report_late_result
        )
        self.all_tasks = CombinedTaskView(
            [self.tasks, *(view(session) for view in deps.task_views)]
        )
        self.answering: Event | None = None  # the newest event taken: where replies go
        self.user_outbox = deps.outbox.for_session(session, lambda: self.answering)
        self.busy = False
        self.waiting_for_model_config = False
        self._wakeup = anyio.Event()
        self._asleep = False  # waiting for a wake-up (after the start's repair and replies)
        self.queued = QueuedEvents()  # the status bar's count, kept without store reads
        self._interrupt: Interrupt | None = None
        self._step_scope: anyio.CancelScope | None = None
        self.draining = False  # the daemon is stopping: start nothing new
        self.closed: str | None = None  # why it was ended for good (a cancelled subagent)
        self.forced_stop = False  # the stop could not wait for a safe point
        self._idle = anyio.Event()
        self._idle.set()
        self.gate: BatchGate | None = None  # set by the session's supervisor
        self.runs_finished = 0
        # The span of the batch being answered (its events' trace): model and tool calls
        # until the next batch is taken or the run ends are its children.
        self._turn = ExitStack()
        self._left_waiting = False  # the last safe point left events for the next one
        self.context = SessionContext(
            session,
            deps.store,
            deps.context,
            window=deps.context_window,
            output_dir=deps.output_dir,
            summarize=self._summarize if deps.provider.configured else None,
        )

    # -- signals from the dispatcher --------------------------------------------

    def notify(self, event_id: str | None = None) -> None:
        """New events are pending: handle them at the next safe point. ``event_id``:
        the event just put in the queue, counted as waiting until a safe point takes it."""
        if event_id is not None:
            self.queued.queued(event_id)
        self._wakeup.set()

    def interrupt(self, cause: str, *, stop_tools: bool, shutdown: bool = False) -> None:
        """Force a safe point now (the cancel strategy, or the daemon stopping)."""
        if self._interrupt is None or shutdown:
            self._interrupt = Interrupt(cause, stop_tools, shutdown)
        else:
            self._interrupt.stop_tools |= stop_tools
        if self._step_scope is not None:
            self._step_scope.cancel()
        self._wakeup.set()
        metrics.INTERRUPTS.inc(session=self.session)

    @property
    def at_rest(self) -> bool:
        """Idle with nothing owed: asleep between runs (not starting up, not running), no
        wake-up or event waiting, no task running (a shell command's process belongs to
        this daemon). A fleet gives only such a session to another daemon."""
        return (
            self._asleep
            and not self.busy
            and not self._wakeup.is_set()
            and len(self.queued) == 0
            and not self.all_tasks.running()
        )

    # -- stopping the daemon --------------------------------------------------------

    async def drain(self) -> None:
        """Stop at the next safe point and start no new run; returns once idle."""
        self.draining = True
        await self._idle.wait()

    def close(self, cause: str) -> None:
        """Stop for good (a subagent cancelled): no new run, and a step under way is
        cut short now, its running tools stopped (their placeholders name ``cause``).
        What arrives from then on (a stopped call's late result) is recorded as not
        handled, so nothing waits in its queue forever."""
        self.draining = True
        self.closed = cause
        if self.busy:
            self.interrupt(cause, stop_tools=True)
        self._wakeup.set()

    def stop_now(self) -> None:
        """Force the safe point: drop a stream, placeholders for running tools."""
        if self.busy:
            self.forced_stop = True
            self.interrupt("the daemon is stopping", stop_tools=True, shutdown=True)

    # -- the loop ---------------------------------------------------------------

    async def run_forever(self, group: TaskGroup) -> None:
        self.tasks.attach(group)
        with bound_contextvars(session=self.session):
            repaired = await self.writer.repair_after_restart()
            metrics.PLACEHOLDERS.inc(len(repaired.placeholders), session=self.session)
            await self._settle_unpaid_promises()
            self.answering = await last_answered(self.deps.store, self.session)
            if self.deps.scopes.delivers_replies(self.session):
                messages = await self.writer.messages()
                await send_owed_reply(self.session, messages, self.deps.outbox, self.answering)
            self._wakeup.set()  # events or a reply may be owed from before a restart
            while True:
                self._asleep = True
                try:
                    await self._wakeup.wait()
                finally:
                    self._asleep = False
                self._wakeup = anyio.Event()
                if self.closed is not None:
                    await self._record_unhandled(self.closed)
                elif not self.draining:
                    await self._run_until_idle()

    async def _run_until_idle(self) -> None:
        if not self.deps.provider.configured:
            self._note_waiting_for_model()
            return
        run = Run(self.deps.limits)
        self.busy = True
        self._idle = anyio.Event()
        self._publish({"type": "run", "state": "busy", "run_id": run.run_id})
        try:
            with bound_contextvars(run_id=run.run_id):
                while await self._cycle(run):
                    pass
            self.runs_finished += 1
            stuck = run.context_full is not None or run.refused is not None
            if self._left_waiting and not self.draining and not stuck:
                # A run stopped by a limit while a flood was presented part by part: the
                # rest was accepted and must not wait for an unrelated wake-up.
                self._wakeup.set()
        finally:
            self._turn.close()
            unbind_contextvars("event_id", "batch_size")
            self.busy = False
            self._idle.set()
            self._publish({"type": "run", "state": "idle", "run_id": run.run_id})

    async def _cycle(self, run: Run) -> bool:
        """One safe point and what follows it; False when the run is over."""
        if self.draining:
            return False  # a safe point: what is recorded is whole; the rest waits
        self._interrupt = None  # anything asked before this point is in the batch below
        # Events whose spending cap is reached stay queued until it reopens (SpendGuard).
        waiting = self._spendable(await self._read_queue())
        offered = batch = await self._oldest_that_fit(run, waiting)  # the rest waits
        dropped = 0
        if batch and self.gate is not None:
            batch = await self.gate.admit(batch)  # counts the attempt; drops poison
            held = {s.event.id for s in self.gate.held_back}
            self.queued.taken(s.event.id for s in offered if s.event.id not in held)
            dropped = len(offered) - len(batch) - len(held)
        else:
            self.queued.taken(s.event.id for s in batch)
        self._left_waiting = len(offered) < len(waiting)
        if batch:
            if self.deps.taints is not None:  # before: a crash can leave it tainted, never clean
                await self.deps.taints.mark_events(self.session, [s.event for s in batch])
            try:
                await self.writer.append_queued_batch(batch, total=len(waiting) - dropped)
            except ConsumeConflict as exc:
                log.warning("batch changed under us; taking it again", detail=str(exc))
                return True
            if self.gate is not None:
                self.gate.consumed()
            # The rest of the run handles these events: its log lines name them
            # (event_id: the newest, which woke the loop last). Unbound in _run_until_idle.
            bind_contextvars(event_id=batch[-1].event.id, batch_size=len(batch))
            self._begin_turn(run, batch)
            for stored in batch:
                await self.deps.outbox.note_event(stored.event)
            if all(s.parallel_answer is not None for s in batch):
                # Only notes of questions already answered in parallel: context for
                # the run that is going on, or for the next one; never a run alone.
                if not needs_model_response(await self.writer.messages()):
                    return False
            else:
                self.answering = batch[-1].event
        elif not needs_model_response(await self.writer.messages()):
            return False
        elif not self._spendable_now():
            return False  # owed an answer, but its cap is reached: at the reopening
        reason = run.exceeded() or await self.deps.scopes.stop_reason(self.session)
        if reason is not None:
            self._stop_run(reason)
            return False
        response = await self._call_model(run)
        if response is None:
            return True  # interrupted or failed: back to the safe point
        position = len(await self.writer.messages())  # the reply's key: see owed_reply.py
        if response.tool_calls:
            # Before the calls are in the history: a stop or a crash between the two
            # must not leave a call whose function the next request does not offer.
            await self._load_called_tools(response)
        await self.writer.record_assistant_message(response)
        if self.gate is not None:
            self.gate.answered()
        if response.content and self.deps.scopes.delivers_replies(self.session):
            key = reply_key(self.session, position)
            await self.deps.outbox.send(
                self.session, response.content, key=key, answering=self.answering
            )
        if response.tool_calls:
            await self._run_tools(run, response.tool_calls)
        return True

    def _begin_turn(self, run: Run, batch: list[StoredEvent]) -> None:
        """Close the previous batch's span and open this one's, in the trace of the
        newest event (whose submit span it continues); the other events are linked."""
        self._turn.close()
        tracer = tracing.tracer()
        if not tracer.enabled:
            return
        self._turn.enter_context(
            tracer.span(
                "invoke_agent wakeful",
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "wakeful",
                    "gen_ai.conversation.id": self.session,
                    "wakeful.run.id": run.run_id,
                    "wakeful.batch.size": len(batch),
                },
                continues=[s.event.id for s in batch],
            )
        )

    async def _load_called_tools(self, response: ModelResponse) -> None:
        """A deferred tool the model called is in every later request's tools array,
        whatever becomes of the call (run, refused, cancelled before it started, its
        executor crashed): a call in the history must find its function's schema."""
        if self.deps.surface is not None:
            await self.deps.surface.load(self.session, [c.name for c in response.tool_calls])

    # -- model step ---------------------------------------------------------------

    async def _call_model(self, run: Run) -> ModelResponse | None:
        try:
            request = await self._build_request(run)
        except ContextFull as exc:
            run.context_full = str(exc)  # the run stops at its next safe point, with an alert
            return None
        run.model_calls += 1
        streamed = self.writer.begin_model_step()  # rule 4: the writer holds the partial text

        async def on_delta(text: str) -> None:
            streamed.append(text)
            self._publish({"type": "delta", "delta": text})  # not "text": that key is a message

        response: ModelResponse | None = None
        started = time.monotonic()
        try:
            with self._interruptible() as scope:
                response = await self._complete(request, on_delta, self.context.last_estimate)
        except SpendRefused as exc:
            run.refused = str(exc)  # the run stops at its safe point; the events are kept
            await self._record_call(run, None, time.monotonic() - started, f"refused: {exc}")
            return None
        except ContextTooLong as exc:
            self._retract_deltas(streamed, "the request was too long")
            self.writer.discard_partial_output(streamed, "the request was too long")
            await self._record_call(run, None, time.monotonic() - started, f"error: {exc}")
            await self._too_long(run, request, exc)
            return None
        except ProviderError as exc:
            self._retract_deltas(streamed, "the model call failed")
            self.writer.discard_partial_output(streamed, "the model call failed")
            await self._model_failed(run, exc, time.monotonic() - started)
            return None
        if scope.cancelled_caught or response is None:
            cause = self._interrupt.cause if self._interrupt else "an interrupt"
            self._retract_deltas(streamed, cause)
            self.writer.discard_partial_output(streamed, cause)
            run.interrupts += 1
            await self._record_call(run, None, time.monotonic() - started, "interrupted")
            return None
        run.consecutive_failures = 0
        run.last_failure = None
        if response.usage.prompt_tokens:
            self.context.observe(response.usage.prompt_tokens)
        await self.context.fitted()
        await self._record_call(run, response, response.latency_s, "ok")
        return response

    def _origin(self) -> str:
        """The source of what the run answers: per-source spending caps count by it."""
        return self.answering.source.type if self.answering is not None else "user"

    def _spendable(self, batch: list[StoredEvent]) -> list[StoredEvent]:
        """The events whose spending caps are open (SpendGuard); the others stay queued."""
        guard = self.deps.spend
        if guard is None:
            return batch
        kept = [s for s in batch if guard.closed(self.session, s.event.source.type) is None]
        if len(kept) < len(batch):
            log.info("events wait for a spending cap", waiting=len(batch) - len(kept))
        return kept

    def _spendable_now(self) -> bool:
        guard = self.deps.spend
        return guard is None or guard.closed(self.session, self._origin()) is None

    async def _complete(
        self, request: ModelRequest, on_delta: DeltaCallback | None, estimate: int
    ) -> ModelResponse:
        """The provider's call in its span (the GenAI conventions' ``chat {model}``)."""
        model = request.model or self.deps.model_name
        with tracing.tracer().span(
            f"chat {model}",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": self.deps.provider_name,
                "gen_ai.request.model": model,
                "gen_ai.conversation.id": self.session,
            },
            kind="client",
        ) as span:
            response = await self._guarded_complete(request, on_delta, estimate)
            # Names and counts only: no prompt or completion text (no secrets in spans).
            span.set("gen_ai.response.model", response.model)
            usage = response.usage
            if usage.prompt_tokens or usage.completion_tokens:  # zeros: none was reported
                span.set("gen_ai.usage.input_tokens", usage.prompt_tokens)
                span.set("gen_ai.usage.output_tokens", usage.completion_tokens)
            if response.finish_reason:
                span.set("gen_ai.response.finish_reasons", (response.finish_reason,))
            return response

    async def _guarded_complete(
        self, request: ModelRequest, on_delta: DeltaCallback | None, estimate: int
    ) -> ModelResponse:
        """The call, with its worst case held against the spending caps first (a call
        that would cross one is refused, not made) and what it used settled after."""
        guard = self.deps.spend
        if guard is None:
            return await self.deps.provider.complete(request, on_delta)
        if request.max_tokens is None:  # the worst case needs a reply limit
            request = dataclasses.replace(request, max_tokens=guard.reply_limit)
        spend = SpendRequest(
            session=self.session,  # a summary counts for its session too
            origin=self._origin(),
            model=request.model or "",  # "": the configured model
            input_tokens=estimate,
            max_output_tokens=request.max_tokens or guard.reply_limit,
        )
        ticket = await guard.reserve(spend)
        usage: Usage | None = None
        try:
            response = await self.deps.provider.complete(request, on_delta)
            usage = response.usage if response.usage.prompt_tokens else None
            return response
        finally:
            with anyio.CancelScope(shield=True):
                await guard.settle(ticket, usage)

    async def _too_long(self, run: Run, request: ModelRequest, exc: ContextTooLong) -> None:
        """The provider's "too long" is never retried as it was: shrink at once and retry
        once; if that cannot fit either, the run stops naming the session."""
        log.warning("model said the request is too long", error=str(exc))
        if run.context_retried:
            run.context_full = (
                f"session {self.session}'s request is still too long for the model after "
                f"pruning and compaction ({exc}); the events are kept"
            )
            return
        run.context_retried = True
        self.context.refused(str(exc))
        fixed = [request.messages[0], request.tools, request.messages[-1]]
        try:
            await self.context.shrink(await self.writer.messages(), fixed, forced=True)
        except ContextFull as full:
            run.context_full = str(full)

    async def _summarize(self, transcript: str) -> str:
        """The compaction's summary, written by the session's model — after the silent
        turn that lets it save what must outlive the summary (save_before_compaction)."""
        names = set(self.deps.compaction_tools)
        offered = [d for d in self.deps.tools.definitions() if d["function"]["name"] in names]

        async def complete(request: ModelRequest, estimate: int) -> ModelResponse:
            return await self._complete(request, None, estimate)

        async def execute(name: str, arguments: str, call_id: str) -> ToolOutput:
            context = self.tool_context(f"save-{call_id}", self.user_outbox)
            return await self.deps.tools.execute(name, arguments, context)

        await save_before_compaction(
            transcript, offered, complete, execute, self.context.tokens.count_all
        )
        messages: list[Any] = [
            {"role": "system", "content": COMPACTION_PROMPT},
            {"role": "user", "content": transcript},
        ]
        request = ModelRequest(messages=messages, max_tokens=4000)
        # Counted against the caps like any call: a summary is not free.
        estimate = self.context.tokens.count_all(messages)
        response = await self._complete(request, None, estimate)
        return response.content

    async def next_request(self) -> ModelRequest:
        """What a model call starting now would send (`wakeful trajectory --raw`); no call."""
        return await self._build_request(Run(self.deps.limits))

    async def _read_queue(self) -> list[StoredEvent]:
        """The session's waiting events, from the store (a safe point's read)."""
        self.queued.begin_read()
        waiting = await self.deps.store.pending(self.session)
        self.queued.read(s.event.id for s in waiting)
        return waiting

    async def _oldest_that_fit(self, run: Run, waiting: list[StoredEvent]) -> list[StoredEvent]:
        """The oldest waiting events that one request can show whole (batch_room.py)."""
        if len(waiting) <= 1:
            return waiting
        # The fixed part of the last request built; before the first, what one would carry.
        fixed = self.context.fixed_tokens or self.context.tokens.count_all(
            await self._fixed_part(run)
        )
        room = event_room(self.context.budget, fixed)
        last_agent_at = self.writer.last_agent_at
        total = len(waiting)

        def cost(stored: StoredEvent) -> int:
            marker = f"[Unprocessed event {total}/{total}] "
            content = marker + render_event(stored, last_agent_at)
            return self.context.tokens.count({"role": "user", "content": content})

        return oldest_that_fit(waiting, room, cost)

    async def _fixed_part(self, run: Run) -> list[Any]:
        """What every request carries besides the history: system prompt, tools, status bar."""
        status = render_status_bar(
            run,
            running_tasks=self.all_tasks.running(),
            timers=[t for t in self.all_tasks.list_tasks() if t.get("kind") == "timer"],
            pending_events=len(self.queued),
            taint=await self.deps.taints.get(self.session) if self.deps.taints else None,
            approvals=[a.public() for a in await self.deps.approvals.pending(self.session)]
            if self.deps.approvals
            else (),
            plan=await self.deps.plans.get(self.session) if self.deps.plans else None,
        )
        system = {"role": "system", "content": await self.deps.prompts.for_session(self.session)}
        surface = self.deps.surface
        tools = await surface.tools_for(self.session) if surface else self.deps.tools.definitions()
        return [system, tools, status]

    async def _build_request(self, run: Run) -> ModelRequest:
        if not self.queued.known:  # no safe point yet (no model configured, or --raw)
            await self._read_queue()
        system, tools, status = await self._fixed_part(run)
        compactions = self.context.compactions_done
        # Within the budget: pruned or compacted when it would not be (ContextFull if
        # even that cannot fit).
        messages = await self.context.fit(await self.writer.messages(), [system, tools, status])
        if self.context.compactions_done != compactions:
            # The cached prefix is gone with the history it held: the system prompt is
            # composed again, with what the live sections (the memory digest) say now.
            self.deps.prompts.renew(self.session)
            system = {
                "role": "system",
                "content": await self.deps.prompts.for_session(self.session),
            }
        # The session: the provider encodes only what changed since its last request.
        return ModelRequest(
            messages=[system, *messages, status],
            tools=tools,
            model=self.deps.session_models.get(self.session),
            session=self.session,
        )

    async def _model_failed(self, run: Run, exc: ProviderError, elapsed: float) -> None:
        run.consecutive_failures += 1
        log.warning("model call failed", error=str(exc), failures=run.consecutive_failures)
        if isinstance(exc, ModelKeyRefused):  # one alert, at the safe point: "run stopped"
            run.refused = str(exc)
            self.deps.model_health.key_refused()
            await self._record_call(run, None, elapsed, f"error: {exc}")
            return
        # Watchers are told a failure once: its retries fail the same way, and the run's
        # end says how many times ("run stopped: the model failed 3 times in a row").
        # One failure used to print the same error three to five times.
        if str(exc) != run.last_failure:
            run.last_failure = str(exc)
            self._publish({"type": "alert", "text": f"model call failed: {exc}"})
        await self._record_call(run, None, elapsed, f"error: {exc}")
        if run.exceeded() is None:
            with self._interruptible():
                await anyio.sleep(run.backoff_s())

    async def _record_call(
        self, run: Run, response: ModelResponse | None, latency: float, outcome: str
    ) -> None:
        record = model_call_record(
            self.session, run.run_id, response, latency, outcome, self._origin()
        )
        metrics.record_model_call(record)
        self.deps.model_health.record(record)
        log_model_call(record)
        await self.deps.store.record_model_call(record)

    # -- tool step ----------------------------------------------------------------

    async def _run_tools(self, run: Run, calls: tuple[ToolCall, ...]) -> None:
        started = [self.tasks.start(call) for call in calls]
        for task in started:
            self._publish({"type": "task", **task.describe(), "state": "started"})
            self._publish(tool_item(task, "started"))
        try:
            with self._interruptible():
                async with anyio.create_task_group() as group:
                    for task in started:
                        group.start_soon(self._record_when_done, task)
        except Exception:
            # The run failed (its supervisor restarts it): the calls still running
            # are stopped, and their placeholders say so rather than "shutdown".
            self._interrupt = self._interrupt or Interrupt("the session's run failed", True)
            raise
        finally:
            # Shutdown or interrupt: whatever is unfinished is closed here (rule 3).
            with anyio.CancelScope(shield=True):
                await self._close_unfinished(started)

    async def _record_when_done(self, task: ToolTask) -> None:
        while not task.done.is_set():
            with anyio.move_on_after(PROGRESS_EVERY_S) as waited:
                await task.done.wait()
            if waited.cancelled_caught:
                self._publish(tool_item(task, "progress"))
        self._publish({"type": "task", **task.describe()})
        self._publish(tool_item(task, "finished"))
        with anyio.CancelScope(shield=True):
            await self.writer.record_tool_result(task)  # rule 2

    async def _close_unfinished(self, started: list[ToolTask]) -> None:
        # No interrupt recorded means the session's own task group is being
        # cancelled: the daemon is stopping and no late result can follow.
        interrupt = self._interrupt or Interrupt(
            "the daemon is stopping", stop_tools=True, shutdown=True
        )
        # Rule 3. At shutdown the placeholder is the call's final word: no late event.
        interruption = Interruption(interrupt.cause, interrupt.stop_tools, interrupt.shutdown)
        by_id = {task.call_id: task for task in started}

        def cancel(call: CallInFlight) -> None:  # at once, not after the write
            if interrupt.stop_tools:
                by_id[call.call_id].scope.cancel()

        closed = await self.writer.close_interrupted_calls(started, interruption, cancel)
        metrics.PLACEHOLDERS.inc(len(closed), session=self.session)

    def _tool_context(self, call: ToolCall) -> ToolContext:
        return self.tool_context(call.id, self.user_outbox)

    def tool_context(self, call_id: str, outbox: UserOutbox) -> ToolContext:
        """What a tool call of this session runs with (main run or side session)."""
        return ToolContext(
            session=self.session,
            call_id=call_id,
            workspace=self.deps.workspace,
            output_dir=self.deps.output_dir,
            tasks=self.all_tasks,
            outbox=outbox,
            event_id=self.answering.id if self.answering is not None else None,
        )

    async def _report_late_result(self, task: ToolTask) -> None:
        """A call answered by a placeholder finished: its outcome becomes an event."""
        text = task.output.text if task.output else "(no output)"
        summary = f"{task.state.value} after {task.elapsed_s():.1f} s. {text}"
        await self._submit_quietly(
            late_result_event(self.session, task.call.id, task.call.name, summary)
        )

    async def _settle_unpaid_promises(self) -> None:
        """After a kill, a promised result may never come; say so (deduplicated)."""
        messages = await self.writer.messages()
        for call_id, tool in unpaid_promises(messages[-LATE_PROMISE_LOOKBACK:]):
            event = late_result_event(self.session, call_id, tool, lost_result_text(tool))
            await self._submit_quietly(event)

    async def _submit_quietly(self, event: Event) -> None:
        try:
            await self._submit(event)
        except Exception:
            log.exception("could not enqueue a late tool result", event_id=event.id)

    async def _record_unhandled(self, cause: str) -> None:
        """A closed session's pending events leave its queue into its trajectory with
        the reason they were not handled (no model sees them)."""
        pending = await self.deps.store.pending(self.session)
        if not pending:
            return
        try:
            await self.writer.record_unhandled(pending, cause)
        except ConsumeConflict:
            self._wakeup.set()  # taken meanwhile (a parallel answer): look again
            return
        # Out of the queue's count too: else the loop never counts as idle again (a fleet
        # hands an idle session over; a stop waits for it).
        self.queued.taken(s.event.id for s in pending)
        log.info(
            "events not handled: the session is closed",
            event_ids=[s.event.id for s in pending],
            cause=cause,
        )

    # -- helpers ------------------------------------------------------------------

    def _interruptible(self) -> anyio.CancelScope:
        scope = anyio.CancelScope()
        self._step_scope = scope
        if self._interrupt is not None:
            scope.cancel()  # asked to stop between safe point and step: do not start it
        return scope

    def _stop_run(self, reason: str) -> None:
        log.warning("run stopped", reason=reason)
        self._publish({"type": "alert", "text": f"run stopped: {reason}"})

    def _note_waiting_for_model(self) -> None:
        if not self.waiting_for_model_config:
            self.waiting_for_model_config = True
            log.warning("events are stored and waiting", reason=HOW_TO_CONFIGURE)

    def _retract_deltas(self, streamed: PartialOutput, cause: str) -> None:
        """Watchers drop the text they were shown as it streamed: it is not a reply."""
        chars = len(streamed.text())
        if chars:
            self._publish({"type": "discarded", "chars": chars, "cause": cause})

    def publish_alert(self, text: str) -> None:
        self._publish({"type": "alert", "text": text})

    def _publish(self, item: dict[str, Any]) -> None:
        self.deps.feed.publish(self.session, item)
