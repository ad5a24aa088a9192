"""The poller and the webhook receiver on their own: offsets, failures, refusals."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.routing import Route

from tests.fakes.telegram_api import TOKEN, FakeTelegramApi
from wakeful.channels.chat.health import BotHealth
from wakeful.channels.telegram.bot_api import BotApi
from wakeful.channels.telegram.polling import UpdatePoller
from wakeful.channels.telegram.updates import platform_message
from wakeful.channels.telegram.webhook import SECRET_HEADER, WebhookReceiver
from wakeful.core.front_door import DaemonUnavailable
from wakeful.store.base import Cursor

OWNER = 42
KEY = "telegram:tg:offset"


class MemoryState:
    """ChannelState in a dict; the cursor is "committed" only when the handler succeeds."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}

    async def get_state(self, key: str) -> str | None:
        return self.values.get(key)

    async def put_state(self, key: str, value: str | None) -> None:
        if value is None:
            self.values.pop(key, None)
        else:
            self.values[key] = value


@pytest.fixture
def telegram() -> Iterator[FakeTelegramApi]:
    with FakeTelegramApi() as fake:
        yield fake


@pytest.fixture
async def api(telegram: FakeTelegramApi) -> AsyncIterator[BotApi]:
    async with httpx.AsyncClient() as http:
        yield BotApi(telegram.base_url, TOKEN, http)


def health_log(published: list[tuple[bool, str]]) -> BotHealth:
    return BotHealth(lambda ok, detail: published.append((ok, detail)), 0.01, 0.05)


@pytest.mark.anyio
async def test_a_failed_update_is_read_again_from_the_stored_offset(
    telegram: FakeTelegramApi, api: BotApi
) -> None:
    """The handler fails once (the store is down): the offset stays, the update comes again."""
    state, handled, published = MemoryState(), [], []
    failures = iter([True])

    async def handle(update: dict[str, Any], cursor: Cursor | None) -> None:
        assert cursor is not None
        message = platform_message(update)
        assert message is not None
        if message.text == "second" and next(failures, False):
            raise DaemonUnavailable("the store is down")
        handled.append(message.text)
        await state.put_state(cursor.key, cursor.value)  # committed with its event

    for text in ("first", "second", "third"):
        last = telegram.user_says(OWNER, text)
    poller = UpdatePoller(api, state, KEY, handle, health_log(published), timeout_s=5)
    async with anyio.create_task_group() as group:
        group.start_soon(poller.run)
        await telegram.until(lambda: len(handled) == 3)
        group.cancel_scope.cancel()
    assert handled == ["first", "second", "third"]
    assert state.values[KEY] == str(last["update_id"] + 1)
    assert any(not ok and "handling an update" in detail for ok, detail in published)
    assert published[-1][0]  # working again


@pytest.mark.anyio
async def test_polling_backs_off_while_telegram_is_down_and_stays_up(
    telegram: FakeTelegramApi, api: BotApi
) -> None:
    """getUpdates failing (502): health says so, the poller retries, then reads on."""
    state, handled, published = MemoryState(), [], []

    async def handle(update: dict[str, Any], cursor: Cursor | None) -> None:
        handled.append(update["update_id"])

    telegram.fail("down", methods={"getUpdates"})
    poller = UpdatePoller(api, state, KEY, handle, health_log(published), timeout_s=5)
    async with anyio.create_task_group() as group:
        group.start_soon(poller.run)
        await telegram.until(lambda: len(telegram.calls) >= 3)
        telegram.recover()
        telegram.user_says(OWNER, "back")
        await telegram.until(lambda: len(handled) == 1)
        group.cancel_scope.cancel()
    assert any(not ok and "getUpdates failing" in detail for ok, detail in published)
    assert published[-1][0]


@pytest.fixture
async def webhook() -> AsyncIterator[tuple[httpx.AsyncClient, list[Any]]]:
    handled: list[Any] = []

    async def handle(update: dict[str, Any], cursor: Cursor | None) -> None:
        if update.get("message", {}).get("text") == "while stopping":
            raise DaemonUnavailable("the daemon is stopping", retry_after_s=3)
        handled.append(update)

    receiver = WebhookReceiver("s3cret-token", handle)
    app = Starlette(routes=[Route("/hook", receiver.handle, methods=["POST"])])
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://daemon") as client:
        yield client, handled


@pytest.mark.anyio
async def test_the_webhook_refuses_what_is_not_an_update_from_telegram(
    webhook: tuple[httpx.AsyncClient, list[Any]],
) -> None:
    """Wrong secret 401, not an Update 400, too big 413; only the real one is handled."""
    client, handled = webhook
    good = {SECRET_HEADER: "s3cret-token"}
    update = {"update_id": 7, "message": {"text": "hi"}}
    assert (
        await client.post("/hook", json=update, headers={SECRET_HEADER: "s3cret"})
    ).status_code == 401
    assert (await client.post("/hook", content=b"[1, 2]", headers=good)).status_code == 400
    assert (await client.post("/hook", content=b"{", headers=good)).status_code == 400
    big = b'{"update_id": 1, "x": "' + b"a" * (1024 * 1024) + b'"}'
    assert (await client.post("/hook", content=big, headers=good)).status_code == 413
    assert (await client.post("/hook", json=update, headers=good)).status_code == 200
    assert handled == [update]


@pytest.mark.anyio
async def test_the_webhook_asks_telegram_to_retry_while_the_daemon_cannot_take_it(
    webhook: tuple[httpx.AsyncClient, list[Any]],
) -> None:
    """503 with Retry-After: Telegram sends the update again; nothing is lost."""
    client, _ = webhook
    update = {"update_id": 8, "message": {"text": "while stopping"}}
    answer = await client.post("/hook", json=update, headers={SECRET_HEADER: "s3cret-token"})
    assert answer.status_code == 503 and answer.headers["retry-after"] == "3"
