"""The SIGKILL rounds count a message's answers by matching posts to it
(tests/support/answers.py): a post answers exactly the message it names — never
msg-1 for msg-10 — however the platform shows the rest of it."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.support.answers import QUICK_ECHO, SLOW_ECHO, Echo, Tags

NUMBERS = st.integers(min_value=0, max_value=200)


def request(*said: str) -> dict[str, Any]:
    """A model request: the dated user messages, an answer after all but the last."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "you are a test"}]
    for text in said:
        messages.append({"role": "user", "content": f"[Mon 09:00] {text}"})
        messages.append({"role": "assistant", "content": "ok"})
    return {"messages": messages[:-1]}


@given(asked=NUMBERS, other=NUMBERS, echo=st.sampled_from([SLOW_ECHO, QUICK_ECHO]))
def test_an_echo_answers_the_message_it_names_and_no_other(
    asked: int, other: int, echo: Echo
) -> None:
    post = echo.reply(request(f"msg-{asked}")).text
    assert echo.answers(f"msg-{asked}", post)
    assert echo.answers(f"msg-{other}", post) == (other == asked)


@given(batch=st.sets(NUMBERS, min_size=1, max_size=5), earlier=NUMBERS, other=NUMBERS)
def test_tags_answer_everything_said_since_the_last_answer(
    batch: set[int], earlier: int, other: int
) -> None:
    """A reply names each message since the model's last answer, none before it."""
    tags = Tags()
    said = [f"msg-{n}" for n in sorted(batch)]
    body = request(f"msg-{earlier}", said[0])
    body["messages"] += [{"role": "user", "content": f"[Mon 09:01] {t}"} for t in said[1:]]
    post = tags.reply(body).text
    assert all(tags.answers(text, post) for text in said)
    assert tags.answers(f"msg-{other}", post) == (other in batch)
