"""Sending as the Signal account: the platform client the shared chat channel delivers through.

signal-cli's ``send`` has no idempotency key: a send repeated after a crash (it
went out, the outbox never heard) posts twice, so ``resend_safe`` is False and
the outbox marks such a message ``unknown`` instead of sending it again.

Errors are sorted the way the outbox needs them: the daemon unreachable,
Signal's servers failing (-3) or a rate limit (-5, with signal-cli's
``retryAfterSeconds``) → :class:`TryLater`; a refusal that will not change by
itself (-1: not a Signal user, not a member of the group; -4: the recipient's
safety number changed and must be trusted) → :class:`NeverDeliverable`.
"""

from __future__ import annotations

import time

import structlog

from wakeful.channels.signal.api import RATE_LIMITED, UNTRUSTED_KEY, DaemonApi, SignalError
from wakeful.channels.signal.envelopes import recipient_params
from wakeful.core.outbox.channels import NeverDeliverable, TryLater

log = structlog.get_logger(__name__)

# Signal's apps send a text longer than 2000 characters as a "long text" attachment
# shown behind "Read more"; pieces of at most 2000 arrive as ordinary messages on every
# client (and in notifications) — see docs/signal.md.
MAX_CHARS = 2000
RATE_LIMIT_DEFAULT_S = 60.0  # when signal-cli names no wait


class SignalClient:
    """``send_text`` / ``send_typing`` for one account."""

    max_chars = MAX_CHARS
    resend_safe = False  # no idempotency key: see the module's docstring

    def __init__(self, api: DaemonApi) -> None:
        self._api = api
        self._resume_at = 0.0  # monotonic: a rate limit's end, not yet passed

    async def send_text(self, address: str, text: str, *, ref: str = "") -> None:
        """Plain text (Signal renders no Markdown); ``ref`` is unused: no idempotency key."""
        left = self._resume_at - time.monotonic()
        if left > 0:
            raise TryLater(f"Signal rate limit: retry after {left:.0f} s", retry_after_s=left)
        try:
            await self._api.call("send", {**recipient_params(address), "message": text})
        except SignalError as exc:
            raise self._sorted(exc) from None

    async def send_typing(self, address: str) -> None:
        """Best effort: the typing bubble Signal's apps show for about 15 s."""
        if time.monotonic() < self._resume_at:
            return
        await self._api.call("sendTyping", recipient_params(address))

    def _sorted(self, exc: SignalError) -> TryLater | NeverDeliverable:
        if exc.code == RATE_LIMITED:
            wait_s = exc.retry_after_s or RATE_LIMIT_DEFAULT_S
            self._resume_at = time.monotonic() + wait_s
            return TryLater(f"Signal rate limit: {exc}", retry_after_s=wait_s)
        if exc.transient:
            return TryLater(f"signal-cli failed: {exc}")
        if exc.code == UNTRUSTED_KEY:
            return NeverDeliverable(
                f"Signal refused: {exc} (the recipient's safety number changed: verify it, then "
                "`signal-cli -a ACCOUNT trust -a RECIPIENT`)"
            )
        return NeverDeliverable(f"Signal refused the message: {exc}")
