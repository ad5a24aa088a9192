"""'composing' left on by a run that ended without a reply is ended with 'active'."""

from __future__ import annotations

import anyio
import pytest

from wakeful.channels.xmpp.outgoing import XmppClient

pytestmark = pytest.mark.anyio


class Recorded:
    """Stands in for the live connection: what the client sent, nothing on the wire
    (the real exchange with a server is in tests/test_xmpp_conversation.py)."""

    connected = True

    def __init__(self) -> None:
        self.sent: list[tuple[str, str | None, str | None]] = []

    def send_message(self, to: str, body: str | None, chat_state: str | None) -> None:
        self.sent.append((to, body, chat_state))

    async def confirm(self) -> None:
        pass


async def test_a_composing_not_renewed_is_followed_by_active_and_a_reply_needs_none() -> None:
    client = XmppClient(retry_after_s=1.0)
    connection = Recorded()
    client.connection = connection  # type: ignore[assignment]
    async with anyio.create_task_group() as group:
        group.start_soon(client.settle, 0.1)
        await client.send_typing("me@example.org")
        await client.send_typing("you@example.org")
        await client.send_text("you@example.org", "the reply", ref="1.0")  # 'active' with it
        with anyio.fail_after(5):
            while ("me@example.org", None, "active") not in connection.sent:  # noqa: ASYNC110 - records only
                await anyio.sleep(0.02)
        group.cancel_scope.cancel()
    assert connection.sent == [
        ("me@example.org", None, "composing"),
        ("you@example.org", None, "composing"),
        ("you@example.org", "the reply", "active"),
        ("me@example.org", None, "active"),
    ]
