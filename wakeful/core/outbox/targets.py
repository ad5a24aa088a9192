"""Where a reply goes: the one place that decides a message's target channel."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from wakeful.kernel.events import Event
from wakeful.store.outbox.record import LOCAL_CHAT as LOCAL_CHAT  # the channels import it here

# How the local front doors label the owner's messages (the HTTP API, `wakeful
# chat`/`send`, the web page): one channel serves them all — the session's stream.
LOCAL_CHAT_LABELS = frozenset({"chat:api", "chat:cli", "chat:web", "cli", "web"})


def channel_name(label: str | None) -> str | None:
    """The delivering channel a label means (local chat labels share one)."""
    if label is None:
        return None
    return LOCAL_CHAT if label in LOCAL_CHAT_LABELS else label


@dataclass(frozen=True)
class Target:
    """A channel, and where on it (a chat platform's conversation; None when the
    channel has one destination)."""

    channel: str
    address: str | None = None


def resolve_target(
    event: Event | None,
    *,
    session: str,
    known: Collection[str],
    session_defaults: Mapping[str, str],
    last_active: Target | None,
) -> Target:
    """The triggering event's ``context.reply_to``, then its ``channel`` (with the
    conversation in ``reply_to``), when a channel of that name exists; else the
    session's default, the channel (and conversation) the user was last active
    on, and finally the local chat."""
    candidates: list[Target] = []
    if event is not None:
        if event.context.reply_to is not None:
            candidates.append(Target(event.context.reply_to))
        candidates.append(Target(event.channel, event.context.reply_to))
    if (default := session_defaults.get(session)) is not None:
        address = last_active.address if last_active and last_active.channel == default else None
        candidates.append(Target(default, address))
    if last_active is not None:
        candidates.append(last_active)
    for candidate in candidates:
        name = channel_name(candidate.channel)
        if name is not None and name in known:
            return Target(name, None if name == LOCAL_CHAT else candidate.address)
    return Target(LOCAL_CHAT)


URGENT = frozenset({"high", "urgent"})


def parse_target(text: str) -> Target:
    """``chat:telegram:tg#4242`` → the channel and its conversation (config's notify lists)."""
    channel, _, address = text.partition("#")
    return Target(channel_name(channel) or channel, address or None)


def notification_targets(
    urgency: str,
    *,
    known: Collection[str],
    last_active: Target | None,
    prefer: Sequence[Target],
    urgent: Sequence[Target],
) -> list[Target]:
    """Where a notification goes. Any urgency: where the user last wrote, else the
    first preferred channel that exists, else the local chat. High and urgent: also
    every ``urgent`` channel and the local chat (unread there until seen), each once."""
    first = next(
        (t for t in ([last_active] if last_active else []) + list(prefer) if t.channel in known),
        Target(LOCAL_CHAT),
    )
    targets = [first]
    if urgency in URGENT:
        for extra in [*urgent, Target(LOCAL_CHAT)]:
            if extra.channel in known and all(t.channel != extra.channel for t in targets):
                targets.append(extra)
    return targets
