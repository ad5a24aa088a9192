"""The Cloud API's sending side: ``POST /{version}/{phone-number-id}/messages``.

Text messages (4,096 characters at most), interactive reply-button messages
for approval notices (a body of at most 1,024 characters, up to three buttons
with titles of at most 20), template messages (outside the 24-hour window),
and "read" receipts with a typing indicator.

Graph API errors are ``{"error": {"code": …, "message": …, "error_data":
{"details": …}}}``; :func:`sorted_error` sorts them into the outbox's kinds:
try later (rate limits — 130429 throughput, 131056 the same recipient too
often, 4 / 80007 call limits, HTTP 429 — and Meta's own trouble) or never
deliverable (refused tokens, bad recipients), with :class:`WindowClosed` for
131047: more than 24 hours since the user last wrote. The access token goes
only into the Authorization header, never into a URL, a log line or an error.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import httpx
import structlog

from wakeful.core.outbox.channels import NeverDeliverable, TryLater

log = structlog.get_logger(__name__)

MAX_TEXT_CHARS = 4096  # text.body
MAX_BUTTON_BODY_CHARS = 1024  # interactive.body.text
TIMEOUT = httpx.Timeout(15.0, connect=5.0)

# Throughput (130429), pair rate (131056: one recipient written to too often), the
# app's or the account's call limits (4, 80007).
RATE_LIMIT_CODES = frozenset({4, 80007, 130429, 131056})
# Meta's side: unknown (1), service (2), something went wrong (131000), service
# unavailable (131016), server temporarily unavailable (133004).
TRANSIENT_CODES = frozenset({1, 2, 131000, 131016, 133004})
# The token: authentication (0), expired or invalid (190), permission (10, 200-299).
CREDENTIAL_CODES = frozenset({0, 10, 190, *range(200, 300)})
PAIR_RATE_CODE = 131056
WINDOW_CLOSED_CODE = 131047  # "re-engagement message": >24 h since the user wrote
# WhatsApp documents about one message every 6 s to one user; its 131056 carries no wait.
PAIR_RATE_WAIT_S = 6.0
RATE_WAIT_S = 2.0

APPROVE, DENY = "approve", "deny"


class WindowClosed(NeverDeliverable):
    """131047: only a template may be sent until the user writes again."""


class PairRateLimited(TryLater):
    """131056: too many messages to this one user; others may be written to meanwhile."""


class BadCredentials(NeverDeliverable):
    """The access token was refused: every send fails the same way until it is replaced."""


def button_id(decision: str, approval_id: str) -> str:
    """A reply button's id: ``approve:<id>`` / ``deny:<id>`` (at most 256 characters)."""
    return f"{decision}:{approval_id}"


def sorted_error(what: str, response: httpx.Response) -> NeverDeliverable | TryLater:
    """The outbox's kind of failure for a Graph API answer that is not 2xx."""
    error = _error_of(response)
    code = error.get("code") if isinstance(error.get("code"), int) else None
    message = str(error.get("message") or f"HTTP {response.status_code}")
    details = (
        (error.get("error_data") or {}).get("details")
        if isinstance(error.get("error_data"), dict)
        else None
    )
    if code is not None and f"#{code}" not in message:
        message = f"(#{code}) {message}"
    said = message + (f" ({details})" if details and details not in message else "")
    status = response.status_code
    if status == 429 or code in RATE_LIMIT_CODES:
        kind = PairRateLimited if code == PAIR_RATE_CODE else TryLater
        wait = _retry_after_s(response) or (
            PAIR_RATE_WAIT_S if code == PAIR_RATE_CODE else RATE_WAIT_S
        )
        return kind(f"WhatsApp {what}: rate limited: {said}", retry_after_s=wait)
    if status >= 500 or code in TRANSIENT_CODES:
        return TryLater(f"WhatsApp {what}: {said}")
    if code == WINDOW_CLOSED_CODE:
        return WindowClosed(f"WhatsApp {what}: {said}")
    if status == 401 or code in CREDENTIAL_CODES:
        return BadCredentials(
            f"WhatsApp {what}: the access token was refused: {said}; put a valid System User "
            "token (whatsapp_business_messaging) in access_token_file and restart"
        )
    return NeverDeliverable(f"WhatsApp {what}: refused: {said}")


def _error_of(response: httpx.Response) -> dict[str, Any]:
    try:
        answer = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    error = answer.get("error") if isinstance(answer, dict) else None
    return error if isinstance(error, dict) else {}


def _retry_after_s(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after", "").strip()
    return float(value) if value.isdigit() else None


# The component's health: None after a call that worked, else what failed.
Report = Callable[[NeverDeliverable | TryLater | None], None]


class WhatsAppClient:
    """A :class:`PlatformClient` for one business phone number."""

    max_chars = MAX_TEXT_CHARS
    resend_safe = False  # the messages endpoint has no idempotency key: a repeat posts twice

    def __init__(
        self,
        api_base: str,
        version: str,
        phone_number_id: str,
        token: str,
        http: httpx.AsyncClient,
        report: Report,
    ) -> None:
        self._number_url = f"{api_base.rstrip('/')}/{version}/{phone_number_id}"
        self._headers = {"Authorization": f"Bearer {token}"}
        self._http = http
        self._report = report
        self._resume_at = 0.0  # monotonic: a rate limit's wait, not yet passed
        # wa_id → the user's latest message id: a typing indicator is set on a message
        self.latest_inbound: dict[str, str] = {}
        self.sent = 0

    async def request(
        self, what: str, method: str, url: str, *, report: bool = True, **kwargs: Any
    ) -> dict[str, Any]:
        """One Graph API call; TryLater / NeverDeliverable when it failed (see sorted_error).
        ``report``: tell the component's health how it went."""
        try:
            response = await self._http.request(
                method, url, headers=self._headers, timeout=TIMEOUT, **kwargs
            )
        except httpx.HTTPError as exc:
            # The exception's text names the URL only: the token is in a header.
            failure: NeverDeliverable | TryLater = TryLater(
                f"WhatsApp {what}: {type(exc).__name__}: {exc}"
            )
        else:
            if response.is_success:
                try:
                    answer = response.json()
                except (json.JSONDecodeError, UnicodeDecodeError):
                    answer = {}
                if report:
                    self._report(None)
                return answer if isinstance(answer, dict) else {}
            failure = sorted_error(what, response)
        # A number-wide limit holds every send back; a pair limit only that user's message.
        held = isinstance(failure, TryLater) and not isinstance(failure, PairRateLimited)
        if held and isinstance(failure, TryLater) and failure.retry_after_s is not None:
            self._resume_at = time.monotonic() + failure.retry_after_s
        if report:
            self._report(failure)
        raise failure

    async def check_credentials(self) -> dict[str, Any]:
        """The phone number's name and number: proves the token and the ID are right."""
        params = {"fields": "display_phone_number,verified_name"}
        return await self.request(
            "checking the phone number", "GET", self._number_url, report=False, params=params
        )

    async def _post(self, what: str, payload: dict[str, Any]) -> dict[str, Any]:
        left = self._resume_at - time.monotonic()
        if left > 0:  # asked to wait: fail fast rather than ask Meta again
            raise TryLater(f"WhatsApp asked to wait: retry after {left:.0f} s", retry_after_s=left)
        body = {"messaging_product": "whatsapp", **payload}
        answer = await self.request(what, "POST", f"{self._number_url}/messages", json=body)
        return answer

    async def _send(self, what: str, to: str, payload: dict[str, Any]) -> None:
        await self._post(what, {"recipient_type": "individual", "to": to, **payload})
        self.sent += 1

    async def send_text(self, address: str, text: str, *, ref: str = "") -> None:
        """``text`` as WhatsApp's own formatting. (``ref`` is unused: no idempotency key.)"""
        body = {"body": to_whatsapp(text), "preview_url": False}
        await self._send("sending a message", address, {"type": "text", "text": body})

    async def send_approval_notice(
        self, address: str, text: str, approval_id: str, *, ref: str = ""
    ) -> None:
        """The notice with Approve / Deny reply buttons. A button message's body holds
        1,024 characters: a longer notice goes as text, the buttons under a short line."""
        body = to_whatsapp(text)
        if len(body) > MAX_BUTTON_BODY_CHARS:
            await self.send_text(address, text)
            body = f"Approve or deny {approval_id}?"
        buttons = [
            {"type": "reply", "reply": {"id": button_id(APPROVE, approval_id), "title": "Approve"}},
            {"type": "reply", "reply": {"id": button_id(DENY, approval_id), "title": "Deny"}},
        ]
        interactive = {"type": "button", "body": {"text": body}, "action": {"buttons": buttons}}
        await self._send(
            "sending an approval notice",
            address,
            {"type": "interactive", "interactive": interactive},
        )

    async def send_template(self, address: str, name: str, language: str) -> None:
        template = {"name": name, "language": {"code": language}}
        await self._send(
            f"sending template {name!r}", address, {"type": "template", "template": template}
        )

    async def send_typing(self, address: str) -> None:
        """Marks the user's latest message read and shows "typing…" (25 s, or until we
        write); best effort. WhatsApp sets it on a received message, so none without one."""
        message_id = self.latest_inbound.get(address)
        if message_id is None or time.monotonic() < self._resume_at:
            return
        payload = {"status": "read", "message_id": message_id, "typing_indicator": {"type": "text"}}
        await self._post("showing typing", payload)


def to_whatsapp(markdown: str) -> str:
    """Markdown → WhatsApp's formatting (*bold*, _italic_, ~strike~, ```mono```).

    Never longer than its input, so a piece split at the limit stays within it.
    """
    lines = []
    fenced = False
    for line in markdown.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            lines.append(line)
            continue
        if fenced:
            lines.append(line)
            continue
        lines.append(_inline(_heading(line)))
    return "\n".join(lines)


def _heading(line: str) -> str:
    stripped = line.lstrip("#")
    level = len(line) - len(stripped)
    if 1 <= level <= 6 and stripped.startswith(" ") and stripped.strip():
        return f"*{stripped.strip()}*"  # "# x" → "*x*": never longer
    return line


def _inline(line: str) -> str:
    out: list[str] = []
    i = 0
    in_code = False
    while i < len(line):
        if line[i] == "`":
            in_code = not in_code
            out.append("`")
            i += 1
            continue
        if not in_code:
            pair = line[i : i + 2]
            if pair in ("**", "__"):
                out.append("*" if pair == "**" else "_")
                i += 2
                continue
            if pair == "~~":
                out.append("~")
                i += 2
                continue
        out.append(line[i])
        i += 1
    return "".join(out)
