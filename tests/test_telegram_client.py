"""The Telegram client against the fake Bot API: what is sent, and how each failure is sorted."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx
import pytest

from tests.fakes.telegram_api import TOKEN, FakeTelegramApi
from wakeful.channels.telegram.bot_api import BotApi, BotApiError, BotApiUnreachable
from wakeful.channels.telegram.client import TelegramClient
from wakeful.core.outbox.channels import NeverDeliverable, TryLater

OWNER = 42


@pytest.fixture
def telegram() -> Iterator[FakeTelegramApi]:
    with FakeTelegramApi() as fake:
        fake.known_chats.add(OWNER)
        yield fake


@pytest.fixture
async def client(telegram: FakeTelegramApi) -> AsyncIterator[TelegramClient]:
    async with httpx.AsyncClient() as http:
        yield TelegramClient(BotApi(telegram.base_url, TOKEN, http))


@pytest.mark.anyio
async def test_markdown_is_sent_as_html(telegram: FakeTelegramApi, client: TelegramClient) -> None:
    """A reply goes out once, as parse_mode HTML, to the chat it names."""
    await client.send_text(str(OWNER), "**done**: `x < y`")
    [sent] = telegram.sent
    assert (sent.chat_id, sent.parse_mode) == (OWNER, "HTML")
    assert sent.text == "<b>done</b>: <code>x &lt; y</code>"


@pytest.mark.anyio
async def test_refused_html_falls_back_to_plain_text(
    telegram: FakeTelegramApi, client: TelegramClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When Telegram cannot parse the entities, the same text goes out once more, without markup."""
    monkeypatch.setattr("wakeful.channels.telegram.client.to_telegram_html", lambda t: f"<x>{t}")
    await client.send_text(str(OWNER), "a **b**")
    assert [(c.method, c.status) for c in telegram.calls] == [
        ("sendMessage", 400),
        ("sendMessage", 200),
    ]
    [sent] = telegram.sent
    assert (sent.text, sent.parse_mode) == ("a **b**", None)


@pytest.mark.anyio
@pytest.mark.parametrize("kind", ["down", "500"])
async def test_an_unavailable_api_is_try_later(
    kind: str, telegram: FakeTelegramApi, client: TelegramClient
) -> None:
    """502 from a proxy in front of a dead API, or Telegram's own 5xx: retried later."""
    telegram.fail(kind, methods={"sendMessage"})  # type: ignore[arg-type]
    with pytest.raises(TryLater):
        await client.send_text(str(OWNER), "hi")
    telegram.recover()
    await client.send_text(str(OWNER), "hi")
    assert len(telegram.sent) == 1


@pytest.mark.anyio
async def test_no_answer_is_try_later(telegram: FakeTelegramApi) -> None:
    """Connection refused is a TryLater, and its message does not carry the token."""
    telegram.close()
    async with httpx.AsyncClient() as http:
        client = TelegramClient(BotApi(telegram.base_url, TOKEN, http))
        with pytest.raises(TryLater) as caught:
            await client.send_text(str(OWNER), "hi")
    assert TOKEN not in str(caught.value)


@pytest.mark.anyio
async def test_rate_limit_is_honoured_without_asking_again(
    telegram: FakeTelegramApi, client: TelegramClient
) -> None:
    """A 429's retry_after: TryLater, and sends before it has passed do not reach Telegram."""
    telegram.fail("429", methods={"sendMessage"}, retry_after=30)
    with pytest.raises(TryLater, match="retry after 30"):
        await client.send_text(str(OWNER), "one")
    telegram.recover()
    with pytest.raises(TryLater, match="asked to wait"):
        await client.send_text(str(OWNER), "two")
    assert [c.method for c in telegram.calls] == ["sendMessage"]
    await client.send_typing(str(OWNER))  # typing is skipped as well
    assert len(telegram.calls) == 1


@pytest.mark.anyio
async def test_blocked_and_unknown_chats_are_never_deliverable(
    telegram: FakeTelegramApi, client: TelegramClient
) -> None:
    """403 "bot was blocked" and 400 "chat not found" will never work: no retries."""
    telegram.blocked_chats.add(OWNER)
    with pytest.raises(NeverDeliverable, match="blocked"):
        await client.send_text(str(OWNER), "hi")
    with pytest.raises(NeverDeliverable, match="chat not found"):
        await client.send_text("777", "hi")


@pytest.mark.anyio
async def test_a_wrong_token_is_retried_and_never_shown(telegram: FakeTelegramApi) -> None:
    """401: the operator can fix the token file, so TryLater; the token is not in any message."""
    async with httpx.AsyncClient() as http:
        api = BotApi(telegram.base_url, "999:wrong-token-value-xyz", http)
        with pytest.raises(TryLater) as caught:
            await TelegramClient(api).send_text(str(OWNER), "hi")
    assert "wrong-token-value-xyz" not in str(caught.value)
    assert "401" in str(caught.value)


@pytest.mark.anyio
async def test_typing_action(telegram: FakeTelegramApi, client: TelegramClient) -> None:
    """send_typing is sendChatAction "typing" to the chat."""
    await client.send_typing(str(OWNER))
    assert [(chat, action) for chat, action, _ in telegram.actions] == [(OWNER, "typing")]


@pytest.mark.anyio
async def test_api_errors_carry_telegrams_fields(telegram: FakeTelegramApi) -> None:
    """BotApiError keeps error_code, description and retry_after; unreachable is its own type."""
    telegram.fail("429", retry_after=7)
    async with httpx.AsyncClient() as http:
        api = BotApi(telegram.base_url, TOKEN, http)
        with pytest.raises(BotApiError) as caught:
            await api.call("getMe")
        assert (caught.value.error_code, caught.value.retry_after_s) == (429, 7.0)
        telegram.recover()
        assert (await api.call("getMe"))["is_bot"] is True
        telegram.close()
        with pytest.raises(BotApiUnreachable, match="getMe"):
            await api.call("getMe")
