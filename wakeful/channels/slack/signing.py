"""Slack's ``v0`` request signatures, checked on the raw body before anything parses it.

Slack signs ``v0:{X-Slack-Request-Timestamp}:{body}`` with HMAC-SHA256 under the
app's signing secret and sends ``X-Slack-Signature: v0=<hex>``. A request whose
timestamp is more than five minutes from our clock is refused as a replay, as
Slack's documentation asks. Messages say what was wrong, never what was expected.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping

TOLERANCE_S = 5 * 60
VERSION = "v0"
TIMESTAMP_HEADER = "x-slack-request-timestamp"
SIGNATURE_HEADER = "x-slack-signature"
MAX_TIMESTAMP_DIGITS = 12


class SignatureError(Exception):
    """The request is not from Slack (or is stale); the message is safe to answer with."""


def sign(secret: bytes, timestamp: str, body: bytes) -> str:
    """The ``X-Slack-Signature`` value Slack sends for ``body`` at ``timestamp``."""
    base = b":".join((VERSION.encode(), timestamp.encode("ascii"), body))
    return f"{VERSION}=" + hmac.new(secret, base, hashlib.sha256).hexdigest()


class SlackSignature:
    """Verifies one app's requests with its signing secret."""

    def __init__(self, secret: str) -> None:
        self._secret = secret.encode("utf-8")

    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> None:
        """Return if the request is Slack's and fresh, else raise :class:`SignatureError`."""
        stamp = headers.get(TIMESTAMP_HEADER, "")
        given = headers.get(SIGNATURE_HEADER, "")
        if not stamp or not given:
            raise SignatureError(
                "missing X-Slack-Request-Timestamp or X-Slack-Signature; "
                "only Slack's signed Events API requests are accepted here"
            )
        if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= MAX_TIMESTAMP_DIGITS):
            raise SignatureError("X-Slack-Request-Timestamp must be whole seconds since the epoch")
        if abs(now - int(stamp)) > TOLERANCE_S:
            raise SignatureError(
                "X-Slack-Request-Timestamp is more than 5 minutes from the server's clock "
                "(a stale or replayed request, or a clock out of sync)"
            )
        expected = sign(self._secret, stamp, body)
        # Starlette decodes headers as latin-1: this recovers the bytes on the wire.
        if not hmac.compare_digest(given.strip().encode("latin-1"), expected.encode("ascii")):
            raise SignatureError(
                "X-Slack-Signature does not match this app's signing secret "
                "(check signing_secret_file: Basic Information → Signing Secret)"
            )
