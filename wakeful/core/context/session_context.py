"""One session's context budget: fit the request, prune, compact, and say when it cannot.

The one place that decides what of the stored history a request carries.
Called when a request is built (:meth:`SessionContext.fit`) and when the
provider says a request was too long (:meth:`SessionContext.shrink`).
"""

from __future__ import annotations

import dataclasses
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import structlog

from wakeful.core.context.breaker import CompactionBreaker, closed
from wakeful.core.context.compaction import Summarize, write_summary
from wakeful.core.context.config import ContextSection
from wakeful.core.context.tokens import CHARS_PER_TOKEN, TokenEstimator, raw_estimate
from wakeful.core.context.view import ContextView, carried_until, safe_boundaries, tool_names
from wakeful.core.tool_output import shape_output
from wakeful.core.trajectory.normalizer import normalize
from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)

Message = dict[str, Any]
KEY_PREFIX = "context:"
COUNT_CACHE_MIN = 50_000  # messages whose token counts are remembered
PRUNE_MIN_CHARS = 2000  # a tool result smaller than this is not worth a stub
TRIM_MIN_CHARS = 800  # a trimmed result keeps at least this much of its head and tail
TRIM_NOTE_TOKENS = 120  # the note a trimmed result gains (where its full text is)
SUMMARY_ALLOWANCE = 1500  # tokens left for the summary when choosing the boundary
# Pruning aims below this share of the budget, so it happens rarely (each prune
# costs one prompt-cache miss), not every turn the budget is near.
LOW_WATER = 0.6


_WINDOW_IN_ERROR = re.compile(r"maximum context length is (\d+)|> ?(\d+) maximum", re.IGNORECASE)


class ContextFull(Exception):
    """The request cannot be made to fit; the message says why and what to do."""


class SessionContext:
    def __init__(
        self,
        session: str,
        state: ChannelState,
        settings: ContextSection,
        *,
        window: int,
        output_dir: Path,
        summarize: Summarize | None,
    ) -> None:
        self.session = session
        self._state = state
        self._settings = settings
        self.window = window
        self._output_dir = output_dir
        self._summarize = summarize
        self.tokens = TokenEstimator(session)
        self._view: ContextView | None = None
        self.last_estimate = 0
        self.fixed_tokens = 0  # system prompt, tools and status bar of the last request
        self._last_raw = 0
        self._learned: int | None = None
        self._counts: dict[int, tuple[Message, int]] = {}
        self.last_compaction_ms: float | None = None  # how long the last one took
        self.compactions_done = 0  # by this daemon; the loop composes the system prompt anew
        self.breaker = CompactionBreaker(
            settings.compaction_failures_to_trip, settings.compaction_cooldown_s
        )

    @property
    def reserve(self) -> int:
        """Tokens kept free for the model's reply."""
        return self._settings.reserve(self.window)

    @property
    def budget(self) -> int:
        budget = self.window - self.reserve
        if self._learned is not None:  # the model told us its window is smaller
            budget = min(budget, self._learned)
        return budget

    async def view(self) -> ContextView:
        if self._view is None:
            raw = await self._state.get_state(KEY_PREFIX + self.session)
            self._view = ContextView.from_json(raw) if raw else ContextView()
        return self._view

    async def _save(self, view: ContextView) -> None:
        self._view = view
        await self._state.put_state(KEY_PREFIX + self.session, view.to_json())

    def _measure(self, messages: list[Message], fixed: list[Any]) -> int:
        """Estimated tokens of a request; each message is encoded once, when first seen
        (the history only grows), so a cycle's cost does not grow with it."""
        fixed_raw = sum(raw_estimate(f) for f in fixed)
        raw = sum(self._raw_count(m) for m in messages) + fixed_raw
        self._last_raw = raw
        self.fixed_tokens = int(fixed_raw * self.tokens.scale) + 1
        return int(raw * self.tokens.scale) + 1

    def _raw_count(self, message: Message) -> int:
        cached = self._counts.get(id(message))
        if cached is not None and cached[0] is message:
            return cached[1]
        count = raw_estimate(message)
        if len(self._counts) > 4 * COUNT_CACHE_MIN:  # stubbed copies, old views: start over
            self._counts.clear()
        self._counts[id(message)] = (message, count)  # the reference keeps the id unique
        return count

    def refused(self, message: str) -> None:
        """The provider said the last request was too long. Its message usually names its
        window ("maximum context length is 8192 tokens", "> 200000 maximum"): the budget
        becomes that, less the reply's reserve; else a fifth below what was refused."""
        match = _WINDOW_IN_ERROR.search(message)
        if match is not None:
            named = int(match.group(1) or match.group(2))
            learned = named - self._settings.reserve(named)  # the reply's share of that window
        else:
            learned = int(self.last_estimate * 0.8)
        self._learned = max(1024, min(learned, self._learned or learned))
        log.warning(
            "the model's window is smaller than configured",
            session=self.session,
            budget=self.budget,
            configured=self.window,
        )

    def observe(self, reported_prompt_tokens: int) -> None:
        """The provider's count for the last request built: calibrates the estimate."""
        self.tokens.observe(self._last_raw, reported_prompt_tokens)

    async def fit(self, full: list[Message], fixed: list[Any]) -> list[Message]:
        """The request's messages for ``full`` within the budget. ``fixed``: what else the
        request carries (system prompt, tools, status bar). Raises ContextFull only when
        nothing is left to shrink, naming what does not fit."""
        messages = await self._shown(full, fixed)
        if self.last_estimate <= self.budget:
            return messages
        cannot_compact: str | None = None
        try:
            await self.shrink(full, fixed)
        except ContextFull as exc:  # no compaction possible: pruning may still make it fit
            cannot_compact = str(exc).split(": ", 1)[-1]
        messages = await self._shown(full, fixed)
        if self.last_estimate > self.budget:
            # The newest results kept whole are a preference; fitting is not.
            await self._prune(full, fixed, forced=True, keep=1)
            messages = await self._shown(full, fixed)
        if self.last_estimate > self.budget:
            await self._trim(full, fixed)  # last: even the newest result, to head + tail
            messages = await self._shown(full, fixed)
        if self.last_estimate > self.budget:
            why = self._what_does_not_fit(messages)
            raise await self._full(why + (f"; {cannot_compact}" if cannot_compact else ""))
        return messages

    async def _measured(self, full: list[Message], fixed: list[Any]) -> int:
        """Estimated tokens of the request the view makes of ``full`` now."""
        return self._measure(await self._messages(full), fixed)

    async def _shown(self, full: list[Message], fixed: list[Any]) -> list[Message]:
        """The request's messages as the view makes them, ``last_estimate`` set to their cost."""
        messages = await self._messages(full)
        self.last_estimate = self._measure(messages, fixed)
        return messages

    async def _messages(self, full: list[Message]) -> list[Message]:
        return normalize((await self.view()).apply(full)).messages

    def _what_does_not_fit(self, messages: list[Message]) -> str:
        # Both figures are from the _shown that just measured ``messages``.
        fixed_tokens = self.fixed_tokens
        history = self.last_estimate - fixed_tokens
        largest = max(messages, key=self._raw_count, default=None)
        biggest = (
            f" (the largest, a {largest.get('role')} message, {self.tokens.count(largest)})"
            if largest is not None
            else ""
        )
        return (
            f"the system prompt, tool schemas and status bar take about {fixed_tokens} tokens "
            f"and the {len(messages)} messages left after pruning {history}"
            f"{biggest}: {self.last_estimate} in all, over the budget of {self.budget} (a "
            f"{self.window}-token window less {self.reserve} kept for the reply); raise "
            '[context] max_tokens, or defer tools ([tools] defer = "always")'
        )

    async def _trim(self, full: list[Message], fixed: list[Any]) -> None:
        """Cut tool results still shown whole, largest first, to their head and tail until
        the request fits; each full text is saved in the outputs directory (the spill file
        the note names), so nothing is lost, only moved out of the request."""
        view = await self.view()
        shown = {i: str(full[i].get("content") or "") for i in range(view.start, len(full))}
        whole = [
            i
            for i, text in shown.items()
            if full[i].get("role") == "tool" and i not in view.stubs and len(text) > TRIM_MIN_CHARS
        ]
        stubs = dict(view.stubs)
        excess = self.last_estimate - self.budget
        for index in sorted(whole, key=lambda i: -len(shown[i])):
            if excess <= 0:
                break
            text = shown[index]
            # Characters to drop: the excess at the current calibration, plus the note.
            drop = int((excess + TRIM_NOTE_TOKENS) * CHARS_PER_TOKEN / max(self.tokens.scale, 0.1))
            keep_chars = max(TRIM_MIN_CHARS, len(text) - drop)
            call_id = str(full[index].get("tool_call_id"))
            cut = shape_output(
                text,
                output_dir=self._output_dir,
                name_hint=f"trimmed-{self.session}-{call_id}",
                head_lines=len(text),  # by characters: the line budget would keep it all
                tail_lines=0,
                max_chars=keep_chars,
            )
            stubs[index] = f"[trimmed to fit the context] {cut}"
            excess -= self.tokens.count(text) - self.tokens.count(stubs[index])
        if stubs != view.stubs:
            await self._save(dataclasses.replace(view, stubs=stubs, prunes=view.prunes + 1))
            log.info("context trimmed", session=self.session, results=len(stubs) - len(view.stubs))

    async def shrink(self, full: list[Message], fixed: list[Any], *, forced: bool = False) -> None:
        """Prune old tool results and, if still over (or ``forced``: the provider said too
        long), compact. At most one compaction per call: a compaction that does not help
        is reported, never looped."""
        pruned = await self._prune(full, fixed, forced=forced)
        if not forced and await self._measured(full, fixed) > self.budget:
            # Stubs before a summary: a compaction is dearer (a model call, and more of
            # the history lost), so it comes only when stubs alone cannot make room.
            pruned = await self._prune(full, fixed, forced=False, keep=1) or pruned
        target = self.budget * (LOW_WATER if forced else 1.0)
        if await self._measured(full, fixed) > target or (forced and not pruned):
            await self._compact(full, fixed)

    async def _prune(
        self, full: list[Message], fixed: list[Any], *, forced: bool, keep: int | None = None
    ) -> bool:
        view = await self.view()
        tool_indexes = [i for i in range(view.start, len(full)) if full[i].get("role") == "tool"]
        kept = set(tool_indexes[-(keep or self._settings.keep_tool_results) :])
        candidates = [
            i
            for i in tool_indexes
            if i not in kept
            and i not in view.stubs
            and len(str(full[i].get("content") or "")) >= PRUNE_MIN_CHARS
        ]
        if not candidates:
            return False
        current = self._measure(normalize(view.apply(full)).messages, fixed)
        target = int(self.budget * LOW_WATER)
        reclaimable = sum(self.tokens.count(full[i].get("content")) for i in candidates)
        # Worth one cache miss only when it gets us well below the budget (or the
        # provider already refused the request).
        if not forced and current - reclaimable > self.budget:
            return False
        names = tool_names(full)
        stubs = dict(view.stubs)
        for index in candidates:
            if current <= target and not forced:
                break
            message = full[index]
            content = str(message.get("content") or "")
            call_id = str(message.get("tool_call_id"))
            path = self._save_full_output(call_id, content)
            stubs[index] = (
                f"[pruned to save context] the output of {names.get(call_id, 'a tool')} "
                f"(call {call_id}), {len(content.encode()) // 1024 + 1} KB, is saved at {path}; "
                "read it with read_file if you need it again."
            )
            current -= self.tokens.count(content) - self.tokens.count(stubs[index])
        await self._save(dataclasses.replace(view, stubs=stubs, prunes=view.prunes + 1))
        log.info("context pruned", session=self.session, results=len(stubs) - len(view.stubs))
        return True

    def _save_full_output(self, call_id: str, content: str) -> Path:
        path = self._output_dir / f"pruned-{self.session}-{call_id}.txt".replace(":", "_")
        if not path.exists():
            path.write_text(content, encoding="utf-8")
        return path

    async def _compact(self, full: list[Message], fixed: list[Any]) -> None:
        view = await self.view()
        if self._summarize is None:
            raise await self._full("no model to write a summary with")
        boundaries = safe_boundaries(full, view.start)
        users = [i for i in range(view.start, len(full)) if full[i].get("role") == "user"]
        keep = self._settings.keep_user_messages
        if len(users) <= 1:
            raise await self._full(
                f"no compaction: {_count(len(users), 'user message')} since the last boundary, "
                "and the newest is always kept verbatim"
            )
        # The newest keep_user_messages stay verbatim when they fit; when even they do
        # not (a small window), fewer do, down to the newest one: a session that keeps
        # going beats one refused forever for a preference. Never past what the model
        # has not read: a summary would stand in for events no agent request carried
        # (the summariser's input may be cut too).
        unread = carried_until(full)
        preferred = [
            b for b in boundaries if len(users) > keep and b <= users[-keep] and b <= unread
        ]
        fallback = [b for b in boundaries if b <= users[-1] and b <= unread]
        if not fallback:
            if any(b <= users[-1] for b in boundaries):
                raise await self._full(
                    "what the model has not yet read does not fit beside the rest"
                )
            raise await self._full("no place to compact that keeps tool calls with their results")
        refusal = self.breaker.refusal(view, self.session)
        if refusal is not None:  # no model call: the last ones did not help
            raise await self._full(refusal)
        boundary = self._boundary_keeping_most(full, view, preferred, fixed)
        if boundary is None:
            boundary = self._boundary_keeping_most(full, view, fallback, fixed)
            if boundary is not None:
                log.info("compaction keeps fewer user messages", session=self.session, keep=keep)
        if boundary is None:
            boundary = (preferred or fallback)[-1]
        compacted = view.apply(full[:boundary]) if view.start < boundary else []
        before = self._measure(normalize(view.apply(full)).messages, fixed)
        began = time.monotonic()
        try:
            summary = await write_summary(
                self._summarize, compacted, max_chars=int(self.budget * 2)
            )
        except Exception as exc:  # a failed summary must stop the run, not loop
            raise await self._failed(view, f"the compaction's summary failed ({exc})") from None
        stubs = {i: s for i, s in view.stubs.items() if i >= boundary}
        new = ContextView(
            start=boundary,
            summary=summary,
            summarized_at=datetime.now(UTC).isoformat(timespec="seconds"),
            stubs=stubs,
            compactions=view.compactions + 1,
            prunes=view.prunes,
        )
        after = self._measure(normalize(new.apply(full)).messages, fixed)
        if after >= before:
            raise await self._failed(
                view, f"a compaction did not shrink the request ({before} → {after} tokens)"
            )
        if after > self.budget:
            # Kept (it is progress) but counted: pruning may still make it fit, yet a
            # model whose summaries stay this long must not be asked on every event.
            await self._failed(new, f"a compaction left {after} tokens, over the {self.budget}")
        else:
            await self._save(closed(new))
        self.last_compaction_ms = round((time.monotonic() - began) * 1000, 1)
        self.compactions_done += 1
        log.info(
            "context compacted",
            session=self.session,
            boundary=boundary,
            before=before,
            after=after,
            took_ms=self.last_compaction_ms,
        )

    def _boundary_keeping_most(
        self, full: list[Message], view: ContextView, chosen: list[int], fixed: list[Any]
    ) -> int | None:
        """The earliest of ``chosen`` whose kept part fits under the low-water mark (as
        much verbatim history as room allows; compactions stay rare), else None."""
        if not chosen:
            return None
        room = int(self.budget * LOW_WATER / self.tokens.scale) - sum(
            raw_estimate(f) for f in fixed
        )
        room -= SUMMARY_ALLOWANCE
        shown = view.apply(full)  # index i of full is shown[i - view.start + offset]
        offset = 1 if view.summary else 0
        suffix = 0
        fits: int | None = None
        candidates = set(chosen)
        for index in range(len(full) - 1, chosen[0] - 1, -1):
            suffix += self._raw_count(shown[index - view.start + offset])
            if suffix > room:
                break
            if index in candidates:
                fits = index
        return fits

    async def _failed(self, view: ContextView, why: str) -> ContextFull:
        """Count a failed compaction (``view``: what to keep of it); the ContextFull to
        raise if the caller stops here."""
        view = self.breaker.failed(view)
        await self._save(view)
        log.warning(
            "compaction failed",
            session=self.session,
            error=why,
            failed_in_a_row=view.failed_compactions,
            breaker=self.breaker.state(view),
        )
        if view.breaker_opened_at is not None:
            why += (
                f"; after {view.failed_compactions} in a row the compaction breaker is open for "
                f"{self.breaker.cooldown_s:.0f} s (`wakeful context reset {self.session}`)"
            )
        return await self._full(why)

    async def reset_breaker(self) -> bool:
        """The operator's reset: compactions may be asked for again at once. Whether the
        breaker had counted any failure."""
        view = await self.view()
        await self._save(dataclasses.replace(closed(view), last_problem=None))
        return view.failed_compactions > 0

    async def _full(self, why: str) -> ContextFull:
        view = await self.view()
        message = f"session {self.session}'s context cannot fit the model's window: {why}"
        await self._save(dataclasses.replace(view, last_problem=message))
        return ContextFull(message)

    def status(self) -> dict[str, Any]:
        """For ``/api/status``: how full the last request was, and any problem."""
        info: dict[str, Any] = {
            "tokens": self.last_estimate,
            "budget": self.budget,
            "fixed_tokens": self.fixed_tokens,
        }
        if self.fixed_tokens * 3 > self.window:  # little room left for the conversation
            info["fixed_warning"] = (
                f"the system prompt and tools take {self.fixed_tokens} tokens, more than a "
                f"third of the {self.window}-token window"
            )
        if self.last_compaction_ms is not None:
            info["last_compaction_ms"] = self.last_compaction_ms
        if self._view is not None:
            info.update(self._view.describe())
            info["compaction_breaker"] = self.breaker.state(self._view)
        return info

    async def fitted(self) -> None:
        """A request fit and was accepted: clear a problem reported earlier."""
        view = await self.view()
        if view.last_problem is not None:
            await self._save(dataclasses.replace(view, last_problem=None))


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
