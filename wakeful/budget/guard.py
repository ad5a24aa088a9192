"""The budget as the session loop's SpendGuard: reserve, refuse, settle, and say when
a cap is reached (once per cap and window) and when it reopens."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import structlog

from wakeful.budget.caps import (
    MICRO,
    Account,
    Cap,
    accounts,
    actual,
    all_caps,
    configured_limit,
    worst_case,
)
from wakeful.budget.caps import window as window_of
from wakeful.budget.config import BudgetSection, ModelPrice
from wakeful.budget.ledger import Balance, Ledger
from wakeful.core.provider import Usage
from wakeful.core.spend import SpendRefused, SpendRequest
from wakeful.store.base import ChannelState

log = structlog.get_logger(__name__)
OVERRIDE_PREFIX = "budget:override:"


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass
class Ticket:
    id: str
    request: SpendRequest
    held: list[Account] = field(default_factory=list)


class Budget:
    def __init__(
        self,
        section: BudgetSection,
        state: ChannelState,
        *,
        model: str,
        reply_limit: int,
        now: Callable[[], datetime] = _now,
        on_change: Callable[[], None] = lambda: None,
    ) -> None:
        self.reply_limit = reply_limit
        self._on_change = on_change  # a cap was reached: the component alerts
        self._state = state
        self._ledger = Ledger(state)
        self._model = model
        self._now = now
        self._overrides: dict[str, float] = {}
        self.exhausted: dict[str, Account] = {}  # account key → the account, this window
        self.crossings: list[Account] = []  # reached since the component last looked
        # This daemon's own counts since start (Prometheus counters; the ledger is shared).
        self.calls_reserved = 0
        self.calls_refused = 0
        self.tokens_settled = 0
        self.configure(section)

    def configure(self, section: BudgetSection) -> None:
        """A new [budget] (start-up, SIGHUP): caps and prices; what is used stays."""
        self.section = section
        self.zone = ZoneInfo(section.timezone)
        self.caps = all_caps(section)
        self.exhausted.clear()  # judged again against the new caps at the next call

    async def load_overrides(self) -> None:
        stored = await self._state.states_under(OVERRIDE_PREFIX)
        self._overrides = {k.removeprefix(OVERRIDE_PREFIX): float(v) for k, v in stored.items()}

    def cap_named(self, name: str) -> Cap | None:
        known = {cap.name: cap for cap in self.caps}
        if name.startswith("source_daily_tokens.") and name not in known:
            return Cap(name, "tokens", "day", "source", name.split(".", 1)[1])
        return known.get(name)

    async def set_limit(self, name: str, amount: float) -> None:
        """``wakeful budget set``: kept in the store, so it outlives a restart."""
        cap = self.cap_named(name)
        if cap is None:
            raise ValueError(f"no cap named {name!r}; caps: {', '.join(self.cap_names())}")
        if cap not in self.caps:
            self.caps.append(cap)
        await self._state.put_state(OVERRIDE_PREFIX + name, json.dumps(amount))
        self._overrides[name] = amount
        for key in [k for k, a in self.exhausted.items() if a.cap.name == name]:
            del self.exhausted[key]  # judged again at the next call

    def cap_names(self) -> list[str]:
        return [cap.name for cap in self.caps] + ["source_daily_tokens.<source>"]

    def limit(self, cap: Cap) -> int:
        """In the cap's own unit (tokens, micro-dollars); 0: no cap."""
        value = self._overrides.get(cap.name, configured_limit(self.section, cap))
        return round(value * MICRO) if cap.metric == "usd" else round(value)

    def _price(self, model: str) -> ModelPrice | None:
        return self.section.prices.get(model or self._model)

    # -- SpendGuard ---------------------------------------------------------------

    def closed(self, session: str, origin: str) -> str | None:
        self.forget_old_windows()
        probe = SpendRequest(session, origin, "", 0, 0)
        for account in accounts(self.caps, probe, self._now(), self.zone):
            if account.key in self.exhausted:
                return f"{account.describe()} is reached"
        return None

    async def reserve(self, request: SpendRequest) -> Ticket:
        ticket = Ticket(uuid.uuid4().hex[:12], request)
        price = self._price(request.model)
        for account in accounts(self.caps, request, self._now(), self.zone):
            limit = self.limit(account.cap)
            if not limit:
                continue
            amount = worst_case(account.cap, request, price)
            if not await self._ledger.hold(account.key, ticket.id, amount, limit):
                await self.settle(ticket, Usage(), count=False)  # give back what was held
                self.calls_refused += 1
                self._reached(account)
                raise SpendRefused(
                    f"{account.describe()} would be crossed by this call (worst case "
                    f"{_shown(account.cap, amount)}, cap {_shown(account.cap, limit)}); it was "
                    f"not made. The events are kept: they run when the window resets or "
                    f"the cap is raised (`wakeful budget set {account.cap.name} AMOUNT`)"
                )
            ticket.held.append(account)
        self.calls_reserved += 1
        return ticket

    async def settle(self, ticket: Any, usage: Usage | None, *, count: bool = True) -> None:
        assert isinstance(ticket, Ticket)
        price = self._price(ticket.request.model)
        if count:
            self.tokens_settled += _tokens(ticket.request, usage)
        for account in ticket.held:
            used = actual(account.cap, ticket.request, usage, price) if count else 0
            await self._ledger.settle(account.key, ticket.id, used)
        ticket.held = []

    # -- reporting ----------------------------------------------------------------

    def figures(self) -> dict[str, Any]:
        """Counts since start, for /api/status and /metrics (wakeful_component_value)."""
        return {
            "calls_reserved": self.calls_reserved,
            "calls_refused": self.calls_refused,
            "tokens_settled": self.tokens_settled,
            "caps_reached": len(self.exhausted),
        }

    def _reached(self, account: Account) -> None:
        if account.key not in self.exhausted:
            self.exhausted[account.key] = account
            self.crossings.append(account)
            self._on_change()
            log.warning("spending cap reached", cap=account.cap.name, window=account.window)

    def forget_old_windows(self) -> list[Account]:
        """Accounts of a window that has ended are open again; returns them."""
        now = self._now()
        ended = [
            a
            for a in self.exhausted.values()
            if a.window != window_of(a.cap.period, now, self.zone)
        ]
        for account in ended:
            del self.exhausted[account.key]
        return ended

    async def report(self) -> list[dict[str, Any]]:
        """Spend against every cap in its current window (``wakeful budget``)."""
        now, rows = self._now(), []
        records = await self._state.states_under("budget:")
        for cap in self.caps:
            current = window_of(cap.period, now, self.zone)
            prefix = f"budget:{cap.name}:"
            for key, raw in sorted(records.items()):
                if not key.startswith(prefix) or not key.endswith(current):
                    continue
                instance = key[len(prefix) : -len(current) - 1]
                rows.append(self._row(cap, instance, current, raw))
            if not any(r["cap"] == cap.name for r in rows):
                rows.append(self._row(cap, "", current, None))
        return rows

    def _row(self, cap: Cap, instance: str, current: str, raw: str | None) -> dict[str, Any]:
        balance = Balance.parse(raw, now=self._now().timestamp())
        scale = MICRO if cap.metric == "usd" else 1
        return {
            "cap": cap.name,
            "for": instance or ("all sessions" if cap.applies_to != "source" else cap.source),
            "window": current,
            "unit": "USD" if cap.metric == "usd" else "tokens",
            "used": balance.used / scale,
            "held": balance.held / scale,
            "limit": self.limit(cap) / scale,
            "reached": Account(cap, instance, current).key in self.exhausted,
        }


def _tokens(request: SpendRequest, usage: Usage | None) -> int:
    if usage is None:
        return request.input_tokens
    return usage.prompt_tokens + usage.completion_tokens


def _shown(cap: Cap, amount: int) -> str:
    return f"${amount / MICRO:.4f}" if cap.metric == "usd" else f"{amount} tokens"
