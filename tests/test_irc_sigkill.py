"""SIGKILL a real `wakeful run` in the middle of an IRC conversation, again and again
(tests/support/sigkill_rounds.py).

The owner stays on a real ngircd throughout and writes privately to the bot; the
daemon is killed while the model streams the answer, right after the answer
reached IRC, while the IRC server is down and the answer waits for a retry, and
right after a message was written. After every restart the bot rejoins and the
conversation goes on. Every message the daemon read is answered exactly once;
one written in the instant of a kill may be lost, as IRC keeps nothing for a
client that is gone (docs/irc.md) — but it is never answered twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.irc_daemon import BOT, CHANNEL, OWNER, irc_config, sees_in_channel
from tests.irc_user import IrcUser, Said
from tests.ngircd_server import Ngircd
from tests.support.chat_config import chat_config, toml_table
from tests.support.sigkill_rounds import (
    ChatPlatform,
    SigkillRounds,
    after_the_answer,
    at_once,
    cycle,
    mid_stream,
    sigkill_rounds,
    while_sends_fail,
)


class Irc(ChatPlatform):
    """The owner on IRC, in the bot's channel (to see it join) and writing to it privately."""

    def __init__(self, ircd: Ngircd) -> None:
        self.ircd = ircd
        self.owner = self._owner()
        self.joins = 0  # the bot's joins this owner connection has seen
        self.earlier_said: list[Said] = []  # what the owner's earlier connections received

    def _owner(self) -> IrcUser:
        owner = IrcUser(self.ircd.port, OWNER)
        owner.join(CHANNEL)
        return owner

    def say(self, text: str) -> None:
        self.owner.say(BOT, text)

    def posted(self) -> list[str]:
        return [m.text for m in self.earlier_said + self.owner.from_(BOT)]

    def wait_for(self, condition: Callable[[], object], timeout_s: float, what: str) -> None:
        self.owner.wait_said(lambda _: bool(condition()), timeout_s, what)

    def ready(self, daemon: DaemonProcess) -> None:
        """Until the owner has seen the bot join the channel once more."""

        def joined(line: str) -> bool:
            return line.startswith(f":{BOT}!") and sees_in_channel(line, OWNER, BOT)

        joins = self.joins + 1
        self.owner.wait_line(lambda _: sum(map(joined, self.owner.lines)) >= joins, 30, "the bot")
        self.joins = joins

    def server_back(self) -> None:
        """The server up again; the owner, cut off with it, connects again."""
        self.ircd.start()
        self.owner.close()
        self.earlier_said += self.owner.from_(BOT)
        self.owner = self._owner()
        self.joins = 0  # a new owner connection has seen no join yet


@pytest.fixture
def rounds(tmp_path: Path, model_server: FakeModelServer) -> Iterator[SigkillRounds[Irc]]:
    with Ngircd(tmp_path / "ngircd") as ircd:
        section = toml_table("chat.irc", irc_config(ircd))
        config, port = chat_config(tmp_path, model_server.base_url, section)
        irc = Irc(ircd)
        try:
            with sigkill_rounds(irc, model_server, config, port) as r:
                yield r
        finally:
            irc.owner.close()


def at_once_read_or_lost(r: SigkillRounds[Irc], text: str) -> None:
    r.may_lose.add(text)  # read or not: IRC keeps nothing for a killed client
    at_once(r, text)


def run(r: SigkillRounds[Irc], kills: int) -> None:
    irc = r.platform
    while_the_server_is_down = while_sends_fail(
        irc.ircd.stop,
        irc.server_back,
        heard_first=True,  # the owner is cut off too
    )
    points = [mid_stream, after_the_answer, while_the_server_is_down, at_once_read_or_lost]
    r.run(cycle(points, kills))
    assert sum("irc connected" in line for line in r.logs()) == kills + 1


def test_killed_repeatedly_every_message_read_is_answered_exactly_once(
    rounds: SigkillRounds[Irc],
) -> None:
    """Four kills, one at each kill point: none answered twice, none read and lost."""
    run(rounds, kills=4)


@pytest.mark.slow
def test_killed_twelve_times_every_message_read_is_answered_exactly_once(
    rounds: SigkillRounds[Irc],
) -> None:
    run(rounds, kills=12)
