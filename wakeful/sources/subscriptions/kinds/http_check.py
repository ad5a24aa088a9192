"""``http_check``: a recurring GET, firing when the status or the content changes.

Every check goes through the SSRF guard (:mod:`wakeful.safety.outbound`,
``[safety] http_allow``) and connects to the checked address only, as
fetch_url does; redirects are not followed (a redirect is a status). The
last status, content hash and check time are kept in the record, so a
restart neither fires for what it already saw nor checks early. A check that
cannot connect has the status ``unreachable``. The first check sets the
baseline and raises nothing.

In a fleet on Redis every daemon arms the same subscription, but only the holder
of its named lease checks (subscriptions/fleet.py): one GET per interval, not one
per daemon. A daemon taking the lease over reads the record first, so it resumes
from the last holder's status, hash and check time.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio

from wakeful.core.effects import Effect, Reach
from wakeful.kernel.event_kinds import EventKind
from wakeful.safety.outbound import Refused, check_destination
from wakeful.sources.subscriptions.events import subscription_event
from wakeful.sources.subscriptions.kinds.base import Asking, Fire, Planned, Refusal, Report
from wakeful.sources.subscriptions.records import Kind, Subscription
from wakeful.sources.subscriptions.request import ConnectRequest
from wakeful.tools.fetch import parse_target, readable_body
from wakeful.tools.pinned_http import ContentEncodingError, get_pinned

if TYPE_CHECKING:  # its type only
    from wakeful.sources.subscriptions.fleet import WatchLeases

MAX_BODY_BYTES = 1024 * 1024
CHECK_TIMEOUT_S = 30.0
EXCERPT_CHARS = 500
UNREACHABLE = "unreachable"


class HttpCheckKind:
    kind: Kind = "http_check"
    effect = Effect.NETWORK  # it talks to a host on the internet, again and again

    def __init__(
        self,
        http_allow: tuple[str, ...],
        min_interval_s: float,
        leases: WatchLeases | None = None,
        latest: Callable[[str], Awaitable[Subscription | None]] | None = None,
    ) -> None:
        self._http_allow = http_allow
        self._min_interval_s = min_interval_s
        self._leases = leases  # on Redis: one daemon of the fleet checks each subscription
        self._latest = latest  # the record as stored now (another holder's last check)

    def reach(self, request: ConnectRequest) -> Reach:
        return Reach(hosts=(request.url,)) if request.url else Reach()

    async def plan(self, request: ConnectRequest, asking: Asking) -> Planned:
        if not request.url:
            raise Refusal('url: an http_check needs url, e.g. "https://example.com/health"')
        try:
            target = parse_target(request.url)
        except ValueError as exc:
            raise Refusal(f"url: {str(exc).replace('fetch_url', 'http_check')}") from None
        if request.interval_s is None or request.interval_s < self._min_interval_s:
            raise Refusal(
                f"interval_s: an http_check needs interval_s of at least "
                f"{self._min_interval_s:g} seconds ([subscriptions] min_http_interval_s), "
                f"got {request.interval_s}"
            )
        checked = await check_destination(target.host, target.port, http_allow=self._http_allow)
        if isinstance(checked, Refused):
            raise Refusal(f"url: {checked.reason}")
        return Planned({"url": request.url, "interval_s": request.interval_s, "on": request.on})

    async def watch(self, sub: Subscription, fire: Fire, report: Report) -> None:
        if self._leases is None:
            await self._check_forever(sub, dict(sub.spec), fire, report)
            return

        async def run_holding() -> None:
            current = await self._latest(sub.id) if self._latest is not None else sub
            if current is None:
                return  # disconnected meanwhile through another daemon
            await self._check_forever(current, dict(current.spec), fire, report)

        await report("standby: another daemon of the fleet checks it, or will")
        await self._leases.hold(sub.id, run_holding)

    async def _check_forever(
        self, sub: Subscription, spec: dict[str, Any], fire: Fire, report: Report
    ) -> None:
        while True:
            checked_at = spec.get("_checked_at")
            if checked_at is not None:
                wait = float(checked_at) + float(spec["interval_s"]) - time.time()
                if wait > 0:
                    await anyio.sleep(wait)
            status, digest, excerpt = await self._check(spec["url"])
            now = time.time()
            change = _change(spec, status, digest)
            keep = {"_status": status, "_hash": digest, "_checked_at": now}
            spec.update(keep)
            await report(f"last check: {status}", keep=keep)
            if change is not None:
                await fire(_event(sub, change, status, digest, excerpt))

    async def _check(self, url: str) -> tuple[str, str | None, str]:
        """(status, hash of the body, an excerpt); status ``unreachable`` when refused or down."""
        import httpcore  # ~0.15 s: at the first check, not at every daemon's start-up

        target = parse_target(url)
        checked = await check_destination(target.host, target.port, http_allow=self._http_allow)
        if isinstance(checked, Refused):
            return UNREACHABLE, None, checked.reason
        try:
            with anyio.fail_after(CHECK_TIMEOUT_S):
                fetched = await get_pinned(target, checked, max_bytes=MAX_BODY_BYTES)
        except (TimeoutError, httpcore.NetworkError, httpcore.ProtocolError) as exc:
            return UNREACHABLE, None, f"{type(exc).__name__}: {exc}"
        except ContentEncodingError as exc:
            return UNREACHABLE, None, str(exc)
        digest = hashlib.sha256(fetched.body).hexdigest()
        body = readable_body(fetched, fetched.headers.get("content-type", ""), url)
        return str(fetched.status), digest, body[:EXCERPT_CHARS]

    def disarmed(self, sub: Subscription) -> None:
        pass


def _change(spec: dict[str, Any], status: str, digest: str | None) -> str | None:
    """What changed since the last check that the subscription asked about, or None."""
    if "_status" not in spec:
        return None  # the first check is the baseline
    on = spec["on"]
    if status != spec["_status"] and on in ("status", "any"):
        return f"status changed from {spec['_status']} to {status}"
    if digest != spec.get("_hash") and status == spec["_status"] and on in ("content", "any"):
        return "content changed"
    return None


def _event(sub: Subscription, change: str, status: str, digest: str | None, excerpt: str) -> Any:
    return subscription_event(
        sub,
        event_id=f"sub:{sub.id}:http:{uuid.uuid4().hex}",
        kind=EventKind.HTTP_CHANGED,
        text=f"GET {sub.spec['url']}: {change} (status {status}). It begins:\n{excerpt}",
        data={"url": sub.spec["url"], "status": status, "content_hash": digest, "change": change},
        source_type="http",
        principal=sub.spec["url"],
    )
