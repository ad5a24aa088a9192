"""The events a subscription raises: its id in the data, the origin's trust.

The trust is the origin's (a stranger's mail or a web server's answer is
untrusted; a file in the workspace is the daemon's own), and never more than
the session's when it subscribed: a subscription a tainted run made speaks
with that run's trust, as its timers and shell tasks do.
"""

from __future__ import annotations

from typing import Any

from wakeful.kernel.events import Event
from wakeful.sources.subscriptions.records import Subscription


def subscription_event(
    sub: Subscription,
    *,
    event_id: str,
    kind: str,
    text: str,
    data: dict[str, Any],
    source_type: str,
    principal: str | None = None,
    subject: str | None = None,
) -> Event:
    tainted = {"tainted_by": sub.tainted_by} if sub.tainted_by else {}
    note = f" ({sub.note})" if sub.note else ""
    return Event.parse(
        {
            "id": event_id,
            "kind": kind,
            "source": {
                "type": source_type,
                "principal": principal,
                # What a subscription sees is a third party's (a file name, a page, a
                # hook's body): none of its kinds is trustable (wakeful/kernel/trust.py).
                "trusted": False,
            },
            "channel": f"subscription:{sub.id}",
            "content": {
                "text": f"Subscription {sub.id}{note}: {text}",
                "subject": subject,
                "data": {**data, "subscription": sub.id, **tainted},
            },
            "session": sub.session,
        }
    )


def tagged(event: Event, sub: Subscription) -> Event:
    """An event another channel built (an e-mail, a shell line) as the subscription's:
    its own id (the channel's may be delivered too), the subscription id in its data."""
    data = {**event.content.data, "subscription": sub.id}
    if sub.tainted_by:
        data["tainted_by"] = sub.tainted_by
    content = event.content.model_copy(update={"data": data})
    source = event.source.model_copy(update={"trusted": event.trusted and not sub.tainted_by})
    return event.model_copy(
        update={
            "id": f"sub:{sub.id}:{event.id}",
            "content": content,
            "source": source,
            "session": sub.session,
            "channel": f"subscription:{sub.id}",
        }
    )
