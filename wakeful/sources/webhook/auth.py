"""Who may post to a hook: Standard Webhooks, GitHub's signature, or a bearer token.

Every check runs on the raw body bytes, before anything parses them, and
compares in constant time. Each verifier holds every configured key at
once, so a sender's secret can rotate without a window of rejected
deliveries. Messages say what was wrong, never what was expected.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from typing import Protocol

# Standard Webhooks: a delivery older or newer than this is refused as a replay.
TOLERANCE_S = 5 * 60
MAX_TIMESTAMP_DIGITS = 12
WHSEC_PREFIX = "whsec_"
MIN_KEY_BYTES, MAX_KEY_BYTES = 24, 64


class AuthError(Exception):
    """The delivery is not authentic; the message is safe to return to the sender."""


class Verifier(Protocol):
    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> None:
        """Return if the delivery is authentic, else raise :class:`AuthError`."""
        ...


def standard_key(secret: str) -> bytes:
    """A Standard Webhooks secret (``whsec_`` + base64) as HMAC key bytes.

    Raises ValueError saying what is wrong with it (never echoing it).
    """
    text = secret.strip().removeprefix(WHSEC_PREFIX)
    try:
        # Senders often drop the base64 padding; the reference library accepts that too.
        key = base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(
            "a Standard Webhooks secret is base64 after the whsec_ prefix "
            "(e.g. whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw); copy it exactly as the sender shows it"
        ) from None
    if not MIN_KEY_BYTES <= len(key) <= MAX_KEY_BYTES:
        raise ValueError(
            f"a Standard Webhooks secret must decode to {MIN_KEY_BYTES}-{MAX_KEY_BYTES} bytes "
            f"(this one has {len(key)}); e.g. 'whsec_' + the base64 of 32 random bytes"
        )
    return key


class StandardWebhooks:
    """``webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`` (space-separated)."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        self._keys = tuple(keys)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> None:
        names = ("webhook-id", "webhook-timestamp", "webhook-signature")
        missing = [name for name in names if not headers.get(name)]
        if missing:
            raise AuthError(
                f"missing header(s) {', '.join(missing)}; a Standard Webhooks delivery "
                "carries webhook-id, webhook-timestamp and webhook-signature"
            )
        msg_id, stamp, signatures = (headers[name] for name in names)
        _check_timestamp(stamp, now)
        # Starlette decodes headers as latin-1, so this recovers the bytes on the wire.
        signed = b".".join((msg_id.encode("latin-1"), stamp.encode("latin-1"), body))
        # hmac.new, not hmac.digest: the one-shot releases the GIL around every HMAC, and
        # under load getting it back from the store's thread cost more than the HMAC itself.
        expected = [hmac.new(key, signed, hashlib.sha256).digest() for key in self._keys]
        for given in _v1_signatures(signatures):
            if _matches_any(given, expected):
                return
        raise AuthError("no signature in webhook-signature matches this hook's secret(s)")


def _check_timestamp(stamp: str, now: float) -> None:
    if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= MAX_TIMESTAMP_DIGITS):
        raise AuthError("webhook-timestamp must be whole seconds since the Unix epoch")
    if abs(now - int(stamp)) > TOLERANCE_S:
        raise AuthError(
            "webhook-timestamp is more than 5 minutes away from the server's clock "
            "(a stale or replayed delivery, or a clock out of sync)"
        )


def _v1_signatures(header: str) -> list[bytes]:
    found = []
    for item in header.split():
        version, _, value = item.partition(",")
        if version != "v1":  # other schemes (e.g. v1a, asymmetric) are not ours to check
            continue
        try:
            found.append(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):
            continue
    return found


def _matches_any(given: bytes, expected: Sequence[bytes]) -> bool:
    # Check every key, not just until the first match, so timing says nothing of which.
    results = [hmac.compare_digest(given, candidate) for candidate in expected]
    return any(results)


class GitHubSignature:
    """``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>``."""

    def __init__(self, keys: Sequence[bytes]) -> None:
        self._keys = tuple(keys)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> None:
        header = headers.get("x-hub-signature-256")
        if not header:
            raise AuthError(
                "missing header X-Hub-Signature-256; set a secret on the GitHub webhook "
                "(the SHA-1 X-Hub-Signature is not accepted)"
            )
        scheme, _, digest = header.strip().partition("=")
        if scheme != "sha256" or not digest:
            raise AuthError("X-Hub-Signature-256 must look like sha256=<64 hex digits>")
        given = digest.lower().encode("latin-1")
        expected = [
            hmac.new(key, body, hashlib.sha256).hexdigest().encode("ascii") for key in self._keys
        ]
        if not _matches_any(given, expected):
            raise AuthError("X-Hub-Signature-256 does not match this hook's secret(s)")


class BearerToken:
    """``Authorization: Bearer <token>``, one of the hook's secrets."""

    def __init__(self, tokens: Sequence[bytes]) -> None:
        self._tokens = tuple(tokens)

    def verify(self, headers: Mapping[str, str], body: bytes, now: float) -> None:
        scheme, _, token = headers.get("authorization", "").strip().partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise AuthError("missing or malformed Authorization header; send 'Bearer <token>'")
        if not _matches_any(token.strip().encode("latin-1"), self._tokens):
            raise AuthError("the bearer token is not one of this hook's tokens")


def make_verifier(auth: str, secrets: Sequence[str]) -> Verifier:
    """The verifier for ``auth`` over every secret; ValueError names a bad secret's fault."""
    if auth == "standard":
        return StandardWebhooks([standard_key(secret) for secret in secrets])
    keys = [secret.encode("utf-8") for secret in secrets]
    if auth == "github":
        return GitHubSignature(keys)
    if auth == "bearer":
        return BearerToken(keys)
    raise ValueError(f"unknown auth scheme {auth!r}; use standard, github or bearer")
