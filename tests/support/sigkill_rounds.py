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

import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Generic, TypeVar

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.support.answers import QUICK_ECHO, SLOW_ECHO, Answers, Echo, Tags, said, undated
from tests.support.chat_platform import ChatPlatform, Redelivering, poll
from tests.support.kill_points import (
    KillPoint,
    after_delay,
    after_the_answer,
    at_once,
    cycle,
    mid_stream,
    no_kill,
    random_kills,
    while_sends_fail,
)

__all__ = [
    "QUICK_ECHO",
    "SLOW_ECHO",
    "Answers",
    "ChatPlatform",
    "Echo",
    "KillPoint",
    "Redelivering",
    "SigkillRounds",
    "Tags",
    "after_delay",
    "after_the_answer",
    "at_once",
    "cycle",
    "mid_stream",
    "no_kill",
    "random_kills",
    "sigkill_rounds",
    "while_sends_fail",
]


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
            undated(str(m.get("content")))
            for m in response.json()["messages"]
            if m["role"] == "user"
        )

    def _check_requests(self) -> None:
        """A killed run is asked again, but never with a message twice."""
        for request in self.model.requests:
            heard = Counter(
                undated(str(m.get("content")))
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
