"""Listeners on a configured hook's deliveries: a subscription's filter on ``/hooks/<name>``.

A tap sees each delivery that passed the hook's own checks and filters. It
names the subscriptions whose conditions the delivery meets; the hook's event
carries those ids in its data and goes where the hook sends it, as before.
After the commit the tap is told, so it can count the delivery and hand it to
a subscriber in another session. A delivery no tap claims is unchanged.
"""

from __future__ import annotations

from typing import Any, Protocol

from wakeful.kernel.events import Event


class HookTap(Protocol):
    def matching(self, hook: str, kind: str | None, payload: Any) -> list[str]:
        """The ids of the subscriptions on ``hook`` this delivery passes (maybe none)."""
        ...

    async def delivered(self, event: Event, sub_ids: list[str], duplicate: bool) -> None:
        """The hook's event (carrying ``sub_ids``) was committed; ``duplicate``: a retry."""
        ...


def with_subscriptions(event: Event, sub_ids: list[str]) -> Event:
    """The hook's event with the matching subscription ids in its data."""
    data = {**event.content.data, "subscriptions": sub_ids}
    if len(sub_ids) == 1:
        data["subscription"] = sub_ids[0]  # the key every other subscription event has
    return event.model_copy(update={"content": event.content.model_copy(update={"data": data})})
