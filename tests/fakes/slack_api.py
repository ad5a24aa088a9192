"""A fake Slack: the Web API methods wakeful calls, and Events API requests signed as Slack signs.

:class:`FakeSlackApi` is a real HTTP server on loopback (uvicorn in a thread,
like the fake model server) answering ``auth.test`` and ``chat.postMessage``
with the shapes Slack documents: HTTP 200 and ``{"ok": true, ...}`` or
``{"ok": false, "error": "..."}``; HTTP 429 with ``Retry-After`` when rate
limited. It records every post, and can fail for a while (down: HTTP 503;
rate limited) to test retries. For approval notices it also checks Block Kit
``blocks`` (section, actions with buttons, context; Slack's length limits →
``invalid_blocks``) and answers ``chat.update`` (of a message the bot posted;
``message_not_found`` otherwise) and ``chat.postEphemeral``.

:func:`block_actions_payload` and :class:`SlackInteractionSender` are a
person pressing a button: the ``block_actions`` payload Slack posts to the
app's Interactivity Request URL, form-encoded and signed.

:class:`SlackEventSender` builds Events API envelopes, signs them with the
app's signing secret (``v0=HMAC-SHA256("v0:{timestamp}:{body}")``) and posts
them; like Slack, it re-sends a delivery that was not acknowledged with
``X-Slack-Retry-Num`` / ``X-Slack-Retry-Reason``.
"""

from __future__ import annotations

import hashlib
import hmac
import itertools
import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode

import anyio.to_thread
import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tests.fakes.loopback_http import LoopbackHttpServer, ServesWhileOpen

BOT_TOKEN = "xoxb-test-0000000000-0000000000000-abcdefghijklmnopqrstuvwx"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
BOT_USER_ID = "UBOT000001"
BOT_ID = "BBOT000001"
TEAM_ID = "T00000001"
Failure = Literal["down", "ratelimited"]


@dataclass(frozen=True)
class Post:
    """One ``chat.postMessage`` call that Slack accepted."""

    channel: str
    text: str
    thread_ts: str | None
    ts: str
    body: dict[str, Any]
    authorization: str

    @property
    def address(self) -> str:
        return f"{self.channel}/{self.thread_ts}" if self.thread_ts else self.channel


@dataclass
class _Failures:
    script: list[Failure] = field(default_factory=list)  # the next calls fail as these
    mode: Failure = "down"
    until: float = 0.0  # then: every call fails as `mode` until this monotonic time
    retry_after_s: int = 1

    def take(self) -> Failure | None:
        if self.script:
            return self.script.pop(0)
        if time.monotonic() < self.until:
            return self.mode
        return None


@dataclass
class _Workspace:
    """What the fake knows: channels that exist, channels the bot is not in."""

    missing_channels: set[str] = field(default_factory=set)
    not_in: set[str] = field(default_factory=set)


class FakeSlackApi(ServesWhileOpen):
    """``https://slack.com/api`` on loopback: ``auth.test`` and ``chat.postMessage``."""

    def __init__(self, token: str = BOT_TOKEN) -> None:
        self.token = token
        self.posts: list[Post] = []
        self.attempts: list[dict[str, Any]] = []  # every chat.postMessage body, failed or not
        self.workspace = _Workspace()
        # (channel, ts) → the message as it stands now: {"text", "blocks"} (chat.update edits it)
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.updates: list[dict[str, Any]] = []  # every accepted chat.update body
        self.ephemerals: list[dict[str, Any]] = []  # every accepted chat.postEphemeral body
        # Cleared: chat.update calls wait (a slow Slack) until it is set again.
        self.update_gate = threading.Event()
        self.update_gate.set()
        self._failures = _Failures()
        self._ts = itertools.count(1)
        self._cond = threading.Condition()
        self.app = Starlette(
            routes=[
                Route("/api/auth.test", self._auth_test, methods=["POST", "GET"]),
                Route("/api/chat.postMessage", self._post_message, methods=["POST"]),
                Route("/api/chat.update", self._update, methods=["POST"]),
                Route("/api/chat.postEphemeral", self._post_ephemeral, methods=["POST"]),
            ]
        )
        self._http = LoopbackHttpServer(self.app, "fake Slack API")
        self.port: int = self._http.port

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    # --- scripting ----------------------------------------------------------

    def fail_next(self, *modes: Failure, retry_after_s: int = 1) -> None:
        """The next chat.postMessage calls fail, one per mode given, in order."""
        with self._cond:
            self._failures = _Failures(list(modes), retry_after_s=retry_after_s)

    def fail_for(self, seconds: float, mode: Failure = "down", retry_after_s: int = 1) -> None:
        """Every chat.postMessage call fails as ``mode`` for ``seconds`` from now."""
        with self._cond:
            until = time.monotonic() + seconds
            self._failures = _Failures(mode=mode, until=until, retry_after_s=retry_after_s)

    def wait_for_posts(self, count: int, timeout_s: float = 10.0) -> list[Post]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.posts) >= count, timeout_s):
                raise TimeoutError(f"{len(self.posts)} posts after {timeout_s} s, not {count}")
            return list(self.posts)

    def wait_for_attempts(self, count: int, timeout_s: float = 10.0) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.attempts) >= count, timeout_s):
                raise TimeoutError(f"{len(self.attempts)} attempts after {timeout_s} s")

    async def await_posts(self, count: int, timeout_s: float = 10.0) -> list[Post]:
        return await anyio.to_thread.run_sync(
            self.wait_for_posts, count, timeout_s, abandon_on_cancel=True
        )

    def posts_snapshot(self) -> list[Post]:
        with self._cond:
            return list(self.posts)

    def message(self, post: Post) -> dict[str, Any]:
        """``post`` as it stands now (after any chat.update)."""
        with self._cond:
            return dict(self.messages[(post.channel, post.ts)])

    async def until(self, condition: Any, timeout_s: float = 10.0, what: str = "condition") -> None:
        """Until ``condition()`` holds, from async code, without blocking its event loop."""

        def wait() -> None:
            with self._cond:
                if not self._cond.wait_for(condition, timeout_s):
                    raise TimeoutError(f"{what} not reached within {timeout_s} s")

        await anyio.to_thread.run_sync(wait, abandon_on_cancel=True)

    # --- the Web API --------------------------------------------------------

    def _auth_error(self, request: Request) -> str | None:
        header = request.headers.get("authorization", "")
        if not header:
            return "not_authed"
        if header != f"Bearer {self.token}":
            return "invalid_auth"
        return None

    async def _auth_test(self, request: Request) -> Response:
        error = self._auth_error(request)
        if error:
            return _answer({"ok": False, "error": error})
        return _answer(
            {
                "ok": True,
                "url": "https://wakeful-test.slack.com/",
                "team": "wakeful test",
                "user": "wakeful",
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
        )

    async def _post_message(self, request: Request) -> Response:
        body = await _arguments(request)
        with self._cond:
            self.attempts.append(body)
            failure = self._failures.take()
            retry_after = self._failures.retry_after_s
            self._cond.notify_all()
        if failure == "down":
            return Response("upstream unavailable", status_code=503)
        if failure == "ratelimited":
            headers = {"Retry-After": str(retry_after)}
            return _answer({"ok": False, "error": "ratelimited"}, 429, headers)
        error = self._auth_error(request) or self._post_error(body)
        if error:
            return _answer({"ok": False, "error": error})
        return _answer(self._accept(body, request.headers["authorization"]))

    def _post_error(self, body: dict[str, Any]) -> str | None:
        channel = body.get("channel")
        if not isinstance(channel, str) or not channel:
            return "channel_not_found"
        if channel in self.workspace.missing_channels:
            return "channel_not_found"
        if channel in self.workspace.not_in:
            return "not_in_channel"
        if not body.get("text") and not body.get("blocks"):
            return "no_text"
        if "blocks" in body and not _valid_blocks(body["blocks"]):
            return "invalid_blocks"
        return None

    async def _update(self, request: Request) -> Response:
        body = await _arguments(request)
        await anyio.to_thread.run_sync(self.update_gate.wait, 10.0, abandon_on_cancel=True)
        error = self._auth_error(request)
        key = (str(body.get("channel", "")), str(body.get("ts", "")))
        if not error:
            if "blocks" in body and not _valid_blocks(body["blocks"]):
                error = "invalid_blocks"
            elif not body.get("text") and not body.get("blocks"):
                error = "no_text"
        with self._cond:
            if not error and key not in self.messages:
                error = "message_not_found"
            if error:
                return _answer({"ok": False, "error": error})
            self.messages[key] = {"text": body.get("text", ""), "blocks": body.get("blocks")}
            self.updates.append(body)
            self._cond.notify_all()
        return _answer({"ok": True, "channel": key[0], "ts": key[1], "text": body.get("text")})

    async def _post_ephemeral(self, request: Request) -> Response:
        body = await _arguments(request)
        error = self._auth_error(request)
        if not error and not (body.get("user") and body.get("channel")):
            error = "user_not_in_channel" if body.get("channel") else "channel_not_found"
        if not error and not body.get("text"):
            error = "no_text"
        if error:
            return _answer({"ok": False, "error": error})
        with self._cond:
            self.ephemerals.append(body)
            self._cond.notify_all()
        return _answer({"ok": True, "message_ts": f"{time.time():.6f}"})

    def _accept(self, body: dict[str, Any], authorization: str) -> dict[str, Any]:
        ts = f"{int(time.time())}.{next(self._ts):06d}"
        thread_ts = body.get("thread_ts") or None
        post = Post(body["channel"], str(body.get("text", "")), thread_ts, ts, body, authorization)
        with self._cond:
            self.posts.append(post)
            self.messages[(post.channel, ts)] = {"text": post.text, "blocks": body.get("blocks")}
            self._cond.notify_all()
        message: dict[str, Any] = {
            "type": "message",
            "subtype": "bot_message",
            "text": post.text,
            "ts": ts,
            "user": BOT_USER_ID,
            "bot_id": BOT_ID,
        }
        if thread_ts:
            message["thread_ts"] = thread_ts
        return {"ok": True, "channel": post.channel, "ts": ts, "message": message}

    # --- lifecycle ----------------------------------------------------------

    def start(self) -> FakeSlackApi:
        self._http.start()
        return self

    def close(self) -> None:
        self._http.close()


def _valid_blocks(blocks: Any) -> bool:
    """The Block Kit wakeful sends, held to Slack's documented limits."""
    if not isinstance(blocks, list) or not 1 <= len(blocks) <= 50:
        return False
    for block in blocks:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "section":
            text = block.get("text") or {}
            if text.get("type") not in ("mrkdwn", "plain_text"):
                return False
            if not 1 <= len(str(text.get("text", ""))) <= 3000:
                return False
        elif kind == "actions":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 1 <= len(elements) <= 25:
                return False
            if not all(_valid_button(element) for element in elements):
                return False
        elif kind == "context":
            if not isinstance(block.get("elements"), list) or not block["elements"]:
                return False
        else:
            return False
    return True


def _valid_button(element: Any) -> bool:
    if not isinstance(element, dict) or element.get("type") != "button":
        return False
    text = element.get("text") or {}
    return (
        text.get("type") == "plain_text"
        and 1 <= len(str(text.get("text", ""))) <= 75
        and 1 <= len(str(element.get("action_id", ""))) <= 255
        and len(str(element.get("value", ""))) <= 2000
        and element.get("style") in (None, "primary", "danger")
    )


def buttons(post: Post) -> list[tuple[str, str, str]]:
    """(action_id, value, label) of every button in ``post``'s blocks."""
    return [
        (element["action_id"], element.get("value", ""), element["text"]["text"])
        for block in post.body.get("blocks") or []
        if block.get("type") == "actions"
        for element in block["elements"]
    ]


async def _arguments(request: Request) -> dict[str, Any]:
    """Slack takes JSON (``application/json``) or form-encoded arguments."""
    raw = await request.body()
    if request.headers.get("content-type", "").startswith("application/json"):
        parsed = json.loads(raw or b"{}")
        return parsed if isinstance(parsed, dict) else {}
    return dict(parse_qsl(raw.decode("utf-8")))


def _answer(
    body: dict[str, Any], status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return JSONResponse(body, status_code=status, headers=headers)


# --- Events API: what Slack posts to the app --------------------------------


def slack_signature(secret: str, timestamp: str, body: bytes) -> str:
    """``X-Slack-Signature`` exactly as Slack computes it (independent of wakeful's code)."""
    base = f"v0:{timestamp}:".encode() + body
    return "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()


def message_envelope(
    text: str,
    *,
    user: str = "U0OWNER01",
    channel: str = "D0DM00001",
    channel_type: str = "im",
    thread_ts: str | None = None,
    ts: str | None = None,
    event_type: str = "message",
    event_id: str | None = None,
    **event_fields: Any,
) -> dict[str, Any]:
    """An ``event_callback`` envelope for one message, shaped like Slack's."""
    now = time.time()
    event: dict[str, Any] = {
        "type": event_type,
        "user": user,
        "text": text,
        "ts": ts or f"{now:.6f}",
        "channel": channel,
        "event_ts": ts or f"{now:.6f}",
        "channel_type": channel_type,
        **event_fields,
    }
    if event_type == "app_mention":
        del event["channel_type"]  # Slack sends none on app_mention
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return {
        "token": "legacy-verification-token",
        "team_id": TEAM_ID,
        "api_app_id": "A0APP00001",
        "event": event,
        "type": "event_callback",
        "event_id": event_id or f"Ev{uuid.uuid4().hex[:10].upper()}",
        "event_time": int(now),
        "authorizations": [{"team_id": TEAM_ID, "user_id": BOT_USER_ID, "is_bot": True}],
    }


def url_verification(challenge: str) -> dict[str, Any]:
    return {
        "token": "legacy-verification-token",
        "challenge": challenge,
        "type": "url_verification",
    }


class SlackEventSender:
    """Posts signed Events API requests to an app's request URL, retrying as Slack does."""

    def __init__(self, url: str, secret: str = SIGNING_SECRET) -> None:
        self.url = url
        self.secret = secret

    def request(
        self,
        envelope: dict[str, Any],
        *,
        retry_num: int = 0,
        retry_reason: str = "http_timeout",
        timestamp: float | None = None,
        secret: str | None = None,
    ) -> tuple[bytes, dict[str, str]]:
        """The body and headers Slack would send."""
        body = json.dumps(envelope, separators=(",", ":")).encode()
        stamp = str(int(time.time() if timestamp is None else timestamp))
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": slack_signature(secret or self.secret, stamp, body),
        }
        if retry_num:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = retry_reason
        return body, headers

    def deliver(self, envelope: dict[str, Any], **options: Any) -> httpx.Response:
        body, headers = self.request(envelope, **options)
        return httpx.post(self.url, content=body, headers=headers, timeout=10.0)

    async def adeliver(
        self, client: httpx.AsyncClient, envelope: dict[str, Any], **options: Any
    ) -> httpx.Response:
        body, headers = self.request(envelope, **options)
        return await client.post(self.url, content=body, headers=headers, timeout=10.0)

    def deliver_until_acked(
        self, envelope: dict[str, Any], *, timeout_s: float = 30.0, pause_s: float = 0.05
    ) -> int:
        """Re-send until the app answers 200 within Slack's 3 s; the number of sends.

        Slack gives up after 3 retries over 5 minutes; this keeps trying (faster)
        until ``timeout_s``, so a daemon that is down for a while still gets it.
        """
        deadline = time.monotonic() + timeout_s
        reason = "http_timeout"
        for attempt in itertools.count():
            body, headers = self.request(envelope, retry_num=attempt, retry_reason=reason)
            try:
                response = httpx.post(self.url, content=body, headers=headers, timeout=3.0)
            except httpx.TimeoutException:
                reason = "http_timeout"
            except httpx.HTTPError:
                reason = "connection_failed"  # refused or reset: the app is down
            else:
                if response.status_code == 200:
                    return attempt + 1
                reason = "http_error"
            if time.monotonic() > deadline:
                raise TimeoutError(f"no 200 for {envelope['event_id']} after {attempt + 1} sends")
            time.sleep(pause_s)  # Slack's own backoff, scaled down; nothing to wait on here
        raise AssertionError("unreachable")


# --- Interactivity: what Slack posts when a button is pressed ---------------


def block_actions_payload(post: Post, action_id: str, *, user: str = "U0OWNER01") -> dict[str, Any]:
    """The ``block_actions`` payload of ``user`` pressing button ``action_id`` of ``post``."""
    [(_, value, _label)] = [b for b in buttons(post) if b[0] == action_id]
    now = f"{time.time():.6f}"
    message: dict[str, Any] = {
        "type": "message",
        "subtype": "bot_message",
        "text": post.text,
        "ts": post.ts,
        "bot_id": BOT_ID,
        "blocks": post.body.get("blocks"),
    }
    if post.thread_ts:
        message["thread_ts"] = post.thread_ts
    return {
        "type": "block_actions",
        "user": {"id": user, "username": "owner", "name": "owner", "team_id": TEAM_ID},
        "api_app_id": "A0APP00001",
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": post.ts,
            "channel_id": post.channel,
            "is_ephemeral": False,
        },
        "trigger_id": f"{int(time.time())}.0000000001.abcdef",
        "team": {"id": TEAM_ID, "domain": "wakeful-test"},
        "channel": {"id": post.channel, "name": "directmessage"},
        "message": message,
        "response_url": "https://hooks.slack.com/actions/T00000001/1/abcdef",
        "actions": [
            {
                "action_id": action_id,
                "block_id": f"approval:{value}",
                "text": {"type": "plain_text", "text": action_id.title()},
                "value": value,
                "type": "button",
                "action_ts": now,
            }
        ],
    }


class SlackInteractionSender:
    """Posts signed interactivity requests (``payload=<json>``, form-encoded) to an app."""

    def __init__(self, url: str, secret: str = SIGNING_SECRET) -> None:
        self.url = url
        self.secret = secret

    def request(
        self, payload: dict[str, Any], *, secret: str | None = None
    ) -> tuple[bytes, dict[str, str]]:
        body = urlencode({"payload": json.dumps(payload, separators=(",", ":"))}).encode()
        stamp = str(int(time.time()))
        headers = {
            "Content-Type": "application/x-www-form-urlencoded",
            "User-Agent": "Slackbot 1.0 (+https://api.slack.com/robots)",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": slack_signature(secret or self.secret, stamp, body),
        }
        return body, headers

    async def adeliver(
        self, client: httpx.AsyncClient, payload: dict[str, Any], **options: Any
    ) -> httpx.Response:
        body, headers = self.request(payload, **options)
        return await client.post(self.url, content=body, headers=headers, timeout=10.0)
