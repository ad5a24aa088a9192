"""SIGKILL rounds: a real `wakeful run` on a chat platform, killed again and again in
the middle of a conversation, must answer every message exactly once.

One harness for every chat platform. Each round the owner says one message on the
platform and the daemon is killed at a chosen point (mid-stream, after the answer
reached the platform, while the platform refuses sends, at once, or after a random
delay) and started again on the same data_dir. In the end:

- every message is in the conversation exactly once, and every model request
  carries it at most once (a killed run is asked again, never with a doubled
  message);
- every message is answered by exactly one post — none twice, none lost — except
  where the platform says a loss or an ``unknown`` reply is its honest outcome;
- no secret of the platform is in any daemon's log.

A platform supplies a small adapter (:class:`ChatPlatform`): how the owner says
something, what the bot posted, how to wait on the platform, and what a freshly
started daemon must have done before the round goes on.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from tests.daemon_harness import last_user_text
from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer, Reply

FILLER = " and more" * 12  # streamed slowly, so a kill can land mid-stream
TAG = re.compile(r"\bmsg-\d+\b")


def said(body: dict[str, Any]) -> str:
    """The last user message of a model request, without the time the daemon puts before it."""
    return _undated(last_user_text(body))


def _undated(content: str) -> str:
    return re.sub(r"^\[[^\]]*\] ", "", content)


class Answers(Protocol):
    """How the fake model answers, and which posts answer which message."""

    def reply(self, body: dict[str, Any]) -> Reply: ...

    def answers(self, text: str, post: str) -> bool: ...


@dataclass(frozen=True)
class Echo:
    """The model answers "{prefix}{what was said}{filler}", token by token."""

    prefix: str = "answer to "
    filler: str = FILLER
    token_delay_s: float = 0.02

    def reply(self, body: dict[str, Any]) -> Reply:
        return Reply(
            text=f"{self.prefix}{said(body)}{self.filler}", token_delay_s=self.token_delay_s
        )

    def answers(self, text: str, post: str) -> bool:
        answer = f"{self.prefix}{text}"
        return post == answer or post.startswith(f"{answer} ")


SLOW_ECHO = Echo()
QUICK_ECHO = Echo(prefix="answer ", filler="", token_delay_s=0.0)


@dataclass(frozen=True)
class Tags:
    """The model answers "**got** <tags>", naming the msg-N tags of everything said since
    its last answer: a reply may answer several messages, read off its tags."""

    token_delay_s: float = 0.01

    def reply(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        answers = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        since = messages[answers[-1] + 1 :] if answers else messages
        heard = " ".join(str(m["content"]) for m in since if m["role"] == "user")
        return Reply(
            text="**got** " + " ".join(TAG.findall(heard)), token_delay_s=self.token_delay_s
        )

    def answers(self, text: str, post: str) -> bool:
        return text in TAG.findall(post)


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


P = TypeVar("P", bound=ChatPlatform)


class SigkillRounds(Generic[P]):
    """The owner, the platform, the model and a daemon that keeps being killed."""

    def __init__(
        self,
        platform: P,
        model: FakeModelServer,
        config: Path,
        port: int,
        answers: Answers = SLOW_ECHO,
    ) -> None:
        self.platform, self.model, self.answers = platform, model, answers
        self.config, self.port = config, port
        model.responder = answers.reply
        self.said: list[str] = []
        self.may_lose: set[str] = (
            set()
        )  # said in the instant of a kill, on a platform that keeps nothing
        self.earlier_logs: list[str] = []  # of the daemons before this one
        self.daemon = DaemonProcess(config, port)

    # The daemon

    def start(self) -> None:
        self.earlier_logs += self.daemon.lines  # of the daemon killed or stopped before
        self.platform.starting()
        self.daemon = DaemonProcess(self.config, self.port)
        self.daemon.start()
        self.platform.ready(self.daemon)

    def kill(self) -> None:
        self.daemon.kill()

    def restart(self, *, while_dead: Callable[[], None] = lambda: None) -> None:
        self.kill()
        while_dead()
        self.start()

    def logs(self) -> list[str]:
        """Every log line of every daemon so far."""
        return self.earlier_logs + self.daemon.lines

    def outbox(self) -> list[dict[str, Any]]:
        with self.daemon.client() as client:
            messages: list[dict[str, Any]] = client.get("/api/sessions/main/outbox").json()[
                "messages"
            ]
        return messages

    # The conversation

    def say(self, text: str) -> None:
        self.said.append(text)
        self.platform.say(text)

    def answers_to(self, text: str) -> list[str]:
        return [post for post in self.platform.posted() if self.answers.answers(text, post)]

    def left_unknown(self, text: str) -> bool:
        """Its reply is ``unknown``: the kill fell between the claim and the platform's answer."""
        states = [m["state"] for m in self.outbox() if self.answers.answers(text, m["text"])]
        return states == ["unknown"]

    def wait_until_answered(self, text: str) -> None:
        """Until ``text`` is answered (or, where the platform allows it, left unknown)."""

        def settled() -> bool:
            if self.answers_to(text):
                return True
            return self.platform.unknown_allowed and self.left_unknown(text)

        self.platform.wait_for(settled, self.platform.answer_timeout_s, f"the answer to {text}")

    def model_heard(self, text: str) -> None:
        """Until a model request carrying ``text`` as its last user message has arrived."""
        deadline = time.monotonic() + 20
        while not any(said(r.body) == text for r in self.model.requests):
            self.model.wait_for_requests(len(self.model.requests) + 1, deadline - time.monotonic())

    def wait_for_failed_attempt(self, text: str, timeout_s: float = 20.0) -> None:
        """Until the answer to ``text`` waits for a retry: failed once, not being sent now."""

        def waiting() -> bool:
            return any(
                m["state"] == "pending"
                and m["attempts"] >= 1
                and self.answers.answers(text, m["text"])
                for m in self.outbox()
            )

        # The outbox has no long poll; the next attempt is seconds away, this is not.
        poll(waiting, timeout_s, f"the answer to {text!r} waiting for a retry")

    # The rounds and what must hold after them

    def run(self, points: Sequence[KillPoint], *, wait_each_round: bool = True) -> int:
        """One round per kill point, then a last message (everything before it is settled
        once all are answered); checks the invariants. The number of replies left unknown."""
        for number, point in enumerate(points):
            text = f"msg-{number}"
            point(self, text)
            self.platform.settle()
            if wait_each_round and text not in self.may_lose:
                self.wait_until_answered(text)
        last = f"msg-{len(points)}"
        self.say(last)
        self.platform.settle()
        for text in self.said:
            if text not in self.may_lose:
                self.wait_until_answered(text)
        return self.check()

    def check(self) -> int:
        """The invariants of the module's docstring; the number of replies left unknown."""
        assert self.model.violations == [], "invalid trajectories were sent to the model"
        conversation = self._conversation()
        read = {text for text in self.said if conversation[text]}
        wrong = {
            text: conversation[text]
            for text in self.said
            if conversation[text] != 1 and not (text in self.may_lose and text not in read)
        }
        assert wrong == {}, f"messages not in the conversation exactly once: {wrong}"
        self._check_requests()
        posts = self.platform.posted()
        unknown, unanswered = 0, {}
        for text in self.said:
            count = sum(self.answers.answers(text, post) for post in posts)
            if count == 0 and text in self.may_lose and text not in read:
                continue  # lost in the instant of a kill, before the daemon read it
            if count == 0 and self.platform.unknown_allowed and self.left_unknown(text):
                unknown += 1
                continue
            if count != 1:
                unanswered[text] = count
        assert unanswered == {}, f"messages not answered exactly once: {unanswered}"
        logs = "\n".join(self.logs())
        leaked = [secret for secret in self.platform.secrets if secret in logs]
        assert leaked == [], "a secret was logged"
        return unknown

    def _conversation(self) -> Counter[str]:
        """How often each user message is in the main session's trajectory."""
        with self.daemon.client() as client:
            response = client.get("/api/sessions/main/trajectory")
        assert response.status_code == 200, response.text
        return Counter(
            _undated(str(m.get("content")))
            for m in response.json()["messages"]
            if m["role"] == "user"
        )

    def _check_requests(self) -> None:
        """A killed run is asked again, but never with a message twice."""
        for request in self.model.requests:
            heard = Counter(
                _undated(str(m.get("content")))
                for m in request.body["messages"]
                if m["role"] == "user"
            )
            doubled = {text: n for text, n in heard.items() if text in self.said and n > 1}
            assert doubled == {}, f"a model request carried a message twice: {doubled}"


@contextmanager
def sigkill_rounds(
    platform: P,
    model: FakeModelServer,
    config: Path,
    port: int,
    answers: Answers = SLOW_ECHO,
) -> Iterator[SigkillRounds[P]]:
    """The rounds with their first daemon started; at the end the last daemon stops
    cleanly (exit 0) and the model saw only valid trajectories."""
    rounds = SigkillRounds(platform, model, config, port, answers)
    rounds.start()
    try:
        yield rounds
        assert rounds.daemon.stop() == 0, rounds.logs()[-20:]
    finally:
        rounds.daemon.__exit__(None, None, None)
    assert model.violations == [], "invalid trajectories were sent to the model"


# Kill points: each says the round's message and kills (and restarts) the daemon.

KillPoint = Callable[[SigkillRounds[Any], str], None]


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
        (failed or SigkillRounds.wait_for_failed_attempt)(r, text)
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
