"""The budget component: sets the spend guard, says once when a cap is reached, wakes
the sessions when one reopens (a new day or month, a raised cap), and answers
``wakeful budget`` (GET /api/budget, POST /api/budget/caps)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import anyio
import structlog
from anyio.abc import TaskStatus
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from wakeful.budget.caps import Account, next_window_start
from wakeful.budget.guard import Budget
from wakeful.core.components.context import ComponentSetup, NotifyOwner, SessionControl
from wakeful.kernel.http.body import read_json_object
from wakeful.kernel.http.errors import ApiError

if TYPE_CHECKING:  # the composed config lives in the app; its type only
    from wakeful.app.config import Settings

log = structlog.get_logger(__name__)
MAX_BODY_BYTES = 4096


class BudgetComponent:
    name = "budget"

    def __init__(self) -> None:
        self.budget: Budget | None = None
        self._changed = anyio.Event()

    async def configure(self, setup: ComponentSetup) -> None:
        settings = setup.settings
        section = settings.budget
        if (section.daily_usd or section.monthly_usd) and settings.llm.model not in section.prices:
            raise ValueError(
                f"[budget] daily_usd/monthly_usd need the price of the model: add "
                f'[budget.prices."{settings.llm.model}"] input = …, output = … (US dollars '
                "per million tokens)"
            )
        self.budget = Budget(
            section,
            setup.state,
            model=settings.llm.model,
            reply_limit=settings.llm.max_output_tokens,
            on_change=self.notice,
        )
        await self.budget.load_overrides()
        setup.set_spend_guard(self.budget)
        setup.add_status("budget", self.budget.figures)  # /api/status and /metrics
        setup.add_admin_route(Route("/api/budget", self._show, methods=["GET"]))
        setup.add_admin_route(Route("/api/budget/caps", self._set, methods=["POST"]))
        self._notify: NotifyOwner = setup.notify_owner
        self._sessions: SessionControl = setup.sessions
        self._alert_session = settings.system.session

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        budget = self._budget()
        task_status.started()
        while True:
            now = datetime.now(UTC)
            until_reset = (next_window_start(now, budget.zone) - now).total_seconds()
            with anyio.move_on_after(max(until_reset, 1.0)):
                await self._changed.wait()
            self._changed = anyio.Event()
            budget.forget_old_windows()
            crossings, budget.crossings = budget.crossings, []
            for account in crossings:
                await self._alert(account)
            # A window ended or a cap changed: what waited runs (or, still closed, waits).
            self._sessions.wake_all()

    def notice(self) -> None:
        """A cap was reached or raised: look again now."""
        self._changed.set()

    async def reload(self, settings: Settings) -> list[str]:
        self._budget().configure(settings.budget)
        self.notice()
        return ["budget"]

    def _budget(self) -> Budget:
        if self.budget is None:
            raise RuntimeError("the budget component was not configured")
        return self.budget

    async def _alert(self, account: Account) -> None:
        """Told to the owner directly, never through the model: no call may be spent on
        saying that no call may be spent. Once per cap and window (the outbox's key)."""
        text = (
            f"Spending cap reached: {account.describe()}. The model calls it covers are "
            "not made until the window resets or you raise it; the events wait, nothing "
            f"is lost. See `wakeful budget`; raise it with `wakeful budget set "
            f"{account.cap.name} AMOUNT`."
        )
        report = await self._notify(self._alert_session, text, f"alert:{account.key}")
        log.warning("owner told of a spending cap", cap=account.cap.name, delivery=report)

    async def _show(self, request: Request) -> JSONResponse:
        return JSONResponse({"caps": await self._budget().report()})

    async def _set(self, request: Request) -> JSONResponse:
        body = await read_json_object(request, MAX_BODY_BYTES)
        name, amount = body.get("cap"), body.get("amount")
        if not isinstance(name, str) or not isinstance(amount, int | float) or amount < 0:
            raise ApiError(400, 'send {"cap": NAME, "amount": NUMBER >= 0}; 0 is no cap')
        try:
            await self._budget().set_limit(name, float(amount))
        except ValueError as exc:
            raise ApiError(400, str(exc)) from None
        log.info("spending cap changed", cap=name, amount=amount)
        self.notice()
        return JSONResponse({"caps": await self._budget().report()})
