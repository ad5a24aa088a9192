"""A chat platform that lives in the test: the shared chat parts with a recording client.

It is what a platform package plugs into the foundation (ChatInbound,
ChatChannel, TypingIndicator), minus a wire protocol: tests hand it messages
and read what it sent.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskStatus

from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.chat.outgoing import ChatChannel
from wakeful.channels.chat.typing_indicator import TypingIndicator
from wakeful.core.components.context import ComponentSetup
from wakeful.core.outbox.channels import TryLater
from wakeful.store.base import ChannelState


@dataclass
class RecordingClient:
    max_chars: int = 4096
    resend_safe: bool = False
    sent: list[tuple[str, str, str]] = field(default_factory=list)  # (address, text, ref)
    typing: list[str] = field(default_factory=list)
    fail_next: int = 0  # the next n sends raise TryLater
    changed: anyio.Event = field(default_factory=anyio.Event)

    async def send_text(self, address: str, text: str, *, ref: str) -> None:
        if self.fail_next:
            self.fail_next -= 1
            raise TryLater("the platform is down (scripted)")
        self.sent.append((address, text, ref))
        self._changed()

    async def send_typing(self, address: str) -> None:
        self.typing.append(address)
        self._changed()

    def _changed(self) -> None:
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_sent(self, n: int, timeout_s: float = 10.0) -> list[tuple[str, str, str]]:
        with anyio.fail_after(timeout_s):
            while len(self.sent) < n:
                await self.changed.wait()
        return self.sent

    async def wait_typing(self, timeout_s: float = 10.0) -> None:
        with anyio.fail_after(timeout_s):
            while not self.typing:
                await self.changed.wait()


class LoopbackChat:
    """``chat:telegram:loop``: the foundation as a platform component uses it."""

    name = "chat.loopback"

    def __init__(self, allowed: set[str], session: str = "main", max_chars: int = 4096) -> None:
        self.client = RecordingClient(max_chars=max_chars)
        self._allowed = allowed
        self._session = session
        self.inbound: ChatInbound | None = None
        self.state: ChannelState | None = None
        self.indicator: TypingIndicator | None = None

    async def configure(self, setup: ComponentSetup) -> None:
        self.state = setup.state
        self.inbound = ChatInbound(
            platform="telegram",
            name="loop",
            session=self._session,
            allowed=self._allowed,
            setup=setup,
        )
        setup.add_channel(ChatChannel(self.inbound.channel, self.client, setup.state))
        self.indicator = TypingIndicator(setup.feed, self.inbound, self.client, every_s=0.05)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        assert self.indicator is not None
        task_status.started()
        await self.indicator.run()
