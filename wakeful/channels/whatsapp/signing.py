"""Meta's webhook signatures, checked on the raw body before anything parses it.

Every POST to the webhook carries ``X-Hub-Signature-256: sha256=<hex>``, the
HMAC-SHA256 of the body under the Meta app's App Secret. The comparison is
constant-time; messages say what was wrong, never what was expected.
"""

from __future__ import annotations

import hashlib
import hmac

SIGNATURE_HEADER = "x-hub-signature-256"
PREFIX = "sha256="


class SignatureError(Exception):
    """The request is not from Meta; the message is safe to answer with."""


def sign(secret: bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` value Meta sends for ``body``."""
    return PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


class AppSignature:
    """Verifies one app's webhook POSTs with its App Secret."""

    def __init__(self, app_secret: str) -> None:
        self._secret = app_secret.encode("utf-8")

    def verify(self, given: str | None, body: bytes) -> None:
        """Return if ``given`` (the header) signs ``body``, else raise :class:`SignatureError`."""
        if not given:
            raise SignatureError(
                "missing X-Hub-Signature-256; only Meta's signed webhook requests are accepted"
            )
        expected = sign(self._secret, body)
        # Starlette decodes headers as latin-1: this recovers the bytes on the wire.
        if not hmac.compare_digest(given.strip().encode("latin-1"), expected.encode("ascii")):
            raise SignatureError(
                "X-Hub-Signature-256 does not match this app's App Secret "
                "(check app_secret_file: App settings → Basic → App Secret)"
            )
