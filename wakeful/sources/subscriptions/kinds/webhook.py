"""``webhook``: ``POST /hooks/subscriptions/<id>`` with a token of its own and payload conditions.

The token is made when the agent subscribes, told to it once, and stored as
its SHA-256 only; a delivery's token is hashed and compared in constant
time. The body is read with the webhook channel's cap and parsed as its
bearer hooks are (JSON, a ``curl -d`` form, plain text); conditions use its
dotted paths. A delivery that fails a condition is answered 202
``{"filtered": true}`` and wakes no one. A sender's ``webhook-id`` or
``idempotency-key`` header makes a retry one event.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from collections.abc import Callable
from typing import Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from wakeful.core.effects import Effect, Reach
from wakeful.core.front_door import DaemonUnavailable
from wakeful.kernel.event_kinds import EventKind
from wakeful.kernel.http.body import read_capped
from wakeful.kernel.http.errors import ApiError
from wakeful.sources.subscriptions.events import subscription_event
from wakeful.sources.subscriptions.kinds.base import Asking, Fire, Planned, Refusal, Report
from wakeful.sources.subscriptions.kinds.hook_filter import HookFilters
from wakeful.sources.subscriptions.kinds.payload_conditions import checked_conditions, rejects
from wakeful.sources.subscriptions.records import Kind, Subscription
from wakeful.sources.subscriptions.request import ConnectRequest
from wakeful.sources.webhook.delivery import BadDelivery, parse_payload
from wakeful.sources.webhook.mapping import raw_text

ROUTE = "/hooks/subscriptions/{sub_id}"
MAX_BODY_BYTES = 1024 * 1024
_ID_HEADERS = ("webhook-id", "idempotency-key")
_MAX_DELIVERY_ID = 200


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class WebhookKind:
    kind: Kind = "webhook"
    # It opens a door others post through; what they post arrives untrusted.
    effect = Effect.CONTROL

    def __init__(
        self,
        lookup_sub: Callable[[str], Subscription | None],
        fire_for: Callable[[Subscription], Fire],
        hook_filters: HookFilters | None = None,
    ) -> None:
        self._lookup = lookup_sub
        self._fire_for = fire_for
        self._hook_filters = hook_filters

    def reach(self, request: ConnectRequest) -> Reach:
        return Reach()

    async def plan(self, request: ConnectRequest, asking: Asking) -> Planned:
        conditions = checked_conditions(request)
        if request.hook is not None:
            if self._hook_filters is None:
                raise Refusal("hook: this daemon has no [[hooks]]; leave hook out for a route")
            return self._hook_filters.plan(request.hook, conditions)
        token = secrets.token_urlsafe(24)
        path = ROUTE.format(sub_id=asking.sub_id)
        told = (
            f"Senders POST to {path} on the daemon's address with the header "
            f"'Authorization: Bearer {token}'. This token is shown only now: pass it on "
            "where it is needed; it cannot be shown again."
        )
        return Planned(
            {"route": path, "conditions": conditions, "_token_sha256": token_hash(token)},
            told=told,
            told_data={"route": path, "token": token},
        )

    async def watch(self, sub: Subscription, fire: Fire, report: Report) -> None:
        if "hook" in sub.spec:
            await report(f"filtering deliveries to POST {sub.spec['route']}")
        else:
            await report(f"waiting for POST {sub.spec['route']}")
        await anyio.sleep_forever()  # deliveries arrive through the route

    def disarmed(self, sub: Subscription) -> None:
        pass  # the route looks the subscription up on every delivery

    async def handle(self, request: Request) -> Response:
        sub_id = request.path_params["sub_id"]
        sub = self._lookup(sub_id)
        if sub is None or sub.kind != "webhook" or sub.state != "active" or "hook" in sub.spec:
            raise ApiError(404, f"no active webhook subscription {sub_id!r}")
        body = await read_capped(request, MAX_BODY_BYTES)
        scheme, _, token = request.headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ApiError(401, "missing or malformed Authorization header; send 'Bearer <token>'")
        if not hmac.compare_digest(token_hash(token.strip()), sub.spec["_token_sha256"]):
            raise ApiError(401, "the bearer token is not this subscription's")
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            payload = parse_payload(headers, body, bearer=True)
        except BadDelivery as exc:
            raise ApiError(400, str(exc)) from None
        why = rejects(sub.spec["conditions"], payload)
        if why is not None:
            return JSONResponse({"filtered": True, "reason": why}, status_code=202)
        event = _event(sub, payload, _delivery_id(headers))
        try:
            await self._fire_for(sub)(event)
        except DaemonUnavailable as exc:
            raise ApiError(
                503, f"the daemon cannot take this delivery now ({exc}); retry later",
                {"Retry-After": str(exc.retry_after_s)},
            ) from None  # fmt: skip
        return JSONResponse({"event_id": event.id}, status_code=202)


def _delivery_id(headers: dict[str, str]) -> str:
    for name in _ID_HEADERS:
        value = headers.get(name, "").strip()
        if value and len(value) <= _MAX_DELIVERY_ID and value.isprintable():
            return hashlib.sha256(value.encode()).hexdigest()[:32]
    return uuid.uuid4().hex


def _event(sub: Subscription, payload: Any, delivery: str) -> Any:
    return subscription_event(
        sub,
        event_id=f"sub:{sub.id}:hook:{delivery}",
        kind=EventKind.WEBHOOK_RECEIVED,
        text=f"a delivery to {sub.spec['route']}:\n{raw_text(payload)}",
        data={"payload": payload if isinstance(payload, dict | list) else {"text": payload}},
        source_type="webhook",
        principal=sub.spec["route"],
    )
