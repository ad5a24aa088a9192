"""``POST /chat/slack/{name}/interactive``: the app's Interactivity Request URL.

Slack posts a press of a Block Kit button here, signed like Events API
requests, as a form field ``payload=<json>`` with ``type: "block_actions"``.
The checks, in order: 413 body over the cap → 401 signature → 400 not a
payload. A press of Approve/Deny under an approval notice then goes through
the chat layer's one sender check (:meth:`ChatInbound.press`): only an
allowed owner decides. The answer is 200 as soon as the decision is in the
store — Slack wants it within 3 seconds — and what the owner sees afterwards
(the notice rewritten with the decision by ``chat.update``; to anyone else,
a message only they see) is sent by the component's own task, best effort.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import anyio
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.requests import Request
from starlette.responses import Response

from wakeful.channels.chat.decisions import Decision, DecisionRequest, standing
from wakeful.channels.chat.inbound import ChatInbound
from wakeful.channels.slack.blocks import ACTIONS, decided_blocks
from wakeful.channels.slack.client import SlackClient
from wakeful.channels.slack.signing import SignatureError, SlackSignature
from wakeful.core.approvals import DecideOutcome
from wakeful.core.front_door import DaemonUnavailable
from wakeful.core.outbox.channels import NeverDeliverable, TryLater
from wakeful.kernel.http.body import read_capped
from wakeful.kernel.http.errors import ApiError
from wakeful.store.base import StoreUnavailable

log = structlog.get_logger(__name__)

MAX_BODY_BYTES = 256 * 1024  # a block_actions payload carries the message: a few KiB
NOT_YOURS = "Only the owner can decide this."
FEEDBACK_QUEUE = 64


@dataclass(frozen=True)
class ButtonPress:
    """An Approve/Deny press, from a ``block_actions`` payload."""

    user_id: str
    request: DecisionRequest
    channel: str
    message_ts: str
    message_text: str  # the notice's mrkdwn, as Slack has it
    thread_ts: str | None


@dataclass(frozen=True)
class _Feedback:
    press: ButtonPress
    text: str  # an ephemeral line, or the standing decision
    rewrite: bool  # True: chat.update the notice; False: tell the presser alone


class BadPayload(Exception):
    """Not an interaction payload; the message says what is missing."""


def parse_press(body: bytes) -> ButtonPress | None:
    """The approval button press in ``body``; None for any other interaction."""
    try:
        fields = parse_qs(body.decode("utf-8"), strict_parsing=True)
        payload = json.loads(fields["payload"][0])
    except (UnicodeDecodeError, ValueError, KeyError):
        raise BadPayload(
            "the body is not a form with a JSON `payload` field; Slack's interactivity "
            "requests post one"
        ) from None
    if not isinstance(payload, dict):
        raise BadPayload("`payload` is not a JSON object")
    if payload.get("type") != "block_actions":
        return None
    user, actions = payload.get("user"), payload.get("actions")
    container, message = payload.get("container") or {}, payload.get("message") or {}
    if not (isinstance(user, dict) and isinstance(actions, list) and actions):
        raise BadPayload("a block_actions payload needs `user` and `actions`")
    action = actions[0]
    if not isinstance(action, dict) or action.get("action_id") not in ACTIONS:
        return None
    value = action.get("value")
    channel = container.get("channel_id") or (payload.get("channel") or {}).get("id")
    ts = container.get("message_ts") or message.get("ts")
    if not (isinstance(value, str) and value and isinstance(user.get("id"), str)):
        raise BadPayload("an approval button press needs `user.id` and the action's `value`")
    if not (isinstance(channel, str) and isinstance(ts, str)):
        raise BadPayload("a button press needs the message's channel and ts (`container`)")
    decision: Decision = "approve" if action["action_id"] == "approve" else "deny"
    text = message.get("text")
    thread_ts = message.get("thread_ts")
    return ButtonPress(
        user_id=user["id"],
        request=DecisionRequest(decision, value),
        channel=channel,
        message_ts=ts,
        message_text=text if isinstance(text, str) else "",
        thread_ts=thread_ts if isinstance(thread_ts, str) else None,
    )


class SlackInteractions:
    """One Slack app's interactivity request URL, and the feedback sent after it."""

    def __init__(
        self,
        name: str,
        signature: SlackSignature,
        inbound: ChatInbound,
        client: SlackClient,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.name = name
        # presses / presses_refused / _ignored / _not_allowed / _decided / _already, for
        # /api/status beside the Events API's figures
        self.counts: Counter[str] = Counter()
        self._signature = signature
        self._inbound = inbound
        self._client = client
        self._clock = clock
        send, receive = anyio.create_memory_object_stream[_Feedback](FEEDBACK_QUEUE)
        self._send: MemoryObjectSendStream[_Feedback] = send
        self._receive: MemoryObjectReceiveStream[_Feedback] = receive

    async def handle(self, request: Request) -> Response:
        self.counts["presses"] += 1
        body = await read_capped(request, MAX_BODY_BYTES)
        headers = {k.lower(): v for k, v in request.headers.items()}
        try:
            self._signature.verify(headers, body, self._clock())
        except SignatureError as exc:
            self.counts["presses_refused"] += 1
            log.warning("slack interaction refused", app=self.name, why=str(exc))
            raise ApiError(401, str(exc)) from None
        try:
            press = parse_press(body)
        except BadPayload as exc:
            raise ApiError(400, str(exc)) from None
        if press is None:
            self.counts["presses_ignored"] += 1
            return Response(status_code=200)
        try:
            result = await self._inbound.press(press.user_id, press.request)
        except (DaemonUnavailable, StoreUnavailable) as exc:
            raise ApiError(503, f"the daemon cannot decide now ({exc}); press again") from None
        if result is None:
            self.counts["presses_not_allowed"] += 1
            self._queue(_Feedback(press, NOT_YOURS, rewrite=False))
        elif result.approval is None or result.outcome is DecideOutcome.UNKNOWN:
            self._queue(_Feedback(press, result.line, rewrite=False))
        else:
            self.counts[f"presses_{result.outcome.value}"] += 1
            self._queue(_Feedback(press, standing(result.approval), rewrite=True))
        return Response(status_code=200)

    def _queue(self, feedback: _Feedback) -> None:
        try:
            self._send.send_nowait(feedback)
        except anyio.WouldBlock:  # far behind: the decision stands, the notice keeps its buttons
            log.warning("slack feedback queue full; a notice is not updated", app=self.name)

    async def send_feedback(self) -> None:
        """Runs in the component's task group: chat.update / chat.postEphemeral."""
        async for feedback in self._receive:
            press = feedback.press
            try:
                if feedback.rewrite:
                    blocks = decided_blocks(press.message_text, feedback.text)
                    text = f"{press.message_text}\n\n{feedback.text}".strip()
                    await self._client.update_message(press.channel, press.message_ts, text, blocks)
                else:
                    await self._client.post_ephemeral(
                        press.channel, press.user_id, feedback.text, press.thread_ts
                    )
            except (TryLater, NeverDeliverable) as exc:
                log.info("slack button feedback failed", app=self.name, error=str(exc))

    def stats(self) -> dict[str, Any]:
        return dict(self.counts)
