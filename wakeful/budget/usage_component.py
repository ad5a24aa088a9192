"""The usage report, with or without caps: ``GET /api/usage?by=day|session|source|model
&days=N`` (``wakeful usage``), from the store's record of every model call."""

from __future__ import annotations

import time
from zoneinfo import ZoneInfo

import anyio
from anyio.abc import TaskStatus
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from wakeful.budget.usage import GROUPINGS, usage
from wakeful.core.components.context import ComponentSetup
from wakeful.kernel.http.errors import ApiError
from wakeful.store.base import ModelCallRecord

DEFAULT_DAYS = 30
MAX_DAYS = 3660


class UsageComponent:
    name = "usage"

    async def configure(self, setup: ComponentSetup) -> None:
        budget = setup.settings.budget
        self._store = setup.store
        self._zone = ZoneInfo(budget.timezone)
        self._prices = budget.prices
        setup.add_admin_route(Route("/api/usage", self._report, methods=["GET"]))

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()  # answered per request: nothing runs in the background

    async def _report(self, request: Request) -> JSONResponse:
        by = request.query_params.get("by", "day")
        if by not in GROUPINGS:
            raise ApiError(400, f"by must be one of {', '.join(GROUPINGS)}")
        try:
            days = int(request.query_params.get("days", DEFAULT_DAYS))
        except ValueError:
            raise ApiError(400, "days must be a whole number of days") from None
        if not 1 <= days <= MAX_DAYS:
            raise ApiError(400, f"days must be from 1 to {MAX_DAYS}")
        records: list[ModelCallRecord] = []
        for session in await self._store.sessions():
            records += await self._store.model_calls(session, limit=-1)
        since = time.time() - days * 86400
        report = usage(records, by=by, zone=self._zone, prices=self._prices, since=since)
        # The zone the days are counted in: the web page's chart lays out the same days.
        return JSONResponse({**report, "days": days, "timezone": self._zone.key})
