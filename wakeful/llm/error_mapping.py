"""A failed model call as one of our ProviderError kinds (wakeful/core/provider.py).

Both SDKs are generated alike (one ``APIError`` base, a connection error with
a timeout below it, a status error carrying the HTTP answer), and a stream
fails the same few ways whichever API is behind it. The mapping to
:class:`ContextTooLong`, :class:`ModelKeyRefused`, :class:`ModelUnavailable`
and plain :class:`ProviderError` (which the loop's retry, health and budget
logic tell apart) therefore lives here once. A provider says only what
differs: its SDK's exception classes, how it reads an HTTP refusal (message,
error type, whether it means "too long", whether it means "overloaded"), and
the hints its users need.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import pydantic

from wakeful.core.provider import ContextTooLong, ModelKeyRefused, ModelUnavailable, ProviderError

# What a reply that is not UTF-8, not JSON or not the event schema raises while streamed.
UNDECODABLE = (UnicodeDecodeError, json.JSONDecodeError, pydantic.ValidationError)


def _transport_modules() -> list[ModuleType]:
    # An SDK on httpx or on httpx2 (anthropic 2.x): a broken stream raises either.
    modules: list[ModuleType] = [httpx]
    try:
        import httpx2
    except ImportError:
        return modules
    modules.append(httpx2)
    return modules


# What a stream that broke after the SDK handed it over raises ...
BROKEN: tuple[type[BaseException], ...] = tuple(m.HTTPError for m in _transport_modules())
# ... and the part of it that means the server sent nothing for a whole read
# timeout ([llm] read_timeout_s, the SDK's per-read limit).
SILENT: tuple[type[BaseException], ...] = tuple(m.TimeoutException for m in _transport_modules())


def redact_url(url: str) -> str:
    """The URL without any user:password part, safe for logs and messages."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


@dataclass(frozen=True)
class SdkErrors:
    """The exception classes an SDK raises for a call."""

    api: type[Exception]  # the base of all of them
    connection: type[Exception]
    timeout: type[Exception]  # a connection error that timed out
    status: type[Exception]  # an HTTP error answer

    @classmethod
    def of(cls, sdk: ModuleType) -> SdkErrors:
        """The classes of an SDK module generated like ``openai`` (``anthropic`` is)."""
        return cls(sdk.APIError, sdk.APIConnectionError, sdk.APITimeoutError, sdk.APIStatusError)


@dataclass(frozen=True)
class Refusal:
    """An HTTP error answer as a provider reads its SDK's status error."""

    status: int
    message: str
    too_long: bool  # the API says the request exceeds the context window
    overloaded: bool = False  # the body names an overload whatever the status
    error_type: str = ""  # the body's error type, shown when the wording asks for it


@dataclass(frozen=True)
class ErrorDialect:
    """What one provider's failures look like, and what its users are told that others are not."""

    sdk: SdkErrors
    read_refusal: Callable[[Any], Refusal]  # takes an ``sdk.status`` error
    reach_hint: str  # after "cannot reach ...: timed out after 2 retries. "; may use {url}
    overloaded_hint: str
    too_long: str  # the whole message; may use {url}, {model} and {message}
    not_found_hint: str  # after "refused the request with HTTP 404: ...."
    expected_api: str  # "is [llm] base_url <this>?" for a reply that cannot be decoded
    names_error_type: bool = False  # "HTTP 529 (overloaded_error)"


class EndpointErrors:
    """One provider's translation of what its calls raise."""

    def __init__(
        self,
        dialect: ErrorDialect,
        *,
        url: str,
        model: str,
        max_retries: int,
        key_source: str,
        read_timeout_s: float,
    ) -> None:
        self._sdk = dialect.sdk
        self._read_refusal = dialect.read_refusal
        self._dialect = dialect
        self._url = url
        self._model = model
        self._retries = f"after {max_retries} retries" if max_retries else "(no retries)"
        self._key_source = key_source
        self._silence = f"[llm] read_timeout_s = {read_timeout_s:g} s"
        # Everything a streamed call may raise that is the endpoint's fault, not ours.
        self.caught: tuple[type[BaseException], ...] = (self._sdk.api, *UNDECODABLE, *BROKEN)

    def translate(self, exc: BaseException) -> ProviderError:
        """``exc`` (one of :attr:`caught`) as the error the loop acts on."""
        url = self._url
        if isinstance(exc, self._sdk.api):
            return self._api_error(exc)
        if isinstance(exc, UNDECODABLE):
            # A failed call like any other (counted toward [loop] max_consecutive_failures),
            # not a crash: the endpoint is broken, the session is not.
            return ProviderError(
                f"the model endpoint {url} sent a reply that cannot be decoded "
                f"({type(exc).__name__}: {str(exc)[:200]}); "
                f"is [llm] base_url {self._dialect.expected_api}?"
            )
        if isinstance(exc, SILENT):
            return ModelUnavailable(
                f"the model endpoint {url} went silent mid-reply for longer than "
                f"{self._silence} (the longest wait between chunks); the stream was closed"
            )
        return ModelUnavailable(
            f"the model endpoint {url} broke off its reply: {type(exc).__name__}: {exc}"
        )

    def past_deadline(self, deadline_s: float) -> ProviderError:
        """A call stopped at ``[llm] timeout_s``: the model was still talking (or retrying)."""
        return ProviderError(
            f"the model call to {self._url} did not finish within [llm] timeout_s = "
            f"{deadline_s:g} s (the whole call's deadline, retries included); the stream "
            "was closed. Raise [llm] timeout_s if replies this long are expected"
        )

    def _api_error(self, exc: Exception) -> ProviderError:
        url, retries, dialect = self._url, self._retries, self._dialect
        if isinstance(exc, self._sdk.connection):
            kind = (
                f"no answer within {self._silence}"
                if isinstance(exc, self._sdk.timeout)
                else "connection failed"
            )
            return ModelUnavailable(
                f"cannot reach the model endpoint {url}: {kind} {retries}. "
                + dialect.reach_hint.format(url=url)
            )
        if not isinstance(exc, self._sdk.status):
            message = getattr(exc, "message", str(exc))
            return ModelUnavailable(f"the model endpoint {url} failed mid-stream: {message}")
        refusal = self._read_refusal(exc)
        status, message = refusal.status, refusal.message
        if status in (401, 403):
            return ModelKeyRefused(
                f"the model endpoint {url} refused the API key (HTTP {status}); the key comes "
                f"from {self._key_source}: check it there (not retried)"
            )
        if status == 400 and refusal.too_long:
            return ContextTooLong(
                dialect.too_long.format(url=url, model=self._model, message=message)
            )
        if status in (408, 409, 429) or status >= 500 or refusal.overloaded:
            kind = f" ({refusal.error_type or 'error'})" if dialect.names_error_type else ""
            return ModelUnavailable(
                f"the model endpoint {url} answered HTTP {status}{kind} {retries}: "
                f"{message}. {dialect.overloaded_hint}"
            )
        hint = f" {dialect.not_found_hint}" if status == 404 else ""
        return ProviderError(
            f"the model endpoint {url} refused the request with HTTP {status}: {message}.{hint}"
        )
