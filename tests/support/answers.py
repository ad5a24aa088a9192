"""The fake model's answers in the SIGKILL rounds (tests/support/sigkill_rounds.py),
and which posts answer which message."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Protocol

from tests.daemon_harness import last_user_text
from tests.fakes.model_server import Reply

FILLER = " and more" * 12  # streamed slowly, so a kill can land mid-stream
TAG = re.compile(r"\bmsg-\d+\b")


def said(body: dict[str, Any]) -> str:
    """The last user message of a model request, without the time the daemon puts before it."""
    return undated(last_user_text(body))


def undated(content: str) -> str:
    """A user message without the "[time] " the daemon puts before it."""
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
