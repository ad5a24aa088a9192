"""``POST /hooks/{name}``: the checks, in the order the spec fixes.

404 unknown hook → 413 body over the hook's cap (never reading past it) →
401 signature → 400 parse → filters (202 ``{"filtered": true}``) → dedup
by delivery id (a GitHub hook's: its signed body's hash) and commit through
the dispatcher → 202 ``{"event_id"}``.
The answer never waits for the agent; 503 with ``Retry-After`` when the
daemon cannot commit, so the sender retries later.

Two ways in, one answer: the server's protocol hands most deliveries to
:meth:`HookIngress.answer` directly (``wakeful.kernel.http.direct``: whole
body, known hook, length within its cap); the rest come through the ASGI
endpoint :meth:`HookIngress.handle`. Both run :meth:`HookIngress._deliver`.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from json.encoder import encode_basestring
from typing import Any

import structlog
from starlette.requests import Request
from starlette.responses import Response

from wakeful.core.front_door import DaemonUnavailable, SubmitResult
from wakeful.kernel.events import Event, EventError
from wakeful.kernel.http.body import read_capped
from wakeful.kernel.http.direct import DirectAnswer
from wakeful.kernel.http.errors import ApiError, answer_response
from wakeful.sources.webhook.auth import AuthError
from wakeful.sources.webhook.delivery import (
    BadDelivery,
    Hook,
    hook_event_type,
    parse_payload,
    signed_delivery_id,
    to_event,
)
from wakeful.sources.webhook.taps import HookTap, with_subscriptions

log = structlog.get_logger(__name__)

Submit = Callable[[Event], Awaitable[SubmitResult]]


class HookIngress:
    """The endpoint for every configured hook, with per-hook counters for /api/status;
    a direct route (``wakeful.kernel.http.direct.DirectRoute``) for ``/hooks/``."""

    prefix = b"/hooks/"

    def __init__(
        self, hooks: Mapping[str, Hook], submit: Submit, clock: Callable[[], float] = time.time
    ) -> None:
        self._submit = submit
        self._clock = clock
        self._counts: dict[str, Counter[str]] = {}
        self._taps: list[HookTap] = []
        self.replace_hooks(hooks)

    @property
    def hook_names(self) -> list[str]:
        return sorted(self._hooks)

    def add_tap(self, tap: HookTap) -> None:
        """A listener on every hook's deliveries (the subscriptions component's)."""
        self._taps.append(tap)

    def replace_hooks(self, hooks: Mapping[str, Hook]) -> None:
        """SIGHUP (and the start): the new set of hooks takes effect for the next request."""
        self._hooks = dict(hooks)
        # Each name as the request line carries it, with its body cap (for takes()).
        self._caps = {name.encode("ascii"): h.config.max_body_bytes for name, h in hooks.items()}
        for name in self._hooks:
            self._counts.setdefault(name, Counter())

    def takes(self, rest: bytes, content_length: int) -> bool:
        cap = self._caps.get(rest)
        return cap is not None and content_length <= cap

    async def answer(self, rest: str, headers: dict[str, str], body: bytes) -> DirectAnswer:
        """A delivery the server's protocol read whole (see :meth:`takes`)."""
        hook = self._hooks.get(rest)
        if hook is None:  # a SIGHUP took it away since takes()
            return _error(_no_hook(rest))
        try:
            return await self._deliver(hook, headers, body)
        except ApiError as exc:
            self._refused(hook.name, exc)
            return _error(exc)

    async def handle(self, request: Request) -> Response:
        """The ASGI endpoint: what the direct route does not take (a chunked or slow
        body, one over the cap, an unknown hook)."""
        name = request.path_params["name"]
        hook = self._hooks.get(name)
        if hook is None:
            raise _no_hook(name)
        try:
            body = await read_capped(request, hook.config.max_body_bytes)
            answer = await self._deliver(hook, _header_dict(request), body)
        except ApiError as exc:
            self._refused(name, exc)
            raise
        return answer_response(answer)

    def _refused(self, name: str, exc: ApiError) -> None:
        self._counts[name][str(exc.status_code)] += 1
        if exc.status_code != 503:
            log.warning("webhook refused", hook=name, status=exc.status_code, why=exc.detail)

    async def _deliver(self, hook: Hook, headers: dict[str, str], body: bytes) -> DirectAnswer:
        try:
            hook.verifier.verify(headers, body, self._clock())
        except AuthError as exc:
            raise ApiError(401, str(exc)) from None
        try:
            payload = parse_payload(headers, body, bearer=hook.config.auth == "bearer")
            kind = hook_event_type(hook, headers, payload)
            why = hook.filter.rejects(kind, payload)
            if why is not None:
                self._counts[hook.name]["filtered"] += 1
                return DirectAnswer.json(202, {"filtered": True, "reason": why})
            delivery = signed_delivery_id(hook, headers, body)
            event = to_event(hook, delivery, kind, payload, headers.get("x-github-delivery"))
        except (BadDelivery, EventError) as exc:
            raise ApiError(400, str(exc)) from None
        claimed = [(tap, tap.matching(hook.name, kind, payload)) for tap in self._taps]
        claimed = [(tap, ids) for tap, ids in claimed if ids]
        if claimed:
            event = with_subscriptions(event, [i for _, ids in claimed for i in ids])
        result = await self._commit(event)
        self._counts[hook.name]["duplicate" if result.duplicate else "accepted"] += 1
        for tap, ids in claimed:
            try:
                await tap.delivered(event, ids, result.duplicate)
            except Exception:  # the delivery is committed: a tap's failure is its own
                log.exception("webhook tap failed", hook=hook.name, subscriptions=ids)
        return accepted(result)

    async def _commit(self, event: Event) -> SubmitResult:
        try:
            return await self._submit(event)
        except DaemonUnavailable as exc:
            raise ApiError(
                503,
                f"the daemon cannot take this delivery now ({exc}); retry later",
                {"Retry-After": str(exc.retry_after_s)},
            ) from None

    def stats(self) -> dict[str, Any]:
        """Per hook, the deliveries by outcome since the start; ``accepted`` always, so
        a configured hook nothing has reached yet is listed (``wakeful status``)."""
        return {name: {"accepted": 0, **counts} for name, counts in self._counts.items()}


def accepted(result: SubmitResult) -> DirectAnswer:
    """The 202 for a committed delivery: the bytes ``DirectAnswer.json`` gives for
    ``{"event_id": ..., "duplicate": ...}``, formatted directly. Every delivery gets one,
    and a JSON encoder's run per call was ~3 us of a delivery's ~190."""
    duplicate = b"true" if result.duplicate else b"false"
    event_id = encode_basestring(result.event_id).encode("utf-8")
    return DirectAnswer(202, b'{"event_id":' + event_id + b',"duplicate":' + duplicate + b"}")


def _header_dict(request: Request) -> dict[str, str]:
    """The headers as a plain dict, first value winning like ``Headers.get``.

    A delivery's checks look up a dozen headers; on Starlette's ``Headers`` each
    look-up scans the whole list (and a miss raises and catches a KeyError).
    """
    found: dict[str, str] = {}
    for name, value in request.headers.raw:
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found


def _no_hook(name: str) -> ApiError:
    return ApiError(404, f"no webhook named {name!r}; declare it as [[hooks]] name = ...")


def _error(exc: ApiError) -> DirectAnswer:
    """The answer the app's error handler gives the same exception."""
    return DirectAnswer.error(exc.status_code, exc.detail, tuple((exc.headers or {}).items()))
