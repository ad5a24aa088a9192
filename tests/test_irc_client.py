"""The sending side on a real ngircd: a connection lost in the middle of a reply, and
the retry sends only the lines that had not gone out — none twice, none skipped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.irc_user import IrcUser
from tests.ngircd_server import Ngircd
from wakeful.channels.irc.client import IrcClient, Throttle
from wakeful.channels.irc.connection import IrcConnection, IrcError, Login
from wakeful.core.outbox.channels import TryLater
from wakeful.store.memory_state import MemoryState

pytestmark = pytest.mark.anyio

LOGIN = Login("wakeful", "wakeful", "wakeful agent")


@pytest.fixture
def ircd(tmp_path: Path) -> Iterator[Ngircd]:
    with Ngircd(tmp_path / "ngircd") as server:
        yield server


class DiesAfter(IrcConnection):
    """A real connection whose link "drops" after ``lines`` PRIVMSGs."""

    lines_left = 2

    async def send(self, command: str, *params: str) -> None:
        if command == "PRIVMSG":
            if self.lines_left == 0:
                raise IrcError("connection lost while sending: reset by peer")
            self.lines_left -= 1
        await super().send(command, *params)


async def test_a_retry_after_a_lost_connection_sends_only_the_rest(ircd: Ngircd) -> None:
    text = "\n".join(f"line {n}" for n in range(6))
    client = IrcClient("net", MemoryState(), Throttle(burst=10, interval_s=0.05))
    with IrcUser(ircd.port, "owner") as owner:
        async with IrcConnection.open("127.0.0.1", ircd.port, tls=False, login=LOGIN) as first:
            first.__class__ = DiesAfter
            client.connection = first
            with pytest.raises(TryLater):
                await client.send_text("owner", text, ref="7.0")
        client.connection = None
        with pytest.raises(TryLater, match="not connected"):
            await client.send_text("owner", text, ref="7.0")
        async with IrcConnection.open("127.0.0.1", ircd.port, tls=False, login=LOGIN) as second:
            client.connection = second
            await client.send_text("owner", text, ref="7.0")
            got = await anyio.to_thread.run_sync(
                lambda: owner.wait_said(lambda s: len(s) >= 6, what="six lines")
            )
    assert [m.text for m in got] == [f"line {n}" for n in range(6)]


async def test_after_the_burst_lines_leave_at_the_configured_rate(ircd: Ngircd) -> None:
    client = IrcClient("net", MemoryState(), Throttle(burst=2, interval_s=0.3))
    with IrcUser(ircd.port, "owner") as owner:
        async with IrcConnection.open("127.0.0.1", ircd.port, tls=False, login=LOGIN) as link:
            client.connection = link
            started = anyio.current_time()
            await client.send_text("owner", "\n".join("abcdef"), ref="1.0")
            took = anyio.current_time() - started
            await anyio.to_thread.run_sync(lambda: owner.wait_said(lambda s: len(s) >= 6))
    assert 4 * 0.3 - 0.05 <= took < 4 * 0.3 + 1.0  # 2 at once, then 4 spaced lines
