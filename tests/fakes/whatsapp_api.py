"""A fake WhatsApp Cloud API (the Graph API's messaging endpoints) and Meta's signed webhook.

:class:`FakeGraphApi` is a real HTTP server on loopback (uvicorn in a thread)
answering, with the shapes Meta documents:

* ``GET /{version}/{phone-number-id}`` — the number's ``display_phone_number``
  and ``verified_name``;
* ``POST /{version}/{phone-number-id}/messages`` — ``messaging_product:
  whatsapp`` with ``type`` text (body ≤ 4,096), interactive ``button`` (body ≤
  1,024, 1-3 reply buttons, titles ≤ 20, unique ids) or template (an approved
  name), answered ``{"messaging_product", "contacts", "messages": [{"id":
  "wamid…"}]}``; and ``status: read`` (with an optional ``typing_indicator``)
  for a message the user sent, answered ``{"success": true}``.

Errors are Graph API errors, ``{"error": {"message", "type", "code",
"error_data": {"messaging_product", "details"}, "fbtrace_id"}}``: 190 for a
token it does not know (HTTP 401), 100 for a bad parameter, 131047 for a
non-template message more than 24 hours after the user last wrote (the fake
knows when from :class:`WebhookSender`), 132001 for an unknown template; and
on demand 130429 (throughput), 131056 (pair rate) or HTTP 503 (down).

:class:`WebhookSender` is a user writing: it builds the notification Meta
posts to the Callback URL (``object: whatsapp_business_account`` → entry →
changes → value with metadata, contacts, messages), signs it with the app
secret (``X-Hub-Signature-256: sha256=HMAC-SHA256(body)``) and posts it; like
Meta, it re-sends a delivery that was not answered 200.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio.to_thread
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.loopback_http import LoopbackHttpServer, ServesWhileOpen

ACCESS_TOKEN = "EAAGtestTOKEN0123456789abcdefZZ"
APP_SECRET = "6fd2c4b1e0a9d8c7b6a5f4e3d2c1b0a9"
VERIFY_TOKEN = "wakeful-verify-7c1e"
PHONE_NUMBER_ID = "106540352242922"
DISPLAY_NUMBER = "15550783881"
WABA_ID = "102290129340398"
VERSION = "v23.0"
WINDOW_S = 24 * 3600
Failure = Literal["down", "throughput", "pair_rate"]


@dataclass(frozen=True)
class Sent:
    """One message the fake accepted."""

    to: str
    type: str  # text | interactive | template
    body: dict[str, Any]
    message_id: str
    received_at: float = field(default_factory=time.monotonic)  # benchmarks' clock

    @property
    def text(self) -> str:
        if self.type == "text":
            return str(self.body["text"]["body"])
        if self.type == "interactive":
            return str(self.body["interactive"]["body"]["text"])
        return f"[template {self.body['template']['name']}]"

    @property
    def buttons(self) -> list[tuple[str, str]]:
        """(id, title) of each reply button."""
        if self.type != "interactive":
            return []
        return [
            (b["reply"]["id"], b["reply"]["title"])
            for b in self.body["interactive"]["action"]["buttons"]
        ]


@dataclass
class _Failures:
    script: list[Failure] = field(default_factory=list)
    mode: Failure = "down"
    until: float = 0.0

    def take(self) -> Failure | None:
        if self.script:
            return self.script.pop(0)
        if time.monotonic() < self.until:
            return self.mode
        return None


class FakeGraphApi(ServesWhileOpen):
    """``https://graph.facebook.com`` on loopback, for one business number."""

    def __init__(
        self, token: str = ACCESS_TOKEN, templates: frozenset[str] = frozenset({"reply_waiting"})
    ) -> None:
        self.token = token
        self.templates = templates
        self.sent: list[Sent] = []
        self.attempts: list[dict[str, Any]] = []  # every POST to /messages, failed or not
        self.reads: list[dict[str, Any]] = []  # every accepted "status: read" body
        # wa_id → when the user last wrote (WebhookSender tells it): the 24-hour window
        self.last_inbound: dict[str, float] = {}
        self.inbound_ids: set[str] = set()
        self._failures = _Failures()
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        base = f"/{VERSION}/{PHONE_NUMBER_ID}"
        self.app = Starlette(
            routes=[
                Route(base, self._number, methods=["GET"]),
                Route(f"{base}/messages", self._messages, methods=["POST"]),
            ]
        )
        self._http = LoopbackHttpServer(self.app, "fake Graph API")
        self.port: int = self._http.port

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- scripting ----------------------------------------------------------

    def fail_next(self, *modes: Failure) -> None:
        with self._cond:
            self._failures = _Failures(list(modes))

    def fail_for(self, seconds: float, mode: Failure = "down") -> None:
        with self._cond:
            self._failures = _Failures(mode=mode, until=time.monotonic() + seconds)

    def user_wrote(self, wa_id: str, message_id: str, at: float) -> None:
        with self._cond:
            self.last_inbound[wa_id] = max(at, self.last_inbound.get(wa_id, 0.0))
            self.inbound_ids.add(message_id)

    def wait_for(self, count: int, timeout_s: float = 10.0) -> list[Sent]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.sent) >= count, timeout_s):
                raise TimeoutError(f"{len(self.sent)} messages after {timeout_s} s, not {count}")
            return list(self.sent)

    async def await_sent(self, count: int, timeout_s: float = 10.0) -> list[Sent]:
        return await anyio.to_thread.run_sync(
            self.wait_for, count, timeout_s, abandon_on_cancel=True
        )

    async def until(self, condition: Any, timeout_s: float = 10.0, what: str = "condition") -> None:
        """Until ``condition()`` holds, from async code, without blocking its event loop."""

        def wait() -> None:
            with self._cond:
                if not self._cond.wait_for(condition, timeout_s):
                    raise TimeoutError(f"{what} not reached within {timeout_s} s")

        await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)

    def snapshot(self) -> list[Sent]:
        with self._cond:
            return list(self.sent)

    # --- the Graph API ------------------------------------------------------

    def _authorized(self, request: Request) -> bool:
        return request.headers.get("authorization") == f"Bearer {self.token}"

    async def _number(self, request: Request) -> Response:
        if not self._authorized(request):
            return _token_error()
        return JSONResponse(
            {
                "verified_name": "Wakeful Test",
                "display_phone_number": DISPLAY_NUMBER,
                "id": PHONE_NUMBER_ID,
            }
        )

    async def _messages(self, request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except json.JSONDecodeError:
            return _error(100, "Invalid parameter", "the body is not JSON")
        with self._cond:
            self.attempts.append(body)
            # Scripted failures hit sends only: a typing indicator must not take one.
            failure = self._failures.take() if "to" in body else None
            self._cond.notify_all()
        if failure == "down":
            return Response("Service Unavailable", status_code=503)
        if failure == "throughput":
            return _error(
                130429, "Rate limit hit", "Cloud API message throughput has been reached."
            )
        if failure == "pair_rate":
            return _error(
                131056,
                "(Business Account, Consumer Account) pair rate limit hit",
                "Message failed to send because there were too many messages sent "
                "from this phone number to the same phone number in a short period "
                "of time.",
            )
        if not self._authorized(request):
            return _token_error()
        if body.get("messaging_product") != "whatsapp":
            return _error(100, "Invalid parameter", "messaging_product must be whatsapp")
        if body.get("status") == "read":
            return self._read(body)
        return self._send(body)

    def _read(self, body: dict[str, Any]) -> Response:
        if body.get("message_id") not in self.inbound_ids:
            return _error(100, "Invalid parameter", "message_id is not a received message")
        indicator = body.get("typing_indicator")
        if indicator is not None and indicator != {"type": "text"}:
            return _error(100, "Invalid parameter", "typing_indicator.type must be text")
        with self._cond:
            self.reads.append(body)
            self._cond.notify_all()
        return JSONResponse({"success": True})

    def _send(self, body: dict[str, Any]) -> Response:
        to, kind = body.get("to"), body.get("type", "text")
        if not isinstance(to, str) or not to.lstrip("+").isdigit():
            return _error(100, "Invalid parameter", "to must be a phone number")
        problem = _invalid(kind, body, self.templates)
        if problem is not None:
            code, title, details = problem
            return _error(code, title, details)
        last = self.last_inbound.get(to.lstrip("+"))
        if kind != "template" and (last is None or time.time() - last > WINDOW_S):
            return _error(
                131047,
                "Re-engagement message",
                "Message failed to send because "
                "more than 24 hours have passed since the customer last replied to "
                "this number.",
            )
        message_id = f"wamid.OUT{next(self._ids):08d}"
        with self._cond:
            self.sent.append(Sent(to.lstrip("+"), kind, body, message_id))
            self._cond.notify_all()
        return JSONResponse(
            {
                "messaging_product": "whatsapp",
                "contacts": [{"input": to, "wa_id": to.lstrip("+")}],
                "messages": [{"id": message_id, "message_status": "accepted"}],
            }
        )

    # --- lifecycle ----------------------------------------------------------

    def start(self) -> FakeGraphApi:
        self._http.start()
        return self

    def close(self) -> None:
        self._http.close()


def _invalid(
    kind: object, body: dict[str, Any], templates: frozenset[str]
) -> tuple[int, str, str] | None:
    """What Meta would refuse in a message of ``kind``, per its documented limits."""
    if kind == "text":
        text = (body.get("text") or {}).get("body")
        if not isinstance(text, str) or not 1 <= len(text) <= 4096:
            return 100, "Invalid parameter", "text.body must be 1-4096 characters"
        return None
    if kind == "interactive":
        part = body.get("interactive") or {}
        text = (part.get("body") or {}).get("text")
        buttons = (part.get("action") or {}).get("buttons")
        if part.get("type") != "button" or not isinstance(text, str):
            return 100, "Invalid parameter", "interactive.type button needs body.text"
        if not 1 <= len(text) <= 1024:
            return 100, "Invalid parameter", "interactive.body.text must be 1-1024 characters"
        if not isinstance(buttons, list) or not 1 <= len(buttons) <= 3:
            return 100, "Invalid parameter", "action.buttons must hold 1-3 buttons"
        replies = [b.get("reply") or {} for b in buttons if b.get("type") == "reply"]
        ids = [str(r.get("id", "")) for r in replies]
        if len(replies) != len(buttons) or len(set(ids)) != len(ids):
            return 100, "Invalid parameter", "buttons must be reply buttons with unique ids"
        for reply in replies:
            if (
                not 1 <= len(str(reply.get("title", ""))) <= 20
                or not 1 <= len(str(reply.get("id", ""))) <= 256
            ):
                return 100, "Invalid parameter", "a button title is 1-20 characters, an id 1-256"
        return None
    if kind == "template":
        template = body.get("template") or {}
        language = (template.get("language") or {}).get("code")
        if template.get("name") not in templates or not language:
            return (
                132001,
                "Template name does not exist in the translation",
                ("template name or language does not exist"),
            )
        return None
    return 100, "Invalid parameter", f"type {kind!r} is not supported by this fake"


def _error(code: int, title: str, details: str, status: int = 400) -> Response:
    return JSONResponse(
        {
            "error": {
                "message": f"(#{code}) {title}",
                "type": "OAuthException",
                "code": code,
                "error_data": {"messaging_product": "whatsapp", "details": details},
                "fbtrace_id": "AbCdEfGhIjKlMnOpQrStUvW",
            }
        },
        status_code=status,
    )


def _token_error() -> Response:
    return JSONResponse(
        {
            "error": {
                "message": "Invalid OAuth access token - Cannot parse access token",
                "type": "OAuthException",
                "code": 190,
                "fbtrace_id": "AbCdEfGhIjKlMnOpQrStUvW",
            }
        },
        status_code=401,
    )


# --- the webhook: what Meta posts to the Callback URL ------------------------


def hub_signature(secret: str, body: bytes) -> str:
    """``X-Hub-Signature-256`` exactly as Meta computes it (independent of wakeful's code)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def notification(
    *messages: dict[str, Any],
    statuses: list[dict[str, Any]] | None = None,
    names: dict[str, str] | None = None,
    phone_number_id: str = PHONE_NUMBER_ID,
) -> dict[str, Any]:
    """The ``messages`` field notification holding ``messages`` (and ``statuses``)."""
    value: dict[str, Any] = {
        "messaging_product": "whatsapp",
        "metadata": {"display_phone_number": DISPLAY_NUMBER, "phone_number_id": phone_number_id},
    }
    senders = sorted({m["from"] for m in messages})
    if senders:
        value["contacts"] = [
            {"profile": {"name": (names or {}).get(s, f"User {s[-4:]}")}, "wa_id": s}
            for s in senders
        ]
        value["messages"] = list(messages)
    if statuses:
        value["statuses"] = statuses
    return {
        "object": "whatsapp_business_account",
        "entry": [{"id": WABA_ID, "changes": [{"value": value, "field": "messages"}]}],
    }


_inbound_ids = itertools.count(1)


def text_message(
    text: str, *, sender: str, message_id: str | None = None, at: float | None = None
) -> dict[str, Any]:
    return {
        "from": sender,
        "id": message_id or f"wamid.IN{time.time_ns()}{next(_inbound_ids):06d}",
        "timestamp": str(int(time.time() if at is None else at)),
        "type": "text",
        "text": {"body": text},
    }


def button_reply(
    sent: Sent, button: str, *, sender: str, message_id: str | None = None
) -> dict[str, Any]:
    """``sender`` pressing the reply button with id ``button`` under ``sent``."""
    [(button_id, title)] = [b for b in sent.buttons if b[0] == button]
    return {
        "context": {"from": DISPLAY_NUMBER, "id": sent.message_id},
        "from": sender,
        "id": message_id or f"wamid.IN{time.time_ns()}{next(_inbound_ids):06d}",
        "timestamp": str(int(time.time())),
        "type": "interactive",
        "interactive": {"type": "button_reply", "button_reply": {"id": button_id, "title": title}},
    }


def failed_status(sent: Sent, code: int, title: str) -> dict[str, Any]:
    return {
        "id": sent.message_id,
        "status": "failed",
        "timestamp": str(int(time.time())),
        "recipient_id": sent.to,
        "errors": [
            {"code": code, "title": title, "message": title, "error_data": {"details": title}}
        ],
    }


class WebhookSender:
    """Posts signed notifications to an app's Callback URL; tells the fake API who wrote."""

    def __init__(self, url: str, api: FakeGraphApi | None = None, secret: str = APP_SECRET):
        self.url = url
        self.api = api
        self.secret = secret

    def request(
        self, document: dict[str, Any], *, secret: str | None = None, signed: bool = True
    ) -> tuple[bytes, dict[str, str]]:
        if self.api is not None:
            for entry in document["entry"]:
                for change in entry["changes"]:
                    for message in change["value"].get("messages", []):
                        at = float(message["timestamp"])
                        self.api.user_wrote(message["from"], message["id"], at)
        body = json.dumps(document, separators=(",", ":")).encode()
        headers = {"Content-Type": "application/json", "User-Agent": "facebookexternalua"}
        if signed:
            headers["X-Hub-Signature-256"] = hub_signature(secret or self.secret, body)
        return body, headers

    def deliver(self, document: dict[str, Any], **options: Any) -> httpx.Response:
        body, headers = self.request(document, **options)
        return httpx.post(self.url, content=body, headers=headers, timeout=10.0)

    async def adeliver(
        self, client: httpx.AsyncClient, document: dict[str, Any], **options: Any
    ) -> httpx.Response:
        body, headers = self.request(document, **options)
        return await client.post(self.url, content=body, headers=headers, timeout=10.0)

    def deliver_until_acked(
        self, document: dict[str, Any], *, timeout_s: float = 30.0, pause_s: float = 0.05
    ) -> int:
        """Re-send until the app answers 200; the number of sends. (Meta retries for up
        to 7 days, backing off; this keeps trying, faster, until ``timeout_s``.)"""
        deadline = time.monotonic() + timeout_s
        for attempt in itertools.count():
            body, headers = self.request(document)
            try:
                response = httpx.post(self.url, content=body, headers=headers, timeout=5.0)
            except httpx.HTTPError:
                pass  # refused, reset or timed out: the app is down
            else:
                if response.status_code == 200:
                    return attempt + 1
            if time.monotonic() > deadline:
                raise TimeoutError(f"no 200 after {attempt + 1} sends")
            time.sleep(pause_s)  # Meta's own backoff, scaled down; nothing to wait on here
        raise AssertionError("unreachable")
