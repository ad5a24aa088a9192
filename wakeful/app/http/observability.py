"""``/metrics`` (Prometheus text format) and ``/readyz``, unauthenticated like /healthz.

Neither exposes event contents. Both are unauthenticated, so by default
they show totals only: no session, mailbox or hook names (a DNS-rebinding
page or a neighbour on the network learns nothing about who talks to the
agent). ``[server] metrics_labels = true`` adds the per-name breakdown.
Gauges describing the present are read from the store and the session loops
at scrape time; counters come from :mod:`wakeful.kernel.metrics`.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import TYPE_CHECKING

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route

from wakeful.kernel import metrics
from wakeful.store.base import QueueDepth

if TYPE_CHECKING:
    from wakeful.app.api_backend import ApiBackend

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STORE_PROBE_S = 2.0
# Test-only: lets a test block the event loop on purpose to prove the watchdog
# ping stops with it. Never set in production.
BLOCK_LOOP_ENV = "WAKEFUL_TEST_BLOCK_LOOP_ROUTE"
# Labels whose values are names people chose (sessions; hooks and mailboxes in keys).
NAME_LABELS = frozenset({"session"})


class Observability:
    def __init__(self, daemon: ApiBackend, *, labels: bool = False) -> None:
        self.daemon = daemon
        self.labels = labels

    async def _queue_depths(self) -> list[QueueDepth] | None:
        """The store's answer within a short bound, or None: it is down or stuck."""
        with anyio.move_on_after(STORE_PROBE_S):
            try:
                return await self.daemon.store.queue_depths()
            except Exception:
                return None
        return None

    async def _store_problem(self) -> str | None:
        """What is wrong with the store now, or None. While it is known not to
        take writes, each readiness check probes it once, so it recovers by itself."""
        store = self.daemon.store
        if not store.health.ok:
            # Success marks the health good again; a failure leaves its reason there.
            with anyio.move_on_after(STORE_PROBE_S), contextlib.suppress(Exception):
                await store.probe_write()
        if not store.health.ok:
            return store.health.describe()
        if await self._queue_depths() is None:
            return f"the event store ({store.health.name}) does not answer"
        return None

    async def readyz(self, request: Request) -> Response:
        problems = []
        if self.daemon.dispatcher.stopping:
            problems.append("the daemon is stopping")
        store_problem = await self._store_problem()
        if store_problem is not None:
            problems.append(store_problem)
        for name, health in self.daemon.registrations.health.items():
            if health.required and not health.ok:
                problems.append(self._problem(name, health.detail))
        if problems:
            return JSONResponse({"status": "unready", "problems": problems}, status_code=503)
        return JSONResponse({"status": "ready"})

    def _problem(self, key: str, detail: str) -> str:
        if self.labels or ":" not in key:
            return f"{key}: {detail}"
        # A key such as "email:<account>:<mailbox>" names things; so may its detail.
        return f"{_kind(key)}: unhealthy ([server] metrics_labels = true shows which)"

    async def scrape(self, request: Request) -> Response:
        gauges = self._present(await self._queue_depths())
        hidden = frozenset() if self.labels else NAME_LABELS
        text = metrics.render([*metrics.COUNTERS, *gauges], hidden_labels=hidden)
        return PlainTextResponse(text, media_type=CONTENT_TYPE)

    def _present(self, depths: list[QueueDepth] | None) -> list[metrics.Gauge]:
        now = time.time()
        depth = metrics.Gauge("wakeful_queue_depth", "Events not yet in a trajectory.")
        age = metrics.Gauge(
            "wakeful_queue_oldest_age_seconds", "Age of the oldest event not yet consumed."
        )
        store_up = metrics.Gauge("wakeful_store_up", "1 when the event store answers and writes.")
        store_up.set(int(depths is not None and self.daemon.store.health.ok))
        for d in depths or []:
            depth.set(d.pending, session=d.session)
            age.set(now - d.oldest_accepted_at if d.oldest_accepted_at else 0, session=d.session)
        if not self.labels:  # the oldest of all, not a sum of ages
            age.values = {(): max(age.values.values(), default=0.0)}
        busy = metrics.Gauge("wakeful_session_busy", "1 while a session's loop is in a run.")
        tasks = metrics.Gauge("wakeful_tasks_running", "Background tasks running, by session.")
        for loop in self.daemon.sessions.all():
            busy.set(int(loop.busy), session=loop.session)
            tasks.set(len(loop.all_tasks.running()), session=loop.session)
        return [store_up, depth, age, busy, tasks, *self._components()]

    def _components(self) -> list[metrics.Gauge]:
        up = metrics.Gauge("wakeful_component_up", "1 when a component reports itself healthy.")
        for name, health in self.daemon.registrations.health.items():
            if self.labels:
                up.set(int(health.ok), component=name, required=str(health.required).lower())
                continue
            # "email:work:INBOX" → "email"; 1 only when every one of its kind is up.
            kind = _labels(component=_kind(name), required=str(health.required).lower())
            up.values[kind] = min(up.values.get(kind, 1.0), float(health.ok))
        figures = metrics.Gauge(
            "wakeful_component_value", "Numeric figures components report (timers, tasks, …)."
        )
        for name, provide in self.daemon.registrations.status_providers.items():
            for key, value in _numbers(provide()):
                if self.labels:
                    figures.set(value, component=name, key=key)
                    continue
                # "<hook>.accepted" → "accepted", summed over the named things.
                total = _labels(component=name, key=key.rsplit(".", 1)[-1])
                figures.values[total] = figures.values.get(total, 0.0) + value
        return [up, figures]

    async def block_loop(self, request: Request) -> Response:
        seconds = float(request.query_params.get("seconds", "5"))
        time.sleep(seconds)  # noqa: ASYNC251 — blocking on purpose: the event loop stalls
        return JSONResponse({"blocked_s": seconds})


def _labels(**labels: str) -> metrics.Labels:
    """A label set as Gauge.values keys it, for values aggregated here."""
    return tuple(sorted(labels.items()))


def _kind(health_key: str) -> str:
    return health_key.split(":", 1)[0]


def _numbers(data: object, prefix: str = "") -> list[tuple[str, float]]:
    """Flatten nested dicts to (dotted key, number) pairs; other values are skipped."""
    if isinstance(data, bool):
        return [(prefix, float(data))]
    if isinstance(data, int | float):
        return [(prefix, float(data))]
    if isinstance(data, dict):
        found: list[tuple[str, float]] = []
        for key, value in data.items():
            found += _numbers(value, f"{prefix}.{key}" if prefix else str(key))
        return found
    return []


def observability_routes(daemon: ApiBackend, *, labels: bool = False) -> list[BaseRoute]:
    """``labels``: ``[server] metrics_labels``."""
    views = Observability(daemon, labels=labels)
    routes: list[BaseRoute] = [
        Route("/readyz", views.readyz, methods=["GET"]),
        Route("/metrics", views.scrape, methods=["GET"]),
    ]
    if os.environ.get(BLOCK_LOOP_ENV) == "1":
        routes.append(Route("/debug/block-loop", views.block_loop, methods=["POST"]))
    return routes
