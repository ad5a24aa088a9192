"""What a chat platform supplies to the SIGKILL rounds (tests/support/sigkill_rounds.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from tests.daemon_process import DaemonProcess


def poll(condition: Callable[[], object], timeout_s: float, what: str) -> None:
    """Until ``condition()`` is true: for state in other processes that sends no event a
    test could wait on, read again until the deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s} s")
        time.sleep(0.05)


class ChatPlatform:
    """A platform's adapter. The defaults suit a platform with nothing to wait for."""

    secrets: Sequence[str] = ()  # never in a daemon's log
    answer_timeout_s = 30.0
    # The kill may fall between the outbox's claim and the platform's answer, and the
    # platform cannot be asked whether it took the send: that reply is left ``unknown``.
    unknown_allowed = False

    def say(self, text: str) -> None:
        """The owner writes ``text`` to the bot."""
        raise NotImplementedError

    def posted(self) -> list[str]:
        """Every message the bot posted to the owner, as the owner sees it."""
        raise NotImplementedError

    def wait_for(self, condition: Callable[[], object], timeout_s: float, what: str) -> None:
        poll(condition, timeout_s, what)

    def starting(self) -> None:
        """Before each start (to note what ``ready`` then waits for)."""

    def ready(self, daemon: DaemonProcess) -> None:
        """After each start: until the daemon is where the next round may begin."""

    def settle(self) -> None:
        """After each round's kill point: until the platform's own deliveries are done."""


class Redelivering(ChatPlatform):
    """A platform that posts each message to the daemon's webhook until it is answered
    200 (Slack's retries, Meta's redeliveries): ``say`` sends in the background, so the
    daemon may be killed and started meanwhile; ``settle`` waits for the 200."""

    unknown_allowed = True  # a random kill may fall between the outbox's claim and the answer

    def __init__(self) -> None:
        self.sends: list[int] = []  # how many posts each message took
        self._said: list[str] = []
        self._deliveries: list[threading.Thread] = []

    def deliver_until_acked(self, text: str, number: int) -> int:
        """Posts ``text`` (the ``number``-th message said, from 0) until answered 200; the
        number of posts."""
        raise NotImplementedError

    def say(self, text: str) -> None:
        number = len(self._said)
        self._said.append(text)
        delivery = threading.Thread(
            target=lambda: self.sends.append(self.deliver_until_acked(text, number))
        )
        delivery.start()
        self._deliveries.append(delivery)

    def settle(self) -> None:
        for delivery in self._deliveries:
            delivery.join(timeout=60)
        self._deliveries.clear()
