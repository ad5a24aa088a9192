"""Structured logs: JSON lines for journald/collectors, a console view on a TTY.

One processor pipeline serves both structlog and the stdlib loggers (uvicorn,
libraries), so every line has the same shape, carries the ``event_id`` /
``session`` / ``run_id`` bound with ``structlog.contextvars.bound_contextvars``,
and passes the redactor: no secret value ever reaches the output.
"""

from __future__ import annotations

import functools
import json as jsonlib
import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, TextIO

import structlog
from structlog.typing import EventDict, Processor, WrappedLogger

REDACTED = "[REDACTED]"
SENSITIVE_KEY = re.compile(r"token|password|passwd|secret|api_?key|authorization|cookie", re.I)
# Credentials in query strings (…?token=abc) even when the value is not known.
QUERY_SECRET = re.compile(r"((?:token|password|secret|api_?key)=)[^&\s\"']+", re.I)
# Shorter "secrets" would blank out ordinary words in every line.
MIN_SECRET_LENGTH = 6
_HANDLER_NAME = "wakeful"
# Lines written once per event or delivery: under a flood they are capped (LineRateLimit).
PER_EVENT_MESSAGES = ("event routed", "duplicate event dropped", "webhook refused")
PER_EVENT_RATE_PER_S = 20.0
PER_EVENT_BURST = 100


class Redactor:
    """A processor that replaces known secret values and sensitive keys' values."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: list[str] = []
        self.add(secrets)

    def add(self, secrets: Iterable[str]) -> None:
        fresh = {s for s in secrets if s and len(s) >= MIN_SECRET_LENGTH}
        # Longest first so a secret containing another is replaced whole.
        self._secrets = sorted(fresh | set(self._secrets), key=len, reverse=True)

    def __call__(self, logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
        # Runs on every line: plain strings, most values, take the short way inline.
        scrub, value_of = self._scrub, self._value
        return {
            key: (REDACTED if _is_sensitive_key(key) else scrub(value))
            if type(value) is str
            else value_of(key, value)
            for key, value in event_dict.items()
        }

    def _value(self, key: Any, value: Any) -> Any:
        # Numbers are counts (prompt_tokens), never credentials worth hiding.
        sensitive = _is_sensitive_key(key)
        if sensitive and value is not None and not isinstance(value, bool | int | float):
            return REDACTED
        if isinstance(value, str):
            return self._scrub(value)
        if isinstance(value, MutableMapping | dict):
            return {k: self._value(k, v) for k, v in value.items()}
        if isinstance(value, list | tuple | set):
            return [self._value(None, item) for item in value]
        if isinstance(value, bool | int | float) or value is None:
            return value
        return self._scrub(str(value))

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        if "=" not in text:  # the common case: no query string to look into
            return text
        return QUERY_SECRET.sub(r"\1" + REDACTED, text)


@functools.lru_cache(maxsize=1024)
def _is_sensitive_key(key: object) -> bool:
    # Log lines reuse a small set of keys; the regex runs once per key, not per line.
    return isinstance(key, str) and SENSITIVE_KEY.search(key) is not None


_redactor = Redactor()


def add_secrets(secrets: Iterable[str]) -> None:
    """Redact these values from every later log line (e.g. a token read late), and
    from what tools return (``redact_text``)."""
    _redactor.add(secrets)


def redact_text(text: str) -> str:
    """``text`` with every secret the daemon knows (config, credential files, tokens it
    read) replaced by ``[REDACTED]``: for tool output before it is stored or shown."""
    return _redactor._scrub(text)


class UtcTimestamp:
    """``timestamp`` as ISO 8601 UTC with microseconds, e.g. ``2026-01-01T10:00:00.123456Z``.

    The same text as structlog's ``TimeStamper(fmt="iso", utc=True)`` at a
    third of the cost: the date and time of day are formatted once per second.
    """

    def __init__(self) -> None:
        # One tuple, replaced whole: stdlib records are formatted on other threads too.
        self._second: tuple[int, str] = (-1, "")

    def __call__(self, logger: WrappedLogger, method: str, event_dict: EventDict) -> EventDict:
        now = time.time()
        whole = int(now)
        second, prefix = self._second
        if whole != second:
            prefix = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole))
            self._second = (whole, prefix)
        event_dict["timestamp"] = f"{prefix}.{int((now - whole) * 1_000_000):06d}Z"
        return event_dict


# Built once: ``json.dumps(..., default=str)`` makes a new encoder for every line.
_encode_json = jsonlib.JSONEncoder(default=str).encode


def render_json(logger: WrappedLogger, method: str, event_dict: EventDict) -> str:
    """The line as JSON, in ``json.dumps``'s format; values it cannot encode as ``str()``."""
    return _encode_json(event_dict)


@dataclass
class _Bucket:
    tokens: float
    last: float
    suppressed: int = 0


class LineRateLimit:
    """Caps how often each of a few per-event messages is written; the rest are counted.

    Under a flood (thousands of webhook deliveries a second) one "event routed"
    line per event cost a quarter of the daemon's CPU, and journald's own rate
    limit would drop most of them anyway. Each listed message may be written
    ``burst`` times at once and ``rate`` times a second after that; a line
    left out is counted, and the next one written carries
    ``similar_suppressed``: how many of that message were left out since the
    last one. What matters is not lost: every event's route and reason are in
    the event log (``wakeful events``), and per-hook counts in /api/status.
    """

    def __init__(
        self,
        messages: Iterable[str],
        rate: float,
        burst: int,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate, self._burst, self._clock = rate, float(burst), clock
        now = clock()
        self._buckets = {message: _Bucket(float(burst), now) for message in messages}
        self._lock = threading.Lock()  # stdlib records are formatted on other threads too

    def capped(self, message: str) -> bool:
        return message in self._buckets

    def take(self, message: str) -> int | None:
        """For a line of a capped ``message``: None to leave it out (it is counted), else
        how many were left out since the last one written."""
        bucket = self._buckets[message]
        with self._lock:
            now = self._clock()
            bucket.tokens = min(self._burst, bucket.tokens + (now - bucket.last) * self._rate)
            bucket.last = now
            if bucket.tokens < 1:
                bucket.suppressed += 1
                return None
            bucket.tokens -= 1
            suppressed, bucket.suppressed = bucket.suppressed, 0
        return suppressed


@dataclass(frozen=True)
class _OneWriter:
    """A logger factory that hands out the same (stateless) writer every time."""

    writer: structlog.WriteLogger

    def __call__(self, *args: Any) -> structlog.WriteLogger:
        return self.writer


def capped_logger(base: type[Any], limit: LineRateLimit) -> type[Any]:
    """``base`` (a level-filtering bound logger class) whose lines of ``limit``'s messages
    are counted out before any processor runs: the cap applies where a flood's lines
    are dropped by the thousand, and a dropped line then costs no context merge, no
    processor and no exception (about half of the line's cost)."""

    def method(name: str) -> Callable[..., Any]:
        write = getattr(base, name)

        def log(self: Any, event: Any = None, *args: Any, **kw: Any) -> Any:
            if type(event) is str and limit.capped(event):
                suppressed = limit.take(event)
                if suppressed is None:
                    return None
                if suppressed:
                    kw["similar_suppressed"] = suppressed
            return write(self, event, *args, **kw)

        return log

    return type(
        f"Capped{base.__name__}",
        (base,),
        {name: method(name) for name in ("info", "warning", "error")},
    )


def _shared_processors() -> list[Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        UtcTimestamp(),
        structlog.processors.StackInfoRenderer(),
        # Tracebacks become text before redaction, so secrets in them are scrubbed too.
        structlog.processors.format_exc_info,
    ]


def _renderer(json: bool) -> Processor:
    if json:
        return render_json
    return structlog.dev.ConsoleRenderer(colors=False)


def configure_logging(
    level: str,
    *,
    json: bool | None = None,
    secrets: Iterable[str] = (),
    stream: TextIO | None = None,
) -> None:
    """Set up structlog and stdlib logging once, at daemon start.

    ``json=None`` picks JSON unless ``stream`` (stdout by default) is a TTY.
    Uvicorn must be started with ``log_config=None`` so it keeps these handlers.
    """
    out = stream if stream is not None else sys.stdout
    if json is None:
        json = not out.isatty()
    numeric = logging.getLevelNamesMapping().get(level.upper())
    if numeric is None:
        raise ValueError(f"unknown log level {level!r}; use debug, info, warning or error")
    add_secrets(secrets)
    shared = _shared_processors()
    # At debug level every line is wanted; above it, per-event lines are capped first,
    # before any work is spent on a line that will be dropped (capped_logger).
    wrapper: type[Any] = structlog.make_filtering_bound_logger(numeric)
    if numeric > logging.DEBUG:
        limit = LineRateLimit(PER_EVENT_MESSAGES, PER_EVENT_RATE_PER_S, PER_EVENT_BURST)
        wrapper = capped_logger(wrapper, limit)
    structlog.configure(
        processors=[*shared, _redactor, _renderer(json)],
        wrapper_class=wrapper,
        # One writer for every logger: WriteLoggerFactory made a new one (and looked up
        # its file's lock) for every line a lazy proxy wrote.
        logger_factory=_OneWriter(structlog.WriteLogger(out)),
        cache_logger_on_first_use=False,
    )
    _route_stdlib(numeric, shared, _renderer(json), out)


def _route_stdlib(level: int, shared: list[Processor], renderer: Processor, out: TextIO) -> None:
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[*shared, structlog.stdlib.add_logger_name],
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            _redactor,
            renderer,
        ],
    )
    handler = logging.StreamHandler(out)
    handler.set_name(_HANDLER_NAME)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == _HANDLER_NAME]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
    # Access lines repeat what our own request logs say and may carry ?token=.
    logging.getLogger("uvicorn.access").setLevel(max(level, logging.WARNING))
    for noisy in ("httpx", "httpcore", "openai"):
        logging.getLogger(noisy).setLevel(max(level, logging.WARNING))
