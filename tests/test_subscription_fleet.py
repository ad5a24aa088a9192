"""Mailbox and http_check subscriptions in a fleet: one daemon watches each, the others
stand by.

Two daemons' lease holders on one Redis prefix (the real Redis), each asked to
watch the same subscription: only one runs the watch; when it stops, the other
takes over within the lease's TTL; another subscription is leased on its own.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus
from redis.asyncio import Redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from tests.fakes.loopback_http import LoopbackHttpServer
from tests.redis_server import REDIS_URL
from wakeful.core.front_door import SubmitResult
from wakeful.kernel.events import Event
from wakeful.sources.subscriptions.arming import Subscriptions
from wakeful.sources.subscriptions.config import SubscriptionsSection
from wakeful.sources.subscriptions.fleet import WatchLeases, change_notices
from wakeful.sources.subscriptions.kinds.http_check import HttpCheckKind
from wakeful.sources.subscriptions.records import Subscription, SubscriptionBook
from wakeful.sources.subscriptions.request import ConnectRequest
from wakeful.store.base import Cursor
from wakeful.store.fleet.coordination import RedisCoordination
from wakeful.store.fleet.named_lease import lease_holder
from wakeful.store.fleet.port import ChangeNotices
from wakeful.store.fleet.sessions import FleetOptions
from wakeful.store.redis_store import RedisStore

pytestmark = pytest.mark.anyio

TTL_S = 0.6  # short, so a takeover happens within a second


def watch_recorder(running: set[str], name: str) -> Callable[[], Awaitable[None]]:
    async def work() -> None:
        running.add(name)
        try:
            await anyio.sleep_forever()
        finally:
            running.discard(name)

    return work


async def wait_until(check: Callable[[], bool], timeout_s: float = 5.0) -> None:
    with anyio.fail_after(timeout_s):
        while not check():  # noqa: ASYNC110 - a lease changing hands has no event to await
            await anyio.sleep(0.02)


async def test_one_daemon_watches_a_subscription_and_another_takes_over(
    redis_prefix: str,
) -> None:
    client = Redis.from_url(REDIS_URL, decode_responses=True)
    try:
        coordination = RedisCoordination(client, redis_prefix)
        first = WatchLeases(coordination, "host:1:a", TTL_S)
        second = WatchLeases(coordination, "host:2:b", TTL_S)
        running: set[str] = set()
        async with anyio.create_task_group() as group:
            first_scope = anyio.CancelScope()

            async def first_daemon() -> None:
                with first_scope:
                    await first.hold("sub-1", watch_recorder(running, "first"))

            group.start_soon(first_daemon)
            await wait_until(lambda: running == {"first"})
            group.start_soon(second.hold, "sub-1", watch_recorder(running, "second"))
            group.start_soon(second.hold, "sub-2", watch_recorder(running, "second's sub-2"))
            await wait_until(lambda: "second's sub-2" in running)  # its own lease, at once
            await anyio.sleep(TTL_S * 2)  # renewals happened meanwhile: still one watcher
            assert running == {"first", "second's sub-2"}
            assert await lease_holder(client, first.key("sub-1")) == "host:1:a"
            first_scope.cancel()  # the first daemon stops: its lease is released
            await wait_until(lambda: running == {"second", "second's sub-2"})
            assert await lease_holder(client, first.key("sub-1")) == "host:2:b"
            group.cancel_scope.cancel()
        assert await lease_holder(client, first.key("sub-1")) is None  # released on stop
    finally:
        await client.aclose()


class Site:
    """One page whose status the test sets."""

    def __init__(self) -> None:
        self.status = 200
        app = Starlette(routes=[Route("/health", self._health)])
        self.http = LoopbackHttpServer(app, "site")
        self.url = f"http://127.0.0.1:{self.http.port}/health"
        self.allow = f"127.0.0.1:{self.http.port}"

    async def _health(self, request: Request) -> Response:
        return PlainTextResponse(f"status {self.status}", status_code=self.status)


class CheckingKind(HttpCheckKind):
    """The real http_check, noting which daemon made each check."""

    def __init__(self, name: str, checks: list[str], **options: Any) -> None:
        super().__init__(**options)
        self._name, self._checks = name, checks

    async def _check(self, url: str) -> tuple[str, str | None, str]:
        self._checks.append(self._name)
        return await super()._check(url)


class Daemon:
    """What a fleet's daemon has of subscriptions: its store, its book, its arming."""

    def __init__(
        self,
        name: str,
        store: RedisStore,
        leases: WatchLeases,
        site: Site,
        notices: ChangeNotices | None = None,
    ) -> None:
        self.name, self.store, self.leases = name, store, leases
        self.book = SubscriptionBook(store)
        self.fired: list[Event] = []
        self.checks: list[str] = []
        kind = CheckingKind(
            name,
            self.checks,
            http_allow=(site.allow,),
            min_interval_s=1.0,
            leases=leases,
            latest=self.book.reread,
        )
        self.subs = Subscriptions(
            self.book, {"http_check": kind}, self.submit, store, SubscriptionsSection(), notices
        )

    async def run(self, *, task_status: TaskStatus[anyio.CancelScope]) -> None:
        """As the component's run: every watch, and the other daemons' notices."""
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                self.subs.start(group)
                if self.subs.notices is not None:
                    notices = self.subs.notices
                    await group.start(notices.follow, self.subs.apply_change, self.subs.resync)
                task_status.started(scope)
                await anyio.sleep_forever()

    async def submit(self, event: Event, *, cursor: Cursor | None = None) -> SubmitResult:
        self.fired.append(event)
        return SubmitResult(event.id, False)


@asynccontextmanager
async def two_daemons(
    redis_prefix: str, *, notices: bool
) -> AsyncIterator[tuple[Daemon, Daemon, Redis, Site]]:
    """Two daemons' subscriptions on one Redis prefix, and the site they check."""
    site = Site()
    site.http.start()
    client = Redis.from_url(REDIS_URL, decode_responses=True)
    stores = [
        await RedisStore(REDIS_URL, prefix=redis_prefix, fleet=FleetOptions()).open()
        for _ in range(2)
    ]
    try:
        first, second = (
            Daemon(
                name,
                store,
                WatchLeases(RedisCoordination(client, redis_prefix), f"host:{n}:{name}", TTL_S),
                site,
                change_notices(RedisCoordination(client, redis_prefix)) if notices else None,
            )
            for n, (name, store) in enumerate(zip(("first", "second"), stores, strict=True))
        )
        yield first, second, client, site
    finally:
        for store in stores:
            await store.aclose()
        await client.aclose()
        site.http.close()


async def test_one_daemon_checks_an_http_subscription_and_another_resumes_it(
    redis_prefix: str,
) -> None:
    """Two daemons arm the same http_check: only the lease holder GETs the URL and
    fires; when it stops, the other takes over from the record's last status (no
    spurious change at takeover) and fires the next real change, once."""
    async with two_daemons(redis_prefix, notices=False) as (first, second, client, site):
        spec = {"url": site.url, "interval_s": 0.2, "on": "status"}
        sub = Subscription(id="sub-http1", kind="http_check", session="main", spec=spec)
        await first.book.put(sub)
        await second.book.load()  # as at its start: the record is in the shared store
        async with anyio.create_task_group() as group:
            first_scope = await group.start(first.run)
            await wait_until(lambda: len(first.checks) >= 2)  # the baseline, and one more
            await group.start(second.run)
            site.status = 503
            await wait_until(lambda: len(first.fired) == 1)
            await wait_until(lambda: len(first.checks) >= 6)  # renewals meanwhile
            assert second.checks == [] and second.fired == []  # it stood by
            assert await lease_holder(client, first.leases.key(sub.id)) == "host:0:first"

            first_scope.cancel()  # the first daemon stops: the second takes over
            await wait_until(lambda: len(second.checks) >= 2)
            assert second.fired == []  # it resumed from 503: no change seen at takeover
            site.status = 200
            await wait_until(lambda: len(second.fired) == 1)
            assert "from 503 to 200" in second.fired[0].content.data["change"]
            assert len(first.fired) == 1
            stored = await second.book.reread(sub.id)
            assert stored is not None and stored.spec["_status"] == "200"
            group.cancel_scope.cancel()


async def test_a_subscription_made_or_removed_on_one_daemon_reaches_the_other(
    redis_prefix: str, tmp_path: Path
) -> None:
    """No restart: connect_channel through one daemon arms the subscription on the
    other (it takes over the check when the first stops), and disconnect_channel
    through the other disarms it on the first (its watch ends, its lease is let go)."""
    async with two_daemons(redis_prefix, notices=True) as (first, second, client, site):
        request = ConnectRequest(kind="http_check", url=site.url, interval_s=1)
        async with anyio.create_task_group() as group:
            first_scope = await group.start(first.run)
            await group.start(second.run)

            made, _ = await first.subs.connect(
                request, session="main", workspace=tmp_path, tainted_by=None
            )
            await wait_until(lambda: second.book.get(made.id) is not None)
            # Both armed it: whichever took the lease checks, the other stands by.
            await wait_until(lambda: len(first.checks) + len(second.checks) >= 1)
            holder = await lease_holder(client, first.leases.key(made.id))
            checking, idle = (first, second) if holder == "host:0:first" else (second, first)
            assert idle.checks == []
            await idle.subs.disconnect(made.id)  # through the daemon not checking it
            await wait_until(lambda: checking.book.get(made.id) is None)
            await wait_until(lambda: made.id not in checking.subs._armed)  # its watch ended
            assert await lease_holder(client, first.leases.key(made.id)) is None

            checked = len(first.checks) + len(second.checks)
            again, _ = await first.subs.connect(
                request, session="main", workspace=tmp_path, tainted_by=None
            )
            await wait_until(lambda: second.book.get(again.id) is not None)
            await wait_until(lambda: len(first.checks) + len(second.checks) > checked)
            by_second = len(second.checks)
            if await lease_holder(client, first.leases.key(again.id)) == "host:0:first":
                first_scope.cancel()  # the first daemon stops: the second takes over
            # Made through the first daemon, checked by the second, never restarted.
            await wait_until(lambda: len(second.checks) > by_second)
            assert await lease_holder(client, first.leases.key(again.id)) == "host:1:second"
            group.cancel_scope.cancel()
