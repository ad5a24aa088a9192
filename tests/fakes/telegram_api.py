"""A fake Telegram Bot API on real HTTP (loopback), for tests and benchmarks.

It follows the documented shapes: ``POST /bot<token>/<method>`` with a JSON
body; answers ``{"ok": true, "result": ...}`` or ``{"ok": false,
"error_code", "description", "parameters": {"retry_after"}}``. Methods:
getMe, getUpdates (offset, limit, timeout long poll, allowed_updates; an
update is forgotten once a call passes an offset beyond it), sendMessage
(parse_mode HTML checked like Telegram does: unknown tags, unbalanced tags
or a bare ``<``/``&`` → 400 "can't parse entities"; more than 4096
characters after parsing → 400; ``reply_markup`` with an inline keyboard
checked and kept), sendChatAction, setWebhook, deleteWebhook,
answerCallbackQuery (once per query, as Telegram allows), editMessageText and
editMessageReplyMarkup (of a message the bot sent; 400 "message is not
modified" when nothing changes). ``allowed_updates`` (getUpdates,
setWebhook) is honoured: an update of a kind not asked for is never made.

People are simulated with :meth:`FakeTelegramApi.user_says` and, for a
button under a bot's message, :meth:`FakeTelegramApi.user_presses` (a
``callback_query`` update): the update is
queued for getUpdates or, with a webhook set, POSTed to it with the secret
token (retried until answered 2xx, as Telegram does). Everything sent is
recorded; :meth:`fail` makes methods fail (502 "down", 429 with
retry_after, 500) until :meth:`recover`.

    with FakeTelegramApi() as telegram:
        telegram.user_says(42, "hello")
        telegram.wait_for_sent(1)
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread
import httpx
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, Scope

from tests.fakes.loopback_http import LoopbackHttpServer, ServesWhileOpen
from tests.fakes.model_server import _read_body
from tests.fakes.telegram_entities import CannotParse, visible_text

TOKEN = "123456:fake-telegram-bot-token-ABCdef"
BOT_USER = {"id": 123456, "is_bot": True, "first_name": "Wakeful", "username": "wakeful_bot"}
MAX_TEXT = 4096
_PATH = re.compile(r"^/bot([^/]+)/([A-Za-z]+)$")
Failure = Literal["down", "429", "500"]


@dataclass
class SentMessage:
    chat_id: int | str
    text: str
    parse_mode: str | None
    message_id: int
    received_at: float  # time.monotonic()
    reply_markup: dict[str, Any] | None = None  # as last sent or edited
    edits: int = 0

    @property
    def buttons(self) -> list[tuple[str, str]]:
        """(text, callback_data) of its inline keyboard, row by row."""
        rows = (self.reply_markup or {}).get("inline_keyboard") or []
        return [(b["text"], b.get("callback_data", "")) for row in rows for b in row]

    @property
    def visible(self) -> str:
        return visible_text(self.text) if self.parse_mode == "HTML" else self.text


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    status: int
    at: float


@dataclass
class _FailureMode:
    kind: Failure
    methods: frozenset[str] | None
    retry_after: int


@dataclass
class _Webhook:
    url: str
    secret_token: str | None
    statuses: list[int] = field(default_factory=list)


class ApiError(Exception):
    def __init__(self, code: int, description: str, retry_after: int | None = None) -> None:
        super().__init__(description)
        self.code, self.description, self.retry_after = code, description, retry_after


class FakeTelegramApi(ServesWhileOpen):
    """One bot's Bot API; state is guarded by one condition shared with waiting tests."""

    def __init__(self, token: str = TOKEN) -> None:
        self.token = token
        self.updates: list[dict[str, Any]] = []  # not yet confirmed
        self.sent: list[SentMessage] = []
        self.actions: list[tuple[int | str, str, float]] = []
        self.calls: list[Call] = []
        self.get_updates_offsets: list[int | None] = []
        self.blocked_chats: set[int] = set()
        self.known_chats: set[int] = set()
        self.webhook: _Webhook | None = None
        self.allowed_updates: list[str] | None = None  # None: Telegram's default (all we use)
        self.callback_answers: dict[str, str] = {}  # callback query id → the text shown
        self.dropped_updates = 0  # of kinds the bot did not ask for
        self._queries: set[str] = set()  # callback query ids handed out
        self._failure: _FailureMode | None = None
        self._ids = itertools.count(1)
        self._message_ids = itertools.count(1000)
        self._cond = threading.Condition()
        self._closing = False
        self._long_polls = 0  # getUpdates calls waiting: close() lets them answer first
        self._http = LoopbackHttpServer(self, "fake Telegram Bot API")
        self.port: int = self._http.port
        self._threads: list[threading.Thread] = []
        self._pusher: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- what people do ----------------------------------------------------

    def user_says(
        self,
        user_id: int,
        text: str | None,
        *,
        chat_id: int | None = None,
        username: str = "owner",
        is_bot: bool = False,
    ) -> dict[str, Any]:
        """A private message from ``user_id`` (its chat id is the user id unless given);
        ``text=None``: a message without text (a sticker)."""
        chat = chat_id if chat_id is not None else user_id
        with self._cond:
            update = {
                "update_id": 500_000 + next(self._ids),
                "message": {
                    "message_id": next(self._message_ids),
                    "from": {
                        "id": user_id,
                        "is_bot": is_bot,
                        "first_name": username.title(),
                        "username": username,
                    },
                    "chat": {"id": chat, "type": "private" if chat == user_id else "group"},
                    "date": int(time.time()),
                    **({"text": text} if text is not None else {"sticker": {"emoji": "👍"}}),
                },
            }
            self.known_chats.add(chat)
            self.updates.append(update)
            self._cond.notify_all()
        return update

    def user_presses(
        self, user_id: int, message: SentMessage, data: str, *, username: str = "owner"
    ) -> dict[str, Any]:
        """``user_id`` presses the inline button with ``data`` under ``message``: a
        ``callback_query`` update (made only if the bot asked for such updates)."""
        with self._cond:
            update = {
                "update_id": 500_000 + next(self._ids),
                "callback_query": {
                    "id": f"cq{next(self._ids)}",
                    "from": {
                        "id": user_id,
                        "is_bot": False,
                        "first_name": username.title(),
                        "username": username,
                    },
                    "message": {
                        "message_id": message.message_id,
                        "from": BOT_USER,
                        "chat": {"id": message.chat_id, "type": "private"},
                        "date": int(time.time()),
                        "text": message.visible,
                        **({"reply_markup": message.reply_markup} if message.reply_markup else {}),
                    },
                    "chat_instance": f"ci{message.chat_id}",
                    "data": data,
                },
            }
            if self.allowed_updates is not None and "callback_query" not in self.allowed_updates:
                self.dropped_updates += 1
            else:
                self._queries.add(update["callback_query"]["id"])
                self.updates.append(update)
            self._cond.notify_all()
        return update

    # --- failing on purpose ------------------------------------------------

    def fail(self, kind: Failure, *, methods: set[str] | None = None, retry_after: int = 1) -> None:
        """Make ``methods`` (all when None) fail as ``kind`` until :meth:`recover`."""
        with self._cond:
            self._failure = _FailureMode(kind, frozenset(methods) if methods else None, retry_after)

    def recover(self) -> None:
        with self._cond:
            self._failure = None

    # --- waiting ------------------------------------------------------------

    def wait_for(self, condition: Any, timeout_s: float = 10.0, what: str = "condition") -> None:
        with self._cond:
            if not self._cond.wait_for(condition, timeout_s):
                raise TimeoutError(f"{what} not reached within {timeout_s} s")

    def wait_for_sent(self, n: int, timeout_s: float = 10.0) -> list[SentMessage]:
        self.wait_for(
            lambda: len(self.sent) >= n, timeout_s, f"{n} sent messages ({len(self.sent)})"
        )
        with self._cond:
            return list(self.sent)

    async def until(self, condition: Any, timeout_s: float = 10.0, what: str = "condition") -> None:
        """:meth:`wait_for` from async code, without blocking its event loop."""
        await anyio.to_thread.run_sync(
            self.wait_for, condition, timeout_s, what, abandon_on_cancel=True
        )

    async def await_sent(self, n: int, timeout_s: float = 10.0) -> list[SentMessage]:
        return await anyio.to_thread.run_sync(
            self.wait_for_sent, n, timeout_s, abandon_on_cancel=True
        )

    def sent_to(self, chat_id: int) -> list[SentMessage]:
        with self._cond:
            return [m for m in self.sent if m.chat_id == chat_id]

    # --- ASGI ---------------------------------------------------------------

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http":
            return
        raw = await _read_body(receive)
        match = _PATH.match(scope["path"])
        try:
            if scope["method"] != "POST" or match is None:
                raise ApiError(404, "Not Found")
            if match.group(1) != self.token:
                raise ApiError(401, "Unauthorized")
            method = match.group(2)
            params = json.loads(raw) if raw else {}
            self._maybe_fail(method)
            result = await self._dispatch(method, params)
        except ApiError as exc:
            await self._answer(send, scope, exc.code, _error_body(exc))
            return
        except _Down:
            await _send(send, 502, b"<html><body>502 Bad Gateway</body></html>", b"text/html")
            return
        await self._answer(send, scope, 200, {"ok": True, "result": result})

    async def _answer(
        self, send: ASGISendCallable, scope: Scope, status: int, body: dict[str, Any]
    ) -> None:
        await _send(send, status, json.dumps(body).encode(), b"application/json")

    def _maybe_fail(self, method: str) -> None:
        with self._cond:
            failure = self._failure
        if failure is None or (failure.methods is not None and method not in failure.methods):
            return
        self._record(method, {}, 502 if failure.kind == "down" else int(failure.kind))
        if failure.kind == "down":
            raise _Down
        if failure.kind == "429":
            raise ApiError(429, f"Too Many Requests: retry after {failure.retry_after}",
                           failure.retry_after)  # fmt: skip
        raise ApiError(500, "Internal Server Error")

    async def _dispatch(self, method: str, params: dict[str, Any]) -> Any:
        if method == "getUpdates":
            return await self._get_updates(params)
        handlers = {
            "getMe": lambda _p: dict(BOT_USER),
            "sendMessage": self._send_message,
            "sendChatAction": self._send_chat_action,
            "setWebhook": self._set_webhook,
            "deleteWebhook": self._delete_webhook,
            "answerCallbackQuery": self._answer_callback_query,
            "editMessageText": self._edit_message_text,
            "editMessageReplyMarkup": self._edit_message_reply_markup,
        }
        handler = handlers.get(method)
        if handler is None:
            raise ApiError(404, "Not Found: method not found")
        return handler(params)

    def _record(self, method: str, params: dict[str, Any], status: int) -> None:
        with self._cond:
            self.calls.append(Call(method, params, status, time.monotonic()))
            self._cond.notify_all()

    async def _get_updates(self, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self._cond:
            if self.webhook is not None:
                raise ApiError(409, "Conflict: can't use getUpdates method while webhook is "
                               "active; use deleteWebhook to delete the webhook first")  # fmt: skip
            offset = params.get("offset")
            self.get_updates_offsets.append(offset)
            if isinstance(params.get("allowed_updates"), list):
                self.allowed_updates = list(params["allowed_updates"])
            if isinstance(offset, int):
                self.updates = [u for u in self.updates if u["update_id"] >= offset]
            self._cond.notify_all()
        timeout = float(params.get("timeout") or 0)
        limit = int(params.get("limit") or 100)
        with self._cond:
            self._long_polls += 1
        try:
            found = await anyio.to_thread.run_sync(
                self._wait_updates, timeout, abandon_on_cancel=True
            )
        finally:
            with self._cond:
                self._long_polls -= 1
                self._cond.notify_all()
        self._record("getUpdates", params, 200)
        return found[:limit]

    def _wait_updates(self, timeout_s: float) -> list[dict[str, Any]]:
        with self._cond:
            self._cond.wait_for(lambda: bool(self.updates) or self._closing, timeout_s)
            return [json.loads(json.dumps(u)) for u in self.updates]

    def _send_message(self, params: dict[str, Any]) -> dict[str, Any]:
        chat_id, text, mode = params.get("chat_id"), params.get("text"), params.get("parse_mode")
        self._check_chat(chat_id)
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if mode not in (None, "HTML"):
            raise ApiError(400, f"Bad Request: unsupported parse_mode {mode!r} in this fake")
        try:
            shown = visible_text(text) if mode == "HTML" else text
        except CannotParse as exc:
            self._record("sendMessage", params, 400)
            raise ApiError(400, f"Bad Request: can't parse entities: {exc}") from None
        if len(shown) > MAX_TEXT:
            raise ApiError(400, "Bad Request: message is too long")
        assert isinstance(chat_id, int | str)
        markup = _inline_keyboard(params.get("reply_markup"))
        with self._cond:
            sent = SentMessage(
                chat_id, text, mode, next(self._message_ids), time.monotonic(), markup
            )
            self.sent.append(sent)
        self._record("sendMessage", params, 200)
        return {"message_id": sent.message_id, "from": BOT_USER, "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private"}, "text": shown}  # fmt: skip

    def _answer_callback_query(self, params: dict[str, Any]) -> bool:
        query_id, text = params.get("callback_query_id"), params.get("text", "")
        with self._cond:
            if query_id not in self._queries or query_id in self.callback_answers:
                raise ApiError(400, "Bad Request: query is too old and response timeout "
                               "expired or query ID is invalid")  # fmt: skip
            if not isinstance(text, str) or len(text) > 200:
                raise ApiError(400, "Bad Request: text must be at most 200 characters")
            self.callback_answers[str(query_id)] = text
        self._record("answerCallbackQuery", params, 200)
        return True

    def _edit_message_text(self, params: dict[str, Any]) -> dict[str, Any]:
        text, mode = params.get("text"), params.get("parse_mode")
        if not isinstance(text, str) or not text.strip():
            raise ApiError(400, "Bad Request: message text is empty")
        if mode not in (None, "HTML"):
            raise ApiError(400, f"Bad Request: unsupported parse_mode {mode!r} in this fake")
        markup = _inline_keyboard(params.get("reply_markup"))
        with self._cond:
            message = self._sent_message(params)
            if (message.text, message.parse_mode, message.reply_markup) == (text, mode, markup):
                raise ApiError(400, "Bad Request: message is not modified")
            message.text, message.parse_mode, message.reply_markup = text, mode, markup
            message.edits += 1
        self._record("editMessageText", params, 200)
        return {"message_id": message.message_id, "chat": {"id": message.chat_id}, "text": text}

    def _edit_message_reply_markup(self, params: dict[str, Any]) -> dict[str, Any]:
        markup = _inline_keyboard(params.get("reply_markup"))
        with self._cond:
            message = self._sent_message(params)
            if message.reply_markup == markup:
                raise ApiError(400, "Bad Request: message is not modified")
            message.reply_markup = markup
            message.edits += 1
        self._record("editMessageReplyMarkup", params, 200)
        return {"message_id": message.message_id, "chat": {"id": message.chat_id}}

    def _sent_message(self, params: dict[str, Any]) -> SentMessage:
        for message in self.sent:
            if (message.chat_id, message.message_id) == (
                params.get("chat_id"),
                params.get("message_id"),
            ):
                return message
        raise ApiError(400, "Bad Request: message to edit not found")

    def _check_chat(self, chat_id: Any) -> None:
        if chat_id in self.blocked_chats:
            raise ApiError(403, "Forbidden: bot was blocked by the user")
        if chat_id not in self.known_chats:
            raise ApiError(400, "Bad Request: chat not found")

    def _send_chat_action(self, params: dict[str, Any]) -> bool:
        chat_id, action = params.get("chat_id"), params.get("action")
        self._check_chat(chat_id)
        if action != "typing":
            raise ApiError(400, "Bad Request: wrong parameter action in request")
        with self._cond:
            self.actions.append((chat_id, action, time.monotonic()))  # type: ignore[arg-type]
        self._record("sendChatAction", params, 200)
        return True

    def _set_webhook(self, params: dict[str, Any]) -> bool:
        url, secret = params.get("url"), params.get("secret_token")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ApiError(
                400, "Bad Request: bad webhook: An HTTPS URL must be provided for webhook"
            )
        if secret is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", str(secret)):
            raise ApiError(
                400, "Bad Request: bad webhook: secret token contains unallowed characters"
            )
        with self._cond:
            self.webhook = _Webhook(url, secret)
            if isinstance(params.get("allowed_updates"), list):
                self.allowed_updates = list(params["allowed_updates"])
            self._cond.notify_all()
        if self._pusher is None or not self._pusher.is_alive():
            self._pusher = self._start_thread(self._push_webhook, "fake-telegram-webhook")
        self._record("setWebhook", params, 200)
        return True

    def _delete_webhook(self, params: dict[str, Any]) -> bool:
        with self._cond:
            self.webhook = None
            if params.get("drop_pending_updates"):
                self.updates.clear()
            self._cond.notify_all()
        self._record("deleteWebhook", params, 200)
        return True

    def _push_webhook(self) -> None:
        """Telegram's side of a webhook: POST each update in order until it is answered 2xx."""
        with httpx.Client(timeout=10) as client:
            while True:
                with self._cond:
                    self._cond.wait_for(lambda: self._closing or self.webhook is None
                                        or bool(self.updates))  # fmt: skip
                    if self._closing or self.webhook is None:
                        return
                    hook, update = self.webhook, self.updates[0]
                status = _post_update(client, hook, update)
                with self._cond:
                    hook.statuses.append(status)
                    if 200 <= status < 300 and self.updates and self.updates[0] is update:
                        self.updates.pop(0)
                    self._cond.notify_all()
                if not 200 <= status < 300:
                    time.sleep(0.05)

    # --- lifecycle ----------------------------------------------------------

    def _start_thread(self, target: Any, name: str) -> threading.Thread:
        thread = threading.Thread(target=target, name=name, daemon=True)
        self._threads.append(thread)
        thread.start()
        return thread

    def start(self) -> FakeTelegramApi:
        self._http.start()
        return self

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify_all()
            # Answered, not cut off: uvicorn logs a cancelled request as an error.
            self._cond.wait_for(lambda: self._long_polls == 0, 2.0)
        self._http.close()
        for thread in self._threads:
            thread.join(timeout=10.0)


def bot_config(fake: FakeTelegramApi, directory: Path, **overrides: Any) -> dict[str, Any]:
    """A ``[[chat.telegram]]`` entry for this fake; the token (and webhook secret) in files."""
    token_file = directory / "telegram-token"
    token_file.write_text(fake.token + "\n")
    entry: dict[str, Any] = {
        "name": "tg",
        "bot_token_file": str(token_file),
        "api_base": fake.base_url,
        "poll_timeout_s": 10,
        "retry_min_s": 0.05,
        "retry_max_s": 0.5,
    }
    if overrides.get("mode") == "webhook":
        secret_file = directory / "telegram-secret"
        secret_file.write_text("webhook-secret_0123456789abcdef\n")
        entry["secret_token_file"] = str(secret_file)
    return entry | overrides


def _inline_keyboard(markup: Any) -> dict[str, Any] | None:
    """A ``reply_markup`` as Telegram checks it: rows of buttons, each with ``text`` and
    1-64 bytes of ``callback_data`` (the only button kind wakeful sends); None if absent."""
    if markup is None:
        return None
    rows = markup.get("inline_keyboard") if isinstance(markup, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
        raise ApiError(400, "Bad Request: can't parse inline keyboard button: field "
                       "\"inline_keyboard\" of the InlineKeyboardMarkup must be an Array of "
                       "Arrays")  # fmt: skip
    for row in rows:
        for button in row:
            data = button.get("callback_data") if isinstance(button, dict) else None
            if not isinstance(button, dict) or not isinstance(button.get("text"), str):
                raise ApiError(400, "Bad Request: can't parse inline keyboard button: Text "
                               "buttons are unallowed in the inline keyboard")  # fmt: skip
            if not isinstance(data, str) or not 1 <= len(data.encode()) <= 64:
                raise ApiError(400, "Bad Request: BUTTON_DATA_INVALID")
    return {"inline_keyboard": rows}


class _Down(Exception):
    """Answer like a proxy in front of a dead Bot API: 502 with an HTML page."""


def _post_update(client: httpx.Client, hook: _Webhook, update: dict[str, Any]) -> int:
    headers = {"X-Telegram-Bot-Api-Secret-Token": hook.secret_token} if hook.secret_token else {}
    try:
        return client.post(hook.url, json=update, headers=headers).status_code
    except httpx.HTTPError:
        return 0


def _error_body(exc: ApiError) -> dict[str, Any]:
    body: dict[str, Any] = {"ok": False, "error_code": exc.code, "description": exc.description}
    if exc.retry_after is not None:
        body["parameters"] = {"retry_after": exc.retry_after}
    return body


async def _send(send: ASGISendCallable, status: int, body: bytes, content_type: bytes) -> None:
    headers = [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
