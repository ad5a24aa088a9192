"""Kill points of the SIGKILL rounds (tests/support/sigkill_rounds.py): each says the
round's message and kills (and starts again) the daemon at its moment."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.sigkill_rounds import SigkillRounds

KillPoint = Callable[["SigkillRounds[Any]", str], None]


def no_kill(r: SigkillRounds[Any], text: str) -> None:
    r.say(text)


def at_once(r: SigkillRounds[Any], text: str) -> None:
    """Right after the message was written: the daemon may or may not have read it."""
    r.say(text)
    r.restart()


def mid_stream(r: SigkillRounds[Any], text: str) -> None:
    """While the model streams the answer."""
    r.say(text)
    r.model_heard(text)
    r.restart()


def after_the_answer(r: SigkillRounds[Any], text: str) -> None:
    """Right after the answer reached the platform: is it sent again after the restart?"""
    r.say(text)
    r.wait_until_answered(text)
    r.restart()


def while_sends_fail(
    down: Callable[[], None],
    up: Callable[[], None],
    *,
    heard_first: bool = False,
    failed: KillPoint | None = None,
) -> KillPoint:
    """While the platform refuses the answer (``down``) and it waits for a retry; the
    platform comes back (``up``) while the daemon is dead, so the new one's first try
    succeeds. ``heard_first``: ``down`` also cuts the owner off, so the model must have
    heard the message before. ``failed``: how to see the failed send (default: the
    answer waits in the outbox with one attempt)."""

    def point(r: SigkillRounds[Any], text: str) -> None:
        r.say(text)
        if heard_first:
            r.model_heard(text)
        down()
        if failed is None:
            r.wait_for_failed_attempt(text)
        else:
            failed(r, text)
        r.restart(while_dead=up)

    return point


def after_delay(delay_s: float) -> KillPoint:
    """Killed ``delay_s`` after the message was sent; below zero, ``-delay_s`` before it,
    so what reaches the next daemon is the platform's redelivery. The delay is a random
    kill point: it synchronises nothing."""

    def point(r: SigkillRounds[Any], text: str) -> None:
        if delay_s < 0:
            r.kill()
        r.say(text)
        time.sleep(abs(delay_s))
        if delay_s >= 0:
            r.kill()
        r.start()

    return point


def cycle(points: Sequence[KillPoint], kills: int) -> list[KillPoint]:
    """``kills`` rounds going round ``points``."""
    return [points[number % len(points)] for number in range(kills)]


def random_kills(seed: int, messages: int, kills: int) -> list[KillPoint]:
    """``kills`` of ``messages`` rounds killed after a random delay; the first kill always
    before the platform's first send, so its redelivery is tested."""
    rng = random.Random(seed)
    kill_at = set(rng.sample(range(messages), kills))
    points: list[KillPoint] = []
    for number in range(messages):
        if number not in kill_at:
            points.append(no_kill)
            continue
        delay = rng.uniform(-0.15, 0.35)
        points.append(after_delay(-0.1 if number == min(kill_at) else delay))
    return points
