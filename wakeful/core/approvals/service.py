"""Approvals, the service: a call needing the owner's yes waits as a durable record.

The chain files a :class:`Approval` and the call's tool message becomes an
honest placeholder; the loop goes on. The owner decides (web page, chat,
CLI, HTTP) or the approval times out into the conservative choice, deny.
Either way the outcome re-enters the session as events through the
machinery rule 3 already has: an ``approval.decided`` event and a
``tool.result`` event that pays the placeholder (same id as a late result,
so the store's dedup keeps exactly one).

An approved call runs exactly once, even across a restart: its record moves
pending → approved → running → done in the store, and a start-up finds an
``approved`` record and runs it, a ``running`` one (killed mid-call) and
reports it lost rather than running it twice.

In a fleet (several daemons on one Redis) every daemon files, lists and decides
any approval, so none is the records' only writer: each reads them from the store,
and only the daemon that owns a session announces, times out and carries out its
approvals (an :class:`Approvals` built ``shared``). Every change of a record is a
compare-and-set on the text read (:meth:`ChannelState.put_state_if`), re-read and
re-judged when another writer came in between: two decisions at the same instant
on two daemons leave exactly one standing, and the owner's "announced" mark never
overwrites a decision made elsewhere.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import anyio
import structlog
from anyio.abc import TaskStatus

from wakeful.core.approvals.outcome_events import (
    answered_text,
    decided_event,
    denied_text,
    outcome_event,
    timed_out_text,
)
from wakeful.core.approvals.record import (
    DECIDED,
    KEEP_DECIDED_S,
    KEY_PREFIX,
    SHARED_POLL_S,
    Approval,
    ApprovalState,
    DecideOutcome,
    approval_id,
)
from wakeful.kernel.events import Event
from wakeful.store.base import ChannelState, StoreUnavailable

log = structlog.get_logger(__name__)


# Runs an approved call (the registry, without the chain) and returns its result text.
RunApproved = Callable[[Approval], Awaitable[str]]
# Tells the owner an approval waits (chat notification, web feed).
Announce = Callable[[Approval], Awaitable[None]]
# Counts an owner's denial towards the session's breaker.
CountDenial = Callable[[str], Awaitable[object]]


class ApprovalEffects(Protocol):
    """What the daemon does with approvals, given at construction."""

    async def submit(self, event: Event) -> object:
        """The decision and the call's outcome re-enter the session as events."""
        ...

    async def run_approved(self, approval: Approval) -> str:
        """Run an approved call (the registry, without the chain); its result text."""
        ...

    async def announce(self, approval: Approval) -> None:
        """Tell the owner an approval waits (chat notification, web feed)."""
        ...

    def owns(self, session: str) -> bool:
        """Whether this daemon drives ``session`` (asked only when shared, a fleet)."""
        ...


# One change of a record, given its current text: the record to write instead, or None
# to leave it (it is no longer in the state the change is for).
Step = Callable[[Approval], Approval | None]


@dataclass(frozen=True)
class _Stored:
    """A record as read, with its exact text: what a compare-and-set expects."""

    approval: Approval
    raw: str


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="seconds")


class Approvals:
    """Files, lists, decides and times out approvals; runs approved calls once."""

    def __init__(
        self,
        state: ChannelState,
        *,
        timeout_s: float,
        effects: ApprovalEffects | None = None,
        count_denial: CountDenial | None = None,
        shared: bool = False,
    ) -> None:
        """``effects``: what is done with a decision (None: records only, as in tools
        that file and decide without a daemon). ``count_denial``: the breaker's count.
        ``shared`` (a fleet): other daemons write these records too, so they are read
        from the store each time (no cache), and this daemon acts only on the approvals
        of the sessions it drives (``effects.owns``) — the owner runs an approved call
        in its session's context, once."""
        self._state = state
        self.timeout_s = timeout_s
        self._effects = effects
        self._count_denial = count_denial
        self._shared = shared
        self._cache: dict[str, _Stored] | None = None
        self._changed = anyio.Event()
        self._group: anyio.abc.TaskGroup | None = None
        self._running_here: set[str] = set()  # approved calls this process runs now

    def _mine(self, approval: Approval) -> bool:
        return not self._shared or self._effect().owns(approval.session)

    def _effect(self) -> ApprovalEffects:
        assert self._effects is not None, "Approvals was built without its effects"
        return self._effects

    # -- filing ----------------------------------------------------------------

    async def request(
        self,
        *,
        session: str,
        call_id: str,
        tool: str,
        arguments: str,
        reason: str,
        tainted_by: str | None,
        kind: str = "call",
        default: str | None = None,
        timeout_s: float | None = None,
        effect: str = "",
    ) -> Approval:
        """File one (idempotent per call). ``kind``: "call", "question" or "input";
        ``timeout_s``: sooner than the configured timeout, for a question that cannot
        wait (never later)."""
        identifier = approval_id(session, call_id)
        existing = await self.get(identifier)
        if existing is not None:
            return existing
        now = datetime.now(UTC)
        wait_s = min(timeout_s or self.timeout_s, self.timeout_s)
        approval = Approval(
            id=identifier,
            session=session,
            call_id=call_id,
            tool=tool,
            arguments=arguments,
            reason=reason,
            tainted_by=tainted_by,
            requested_at=_iso(now),
            expires_at=_iso(now + timedelta(seconds=wait_s)),
            kind=kind,
            default=default,
            timeout_s=wait_s,
            effect=effect,
        )
        if not await self._put_if(approval.id, None, approval):
            filed = await self.get(identifier)  # filed at the same instant elsewhere
            if filed is not None:
                return filed
            raise RuntimeError(f"approval {identifier} vanished while it was filed")
        log.warning(
            "approval needed", approval_id=identifier, tool=tool, session=session, reason=reason
        )
        self._changed.set()  # the supervised task tells the owner, not the tool call
        return approval

    # -- reading ---------------------------------------------------------------

    async def _records(self) -> dict[str, _Stored]:
        """Every record, read from the store once: this object is their only writer, and
        the status bar asks for the pending ones on every model request. In a fleet it
        is not: read each time."""
        if self._cache is not None:
            return self._cache
        raw = await self._state.states_under(KEY_PREFIX)
        records = {
            key.removeprefix(KEY_PREFIX): _Stored(Approval.from_json(value), value)
            for key, value in raw.items()
        }
        if not self._shared:
            self._cache = records
        return records

    async def _read(self, identifier: str) -> _Stored | None:
        if self._cache is not None or not self._shared:
            return (await self._records()).get(identifier)
        raw = await self._state.get_state(KEY_PREFIX + identifier)
        return None if raw is None else _Stored(Approval.from_json(raw), raw)

    async def get(self, identifier: str) -> Approval | None:
        found = await self._read(identifier.strip().lower())
        return None if found is None else found.approval

    async def all(self) -> list[Approval]:
        found = [stored.approval for stored in (await self._records()).values()]
        return sorted(found, key=lambda a: (a.requested_at, a.id))

    async def pending(self, session: str | None = None) -> list[Approval]:
        return [
            a
            for a in await self.all()
            if a.state is ApprovalState.PENDING and (session is None or a.session == session)
        ]

    # -- deciding --------------------------------------------------------------

    async def decide(
        self, identifier: str, decision: str, *, reason: str = "", by: str = "owner"
    ) -> tuple[DecideOutcome, Approval | None]:
        """``decision`` is "approve" or "deny" ("answer", with the text as ``reason``, for
        a request for input); the first decision stands."""
        if decision not in ("approve", "deny", "answer"):
            raise ValueError(f'decision must be "approve", "deny" or "answer", got {decision!r}')
        while True:  # again when another writer changed the record since it was read
            found = await self._read(identifier.strip().lower())
            if found is None:
                return DecideOutcome.UNKNOWN, None
            approval = found.approval
            if approval.state is not ApprovalState.PENDING:
                return DecideOutcome.ALREADY, approval
            if (decision == "answer") != (approval.kind == "input"):
                return DecideOutcome.WRONG_KIND, approval
            decided = replace(
                approval,
                state=ApprovalState.DENIED if decision == "deny" else ApprovalState.APPROVED,
                decision=decision,
                decided_by=by,
                decided_reason=reason.strip() or None,
                decided_at=_iso(datetime.now(UTC)),
            )
            if await self._put_if(approval.id, found.raw, decided):
                break
        log.info("approval decided", approval_id=decided.id, decision=decision, by=by)
        # A refused tool call counts towards the breaker; saying no to a question does not.
        if decision == "deny" and decided.kind == "call" and self._count_denial is not None:
            await self._count_denial(decided.session)
        self._changed.set()
        return DecideOutcome.DECIDED, decided

    # -- the supervised task ---------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Times out pending approvals and carries out decisions, also those a
        restart interrupted; owned by the daemon's task group."""
        async with anyio.create_task_group() as group:
            self._group = group
            await self._settle_after_restart()
            task_status.started()
            while True:
                self._changed = anyio.Event()
                try:
                    wait_s = await self._one_pass(group)
                except StoreUnavailable as exc:  # the store comes back; the records wait
                    log.warning("approvals wait for the store", error=str(exc))
                    wait_s = SHARED_POLL_S
                with anyio.move_on_after(wait_s):
                    await self._changed.wait()

    async def _one_pass(self, group: anyio.abc.TaskGroup) -> float:
        """Carry out what was decided, forget what is old, time out what expired; how
        long until the next pass is due."""
        await self._carry_out_decisions(group)
        await self.forget_old()
        wait_s = await self._time_out_expired()
        if self._shared:  # a decision may come through another daemon
            wait_s = min(wait_s, SHARED_POLL_S)
        return wait_s

    async def _settle_after_restart(self) -> None:
        for approval in await self.all():
            if approval.state is ApprovalState.RUNNING and self._mine(approval):
                await self._report_lost(approval)

    async def _report_lost(self, approval: Approval) -> None:
        text = (
            f"lost: the daemon stopped while the approved {approval.tool} call ran, so "
            "its outcome is unknown. It may have partially executed — verify its "
            "effects before retrying. It was not run a second time."
        )
        await self._finish(approval, ApprovalState.RUNNING, ApprovalState.DONE, text)

    async def _carry_out_decisions(self, group: anyio.abc.TaskGroup) -> None:
        for approval in await self.all():
            if not self._mine(approval):
                continue  # the session's owner carries it out
            if approval.state is ApprovalState.PENDING and not approval.announced:
                await self._tell_owner(approval)
            elif approval.state is ApprovalState.APPROVED and approval.kind != "call":
                text = answered_text(approval)
                await self._finish(approval, ApprovalState.APPROVED, ApprovalState.DONE, text)
            elif approval.state is ApprovalState.APPROVED:
                # Marked running before it starts (a restart never runs it twice), and only
                # if it is still approved: one daemon starts it, whoever else read it.
                step = _when(ApprovalState.APPROVED, state=ApprovalState.RUNNING)
                running = await self._change(approval.id, step)
                if running is None:
                    continue
                self._running_here.add(approval.id)
                group.start_soon(self._execute, running, name=f"approved {approval.id}")
            elif approval.state is ApprovalState.RUNNING and self._shared:
                if approval.id not in self._running_here:  # its earlier owner stopped
                    await self._report_lost(approval)
            elif approval.state is ApprovalState.DENIED and not approval.reported:
                text = denied_text(approval)
                await self._finish(approval, ApprovalState.DENIED, ApprovalState.DENIED, text)
            elif approval.state in DECIDED and not approval.reported:
                await self._report(approval)

    async def _tell_owner(self, approval: Approval) -> None:
        if self._effects is not None:
            try:
                await self._effects.announce(approval)
            except Exception:  # best effort: the web page, CLI and API still show it
                log.exception("could not announce an approval", approval_id=approval.id)
        # A decision may have come meanwhile, here or elsewhere: it is kept.
        await self._change(approval.id, _when(ApprovalState.PENDING, announced=True))

    async def _execute(self, approval: Approval) -> None:
        started = time.monotonic()
        try:
            result = await self._effect().run_approved(approval)
        except Exception as exc:  # the registry turns tool faults into results; this is ours
            log.exception("approved call failed to run", approval_id=approval.id)
            result = f"the approved call could not be run: {type(exc).__name__}: {exc}"
        took = time.monotonic() - started
        text = f"approved by the owner and run once ({took:.1f} s). Its result:\n{result}"
        with anyio.CancelScope(shield=True):
            try:
                await self._finish(approval, ApprovalState.RUNNING, ApprovalState.DONE, text)
            finally:
                self._running_here.discard(approval.id)

    async def _time_out_expired(self) -> float:
        """Deny what expired; seconds until the next expiry (or a long wait)."""
        now = datetime.now(UTC)
        next_s = 3600.0
        for approval in await self.pending():
            if not self._mine(approval):
                continue  # its owner times it out
            expires = datetime.fromisoformat(approval.expires_at)
            if expires <= now:
                step = _when(
                    ApprovalState.PENDING,
                    state=ApprovalState.TIMED_OUT,
                    decision="timeout",
                    decided_by="timeout",
                    decided_at=_iso(now),
                )
                timed_out = await self._change(approval.id, step)
                if timed_out is None:
                    continue  # decided meanwhile: that decision stands
                text = timed_out_text(approval)
                log.info("approval timed out", approval_id=approval.id)
                state = ApprovalState.TIMED_OUT
                await self._finish(timed_out, state, state, text)
            else:
                next_s = min(next_s, (expires - now).total_seconds())
        return max(0.05, next_s)

    async def _finish(
        self, approval: Approval, before: ApprovalState, state: ApprovalState, text: str
    ) -> None:
        """Moves the record from ``before`` to ``state`` with the outcome and reports it;
        nothing if it left ``before`` meanwhile (another daemon finished it)."""
        finished = await self._change(approval.id, _when(before, state=state, outcome=text))
        if finished is not None:
            await self._report(finished)

    async def _report(self, approval: Approval) -> None:
        """The decision and the call's outcome, as events (deduplicated by id)."""
        try:
            await self._effect().submit(decided_event(approval))
            await self._effect().submit(outcome_event(approval))
        except Exception:
            log.exception("could not report an approval's outcome; retrying", id=approval.id)
            return  # stays unreported: the next pass retries
        await self._change(approval.id, _when(approval.state, reported=True))

    async def _change(self, identifier: str, step: Step) -> Approval | None:
        """``step`` applied to the current record, atomically: re-read and re-applied
        when another writer came in between. The record written, or None if ``step``
        left it (or there is none)."""
        while True:
            found = await self._read(identifier)
            if found is None:
                return None
            changed = step(found.approval)
            if changed is None:
                return None
            if await self._put_if(identifier, found.raw, changed):
                return changed

    async def _put_if(
        self, identifier: str, expected: str | None, approval: Approval | None
    ) -> bool:
        """Compare-and-set of one record (``None`` deletes it); the cache follows."""
        text = None if approval is None else approval.to_json()
        if not await self._state.put_state_if(KEY_PREFIX + identifier, expected, text):
            if not self._shared:
                self._cache = None  # someone else wrote after all: read the store again
            return False
        if self._cache is not None:
            if approval is None or text is None:
                self._cache.pop(identifier, None)
            else:
                self._cache[identifier] = _Stored(approval, text)
        return True

    async def forget_old(self) -> int:
        """Drop decided records older than KEEP_DECIDED_S; returns how many."""
        cutoff = datetime.now(UTC) - timedelta(seconds=KEEP_DECIDED_S)
        dropped = 0
        for stored in list((await self._records()).values()):
            approval = stored.approval
            old = approval.decided_at and datetime.fromisoformat(approval.decided_at) < cutoff
            if approval.state in DECIDED and approval.reported and old:
                # Another daemon may drop it at the same pass: one of them counts it.
                dropped += await self._put_if(approval.id, stored.raw, None)
        return dropped


def _when(only_in: ApprovalState, **changes: Any) -> Step:
    """A step that makes ``changes`` to a record still in ``only_in``, and leaves any other."""

    def step(current: Approval) -> Approval | None:
        return replace(current, **changes) if current.state is only_in else None

    return step
