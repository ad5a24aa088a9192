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

from wakeful.daemon.context.breaker import CompactionBreaker, closed
from wakeful.daemon.context.compaction import Summarize, write_summary
from wakeful.daemon.context.config import ContextSection
from wakeful.daemon.context.tokens import TokenEstimator, raw_estimate
from wakeful.daemon.context.view import ContextView, carried_until, safe_boundaries, tool_names
from wakeful.daemon.store.base import ChannelState
from wakeful.daemon.trajectory.normalizer import normalize

log = structlog.get_logger(__name__)

Message = dict[str, Any]
KEY_PREFIX = "context:"
COUNT_CACHE_MIN = 50_000  # messages whose token counts are remembered
PRUNE_MIN_CHARS = 2000  # a tool result smaller than this is not worth a stub
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
        self.tokens = TokenEstimator()
        self._view: ContextView | None = None
        self.last_estimate = 0
        self._last_raw = 0
        self._learned: int | None = None
        self._counts: dict[int, tuple[Message, int]] = {}
        self.last_compaction_ms: float | None = None  # how long the last one took
        self.breaker = CompactionBreaker(
            settings.compaction_failures_to_trip, settings.compaction_cooldown_s
        )

    @property
    def budget(self) -> int:
        budget = self.window - self._settings.reserve_tokens
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
        raw = sum(self._raw_count(m) for m in messages) + sum(raw_estimate(f) for f in fixed)
        self._last_raw = raw
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
            learned = int(match.group(1) or match.group(2)) - self._settings.reserve_tokens
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
        request carries (system prompt, tools, status bar). Raises ContextFull."""
        view = await self.view()
        messages = normalize(view.apply(full)).messages
        self.last_estimate = self._measure(messages, fixed)
        if self.last_estimate <= self.budget:
            return messages
        await self.shrink(full, fixed)
        messages = normalize((await self.view()).apply(full)).messages
        self.last_estimate = self._measure(messages, fixed)
        if self.last_estimate > self.budget:
            # The newest results kept whole are a preference; fitting is not.
            await self._prune(full, fixed, forced=True, keep=1)
            messages = normalize((await self.view()).apply(full)).messages
            self.last_estimate = self._measure(messages, fixed)
        if self.last_estimate > self.budget:
            raise await self._full(
                f"about {self.last_estimate} tokens after pruning and compaction, over the budget "
                f"of {self.budget}"
            )
        return messages

    async def shrink(self, full: list[Message], fixed: list[Any], *, forced: bool = False) -> None:
        """Prune old tool results and, if still over (or ``forced``: the provider said too
        long), compact. At most one compaction per call: a compaction that does not help
        is reported, never looped."""
        pruned = await self._prune(full, fixed, forced=forced)
        messages = normalize((await self.view()).apply(full)).messages
        target = self.budget * (LOW_WATER if forced else 1.0)
        if self._measure(messages, fixed) > target or (forced and not pruned):
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
        if len(users) <= keep:
            raise await self._full(
                f"the newest {keep} user messages alone do not fit; raise [context] max_tokens "
                "or lower [context] keep_user_messages"
            )
        newest_kept = users[-keep]
        # Never past what the model has not read: a summary would stand in for
        # events no agent request carried (the summariser's input may be cut too).
        unread = carried_until(full)
        chosen = [b for b in boundaries if b <= newest_kept and b < unread]
        if not chosen:
            if any(b <= newest_kept for b in boundaries):
                raise await self._full(
                    "what the model has not yet read does not fit beside the rest"
                )
            raise await self._full("no place to compact that keeps tool calls with their results")
        refusal = self.breaker.refusal(view, self.session)
        if refusal is not None:  # no model call: the last ones did not help
            raise await self._full(refusal)
        boundary = self._boundary_keeping_most(full, view, chosen, fixed)
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
    ) -> int:
        """The earliest boundary whose kept part fits under the low-water mark (as much
        verbatim history as room allows; compactions stay rare), else the latest."""
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
        return fits if fits is not None else chosen[-1]

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
        info: dict[str, Any] = {"tokens": self.last_estimate, "budget": self.budget}
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
