"""SIGKILL a real `wakeful run` in the middle of a Signal conversation, again and again
(tests/support/sigkill_rounds.py): killed while the model streams the answer, right
after the answer reached signal-cli, while signal-cli refuses to send (an I/O error)
and the answer waits for a retry, and right after the message was written (before or
after the daemon saw it). signal-cli stays up the whole time and keeps the events for
the next stream (Last-Event-ID). In the end every message has been answered exactly
once: none twice, none lost.

Signal's ``send`` has no idempotency key (``resend_safe`` False), so a kill in the
instant between signal-cli accepting a send and the outbox recording it would
leave that reply ``unknown`` rather than send it twice; none of these kill points
lands there, and a reply in that state would show here as missing, not doubled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.fakes.signal_cli import FakeSignalCli
from tests.support.chat_config import chat_config, toml_table
from tests.support.sigkill_rounds import (
    ChatPlatform,
    SigkillRounds,
    after_the_answer,
    at_once,
    mid_stream,
    sigkill_rounds,
    while_sends_fail,
)
from tests.test_signal_channel import OWNER, account_config


class Signal(ChatPlatform):
    def __init__(self, signal: FakeSignalCli) -> None:
        self.signal = signal
        self.opened = 0  # streams opened before the daemon now starting

    def say(self, text: str) -> None:
        self.signal.user_says(OWNER, text)

    def posted(self) -> list[str]:
        return [s.text for s in self.signal.sent_to(OWNER.number)]

    def wait_for(self, condition: Callable[[], object], timeout_s: float, what: str) -> None:
        self.signal.wait_for(condition, timeout_s, what)

    def starting(self) -> None:
        self.opened = len(self.signal.stream_opens)

    def ready(self, daemon: DaemonProcess) -> None:
        # Its stream is open: what is said from now on reaches it or waits for the next one.
        self.signal.wait_for(lambda: len(self.signal.stream_opens) > self.opened, 20, "a stream")


@pytest.fixture
def rounds(tmp_path: Path, model_server: FakeModelServer) -> Iterator[SigkillRounds[Signal]]:
    with FakeSignalCli(keepalive_s=0.5) as signal:
        section = toml_table("chat.signal", account_config(signal))
        config, port = chat_config(tmp_path, model_server.base_url, section)
        with sigkill_rounds(Signal(signal), model_server, config, port) as r:
            yield r


def test_killed_repeatedly_every_message_is_answered_exactly_once(
    rounds: SigkillRounds[Signal],
) -> None:
    """Four kills, one at each kill point: each message answered once."""
    signal = rounds.platform.signal

    def refused_and_recorded(r: SigkillRounds[Signal], text: str) -> None:
        """signal-cli refused a send with an I/O error, and the outbox recorded the failed
        attempt: a kill before that record would leave the reply ``unknown`` (claimed,
        its outcome not known), never resent — this kill point is the retry's."""
        signal.wait_for(lambda: any(call.error == -3 for call in signal.calls), 20, "a failed send")
        r.wait_for_failed_attempt(text)

    while_sends_fail_with_io = while_sends_fail(
        lambda: signal.fail("io"),
        signal.recover,  # the new daemon's first try succeeds
        failed=refused_and_recorded,
    )
    rounds.run([mid_stream, after_the_answer, while_sends_fail_with_io, at_once])
    assert any("signal account ready" in line for line in rounds.logs())
    # Every stream after the first named the last event handled.
    assert all(opened is not None for opened in signal.stream_opens[1:])
