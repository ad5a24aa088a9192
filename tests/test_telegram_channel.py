"""Telegram end to end, in-process: the daemon, the fake Bot API and the fake model, real HTTP."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness, last_user_text
from tests.daemon_process import free_port
from tests.fakes.model_server import FakeModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi, bot_config
from tests.redis_server import REDIS_URL
from wakeful.channels.chat.chunking import split_message
from wakeful.channels.telegram.client import MAX_MESSAGE_CHARS
from wakeful.channels.telegram.markdown import to_telegram_html

OWNER = 4242
STRANGER = 777


@pytest.fixture
def telegram() -> Iterator[FakeTelegramApi]:
    with FakeTelegramApi() as fake:
        yield fake


def said(body: dict[str, Any]) -> str:
    """The last user message of a model request, without the time the daemon puts before it."""
    return re.sub(r"^\[[^\]]*\] ", "", last_user_text(body))


def echo(body: dict[str, Any]) -> Reply:
    return Reply(text=f"answer to {said(body)}")


@asynccontextmanager
async def daemon(
    tmp_path: Path,
    model: FakeModelServer,
    telegram: FakeTelegramApi,
    *,
    port: int = 0,
    store: dict[str, Any] | None = None,
    **bot: Any,
) -> AsyncIterator[Harness]:
    settings = daemon_settings(
        tmp_path / "data",
        model.base_url,
        chat={"telegram": [bot_config(telegram, tmp_path, allowed_user_ids=[OWNER], **bot)]},
        server={"bind": f"127.0.0.1:{port}"},
        store=store or {},
    )
    async with harness(settings) as h:
        yield h


@pytest.mark.anyio
async def test_an_owners_message_is_answered_once_in_the_same_chat(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """An allowed user's message reaches the model once; the reply is sent once, to that chat."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, telegram):
        update = telegram.user_says(OWNER, "hello from telegram")
        [request] = await model_server.await_requests(1)
        assert said(request.body) == "hello from telegram"
        [sent] = await telegram.await_sent(1)
        assert (sent.chat_id, sent.visible) == (OWNER, "answer to hello from telegram")
        # The offset moved past it: Telegram will not hand it out again.
        await telegram.until(lambda: update["update_id"] + 1 in telegram.get_updates_offsets)
    assert len(model_server.requests) == 1
    assert len(telegram.sent) == 1


@pytest.mark.anyio
async def test_updates_without_text_move_the_offset_and_nothing_else(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """A sticker and another bot's message are skipped; the text after them is answered."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, telegram):
        telegram.user_says(OWNER, None)
        telegram.user_says(OWNER + 1, "beep", is_bot=True)
        last = telegram.user_says(OWNER, "words")
        [sent] = await telegram.await_sent(1)
        await telegram.until(lambda: last["update_id"] + 1 in telegram.get_updates_offsets)
    assert sent.visible == "answer to words"
    assert [said(r.body) for r in model_server.requests] == ["words"]


@pytest.mark.anyio
async def test_an_unknown_sender_gets_a_pairing_code_and_never_reaches_the_model(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """A stranger is told a pairing code in their chat; the model never hears of them."""
    async with daemon(tmp_path, model_server, telegram):
        telegram.user_says(STRANGER, "let me in", username="stranger")
        [sent] = await telegram.await_sent(1)
        await telegram.until(lambda: not telegram.updates)
    assert sent.chat_id == STRANGER
    assert "pairing code" in sent.visible.lower()
    assert model_server.requests == []


@pytest.mark.anyio
async def test_an_approved_stranger_reaches_the_model(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """The owner approves the code the stranger was sent; their next message is heard."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, telegram, session="per-user") as h:
        telegram.user_says(STRANGER, "let me in", username="stranger")
        [asked] = await telegram.await_sent(1)
        code = next(line for line in asked.visible.splitlines() if re.fullmatch(r"\w{4}-\w+", line))
        answer = await h.client.post(f"/api/pairing/telegram/{code}", json={"decision": "approve"})
        assert answer.status_code == 200, answer.text
        await telegram.await_sent(2)  # "you're paired"
        telegram.user_says(STRANGER, "now?", username="stranger")
        [*_, reply] = await telegram.await_sent(3)
        own_session = await h.trajectory(f"telegram:tg:{STRANGER}")
    assert (reply.chat_id, reply.visible) == (STRANGER, "answer to now?")
    assert [said(r.body) for r in model_server.requests] == ["now?"]
    assert [m["role"] for m in own_session][-2:] == ["user", "assistant"]


@pytest.mark.anyio
@pytest.mark.parametrize("backend", ["sqlite", "redis"])
async def test_a_restart_resumes_from_the_stored_offset(
    backend: str,
    tmp_path: Path,
    model_server: FakeModelServer,
    telegram: FakeTelegramApi,
    request: pytest.FixtureRequest,
) -> None:
    """After a restart getUpdates starts past the last handled update: none twice, none lost."""
    model_server.responder = echo
    store: dict[str, Any] = {}
    if backend == "redis":
        prefix = request.getfixturevalue("redis_prefix")
        store = {"backend": "redis", "redis_url": REDIS_URL, "redis_prefix": prefix}
    async with daemon(tmp_path, model_server, telegram, store=store):
        first = telegram.user_says(OWNER, "first")
        await telegram.await_sent(1)
    telegram.user_says(OWNER, "second, while the daemon is down")
    polls_before = len(telegram.get_updates_offsets)
    async with daemon(tmp_path, model_server, telegram, store=store):
        sent = await telegram.await_sent(2)
    assert telegram.get_updates_offsets[polls_before] == first["update_id"] + 1
    assert [m.visible for m in sent] == [
        "answer to first",
        "answer to second, while the daemon is down",
    ]
    assert len(model_server.requests) == 2


@pytest.mark.anyio
async def test_webhook_mode_checks_the_secret_on_every_request(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """setWebhook with the secret at start; Telegram's posts are taken, others refused."""
    model_server.responder = echo
    port = free_port()
    public = f"http://127.0.0.1:{port}"
    async with daemon(
        tmp_path, model_server, telegram, mode="webhook", public_url=public, port=port
    ) as h:
        await telegram.until(lambda: telegram.webhook is not None)
        assert telegram.webhook is not None
        assert telegram.webhook.url == f"{public}/chat/telegram/tg/webhook"
        assert telegram.webhook.secret_token == (tmp_path / "telegram-secret").read_text().strip()
        chat = {"id": OWNER, "type": "private"}
        message = {"message_id": 1, "from": {"id": OWNER}, "chat": chat, "text": "x"}
        forged = {"update_id": 1, "message": message}
        async with httpx.AsyncClient(base_url=public) as client:
            for headers in ({}, {"X-Telegram-Bot-Api-Secret-Token": "wrong"}):
                answer = await client.post(telegram.webhook.url, json=forged, headers=headers)
                assert answer.status_code == 401
        telegram.user_says(OWNER, "via the webhook")
        [sent] = await telegram.await_sent(1)
        assert sent.visible == "answer to via the webhook"
        status = (await h.client.get("/api/status")).json()["chat.telegram:tg"]
    assert (status["received"], status["refused"]) == (1, 2)
    assert [said(r.body) for r in model_server.requests] == ["via the webhook"]
    assert telegram.get_updates_offsets == []


@pytest.mark.anyio
async def test_stop_from_telegram_closes_the_model_stream(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """ "stop" while a long reply streams aborts it, as it does from POST /api/messages."""
    model_server.push(Reply(text="a very long story " * 50, hang=True))
    async with daemon(tmp_path, model_server, telegram):
        telegram.user_says(OWNER, "tell me a long story")
        await model_server.await_requests(1)
        telegram.user_says(OWNER, "stop")
        aborted = await model_server.await_abort(0)
    assert aborted.aborted


@pytest.mark.anyio
async def test_typing_shows_while_the_model_works(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """sendChatAction "typing" goes to the chat while its run is active."""
    model_server.push(Reply(text="slow " * 10, token_delay_s=0.1))
    async with daemon(tmp_path, model_server, telegram, typing_every_s=0.3):
        telegram.user_says(OWNER, "think hard")
        await telegram.await_sent(1)
    assert telegram.actions and {chat for chat, _, _ in telegram.actions} == {OWNER}
    assert telegram.actions[0][2] < telegram.sent[0].received_at


@pytest.mark.anyio
async def test_a_long_markdown_reply_is_chunked_and_rendered(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """A reply over 4096 characters arrives as several HTML messages, each within the limit."""
    paragraphs = [f"**Part {i}**: " + "word " * 300 for i in range(6)]
    code = "```python\n" + "x = 1  # <tag> & more\n" * 40 + "```"
    text = "\n\n".join([*paragraphs[:3], code, *paragraphs[3:]])
    model_server.push(Reply(text=text))
    async with daemon(tmp_path, model_server, telegram):
        telegram.user_says(OWNER, "write a lot")
        pieces = split_message(text, MAX_MESSAGE_CHARS)
        sent = await telegram.await_sent(len(pieces))
    assert len(pieces) >= 3
    assert [m.text for m in sent] == [to_telegram_html(piece) for piece in pieces]
    assert all(m.parse_mode == "HTML" and len(m.visible) <= MAX_MESSAGE_CHARS for m in sent)
    shown = "\n".join(m.visible for m in sent)
    assert all(f"Part {i}:" in shown for i in range(6))
    assert shown.count("x = 1  # <tag> & more") == 40
    assert "**" not in shown


@pytest.mark.anyio
async def test_a_send_while_telegram_is_down_is_retried_once_it_is_back(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """sendMessage fails (502) for a while: the reply is retried and arrives exactly once."""
    model_server.push(Reply(text="eventually"))
    telegram.fail("down", methods={"sendMessage"})
    async with daemon(tmp_path, model_server, telegram):
        telegram.user_says(OWNER, "hello")
        await telegram.until(lambda: any(c.status == 502 for c in telegram.calls))
        telegram.recover()
        [sent] = await telegram.await_sent(1)
    assert sent.visible == "eventually"


@pytest.mark.anyio
async def test_the_bot_stays_up_while_telegram_is_unreachable_at_start(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """getMe failing at start: health says so, the daemon serves, the bot works once it answers."""
    model_server.responder = echo
    telegram.fail("down")
    async with daemon(tmp_path, model_server, telegram, retry_min_s=0.05, retry_max_s=0.2) as h:
        await telegram.until(lambda: len(telegram.calls) >= 2)
        health = (await h.client.get("/api/status")).json()["components"]["chat.telegram:tg"]
        assert not health["ok"] and "getMe" in health["detail"]
        telegram.recover()
        telegram.user_says(OWNER, "are you there")
        [sent] = await telegram.await_sent(1)
        health = (await h.client.get("/api/status")).json()["components"]["chat.telegram:tg"]
    assert sent.visible == "answer to are you there"
    assert health["ok"]
