"""Where a reply goes: the one place that decides a message's target channel."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from wakeful.events import Event

LOCAL_CHAT = "chat:web"
# How the local front doors label the owner's messages (the HTTP API, `wakeful
# chat`/`send`, the web page): one channel serves them all — the session's stream.
LOCAL_CHAT_LABELS = frozenset({"chat:api", "chat:cli", "chat:web", "cli", "web"})


def channel_name(label: str | None) -> str | None:
    """The delivering channel a label means (local chat labels share one)."""
    if label is None:
        return None
    return LOCAL_CHAT if label in LOCAL_CHAT_LABELS else label


def resolve_target(
    event: Event | None,
    *,
    session: str,
    known: Collection[str],
    session_defaults: Mapping[str, str],
    last_active: Mapping[str, str],
) -> str:
    """The triggering event's ``context.reply_to``, then its ``channel``, when a
    channel of that name exists; else the session's default, the channel the
    user was last active on, and finally the local chat."""
    candidates: list[str | None] = []
    if event is not None:
        candidates += [event.context.reply_to, event.channel]
    candidates += [session_defaults.get(session), last_active.get(session)]
    for label in candidates:
        name = channel_name(label)
        if name is not None and name in known:
            return name
    return LOCAL_CHAT
