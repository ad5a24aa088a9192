"""``webhook`` with ``hook``: a subscription that filters a configured ``[[hooks]]`` route.

No route or token of its own: the hook's sender, secret and checks stay as
configured. Each delivery that passes the hook's own filters is tested
against the subscription's conditions (the webhook channel's tap); one that
passes carries the subscription id and still goes where the hook sends it.
A subscriber in another session gets its own copy of the event too, since
that is where connect_channel promised it. One that fails changes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from wakeful.kernel.events import Event
from wakeful.sources.subscriptions.events import tagged
from wakeful.sources.subscriptions.kinds.base import Fire, Planned, Refusal
from wakeful.sources.subscriptions.kinds.payload_conditions import rejects
from wakeful.sources.subscriptions.records import Subscription

HOOK_ROUTE = "/hooks/{name}"


class HookFilters:
    """The subscriptions on configured hooks, as the webhook ingress's tap."""

    def __init__(
        self,
        hook_names: Callable[[], list[str]],
        active: Callable[[], list[Subscription]],
        fire_for: Callable[[Subscription], Fire],
        count: Callable[[str], Awaitable[None]],
    ) -> None:
        self._hook_names = hook_names
        self._active = active
        self._fire_for = fire_for
        self._count = count

    def plan(self, hook: str, conditions: list[dict[str, Any]]) -> Planned:
        known = self._hook_names()
        if hook not in known:
            listed = ", ".join(repr(n) for n in known) or "none (declare one as [[hooks]])"
            raise Refusal(
                f"hook: no configured hook named {hook!r}; the configured hooks: {listed}"
            )
        route = HOOK_ROUTE.format(name=hook)
        told = (
            f"Deliveries to {route} that pass these conditions now carry this subscription's "
            "id; the hook's sender and secret stay as configured."
        )
        return Planned({"hook": hook, "route": route, "conditions": conditions}, told=told)

    def matching(self, hook: str, kind: str | None, payload: Any) -> list[str]:
        return [
            sub.id
            for sub in self._active()
            if sub.kind == "webhook"
            and sub.spec.get("hook") == hook
            and rejects(sub.spec["conditions"], payload) is None
        ]

    async def delivered(self, event: Event, sub_ids: list[str], duplicate: bool) -> None:
        subs = {sub.id: sub for sub in self._active()}
        for sub_id in sub_ids:
            sub = subs.get(sub_id)
            if sub is None:
                continue  # disconnected meanwhile
            if sub.session != event.session:
                # Its own id (sub:<id>:wh:...): a sender's retry is still one event.
                await self._fire_for(sub)(tagged(event, sub))
            elif not duplicate:
                await self._count(sub.id)
