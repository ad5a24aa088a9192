"""Request bodies encoded once per change, not once per cycle.

A session's request is the previous one plus a short tail (the new event, the
reply, the tool results, the status bar), yet encoding the whole body costs
time in proportion to all of it on every model call. :class:`BodyEncoder`
keeps the encoded bytes of the last body's items (the messages, and each
other field) and encodes only the items from the first one that changed; the
bytes are exactly what one ``json.dumps`` of the whole body gives, with the
settings both SDKs post JSON with (``ensure_ascii=False``, compact
separators, no NaN), so a prompt cache keyed on bytes sees no difference.

An item is reused when it is the very object encoded last time or equal to
it. The first holds because the trajectory is append-only and its messages
are never changed in place (the trajectory writer and the context budget's
token counts rely on that too); a pruned or compacted prefix arrives as new
objects that are not equal, and a change in what is replayed (another model,
another reasoning policy) changes the wire item, so both re-encode from the
first difference. The second covers the items a provider rebuilds on every
call from the same stored messages (stubs, the summary, Anthropic's turns):
equal JSON values from the same deterministic conversion encode to the same
bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from wakeful.llm.session_cache import MAX_SESSIONS, SessionCache

# The SDKs' own JSON settings (openai/_utils/_json.py, anthropic/_utils/_json.py).
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps(value: Any) -> bytes:
    """``value`` as the SDKs would post it."""
    return _ENCODER.encode(value).encode()


@dataclass
class EncodeStats:
    """What the last :meth:`BodyEncoder.encode` reused and what it had to encode."""

    reused_items: int = 0
    encoded_items: int = 0
    reused_fields: int = 0
    encoded_fields: int = 0


class _EncodedList:
    """One JSON array's items, encoded, each followed by a comma."""

    def __init__(self) -> None:
        self._items: list[Any] = []  # the items last encoded (strong refs keep them the same)
        self._ends: list[int] = []  # offset just past item i's comma in _buffer
        self._buffer = bytearray()

    def update(self, items: list[Any], stats: EncodeStats) -> None:
        kept = shared_prefix(items, self._items)
        del self._buffer[self._ends[kept - 1] if kept else 0 :]
        del self._items[kept:], self._ends[kept:]
        for item in items[kept:]:
            self._buffer += dumps(item)
            self._buffer += b","
            self._items.append(item)
            self._ends.append(len(self._buffer))
        stats.reused_items += kept
        stats.encoded_items += len(items) - kept

    def append_to(self, parts: list[bytes | bytearray]) -> None:
        parts.append(b"[")
        parts.append(self._buffer[:-1])  # without the last comma (a copy: join copies once more)
        parts.append(b"]")


def shared_prefix(items: list[Any], previous: list[Any]) -> int:
    """How many leading items are the same as last time (identical, or equal)."""
    limit = min(len(items), len(previous))
    # The usual cycle keeps all but the last item (the status bar): two C-speed
    # comparisons of the slices settle that without a Python loop.
    for candidate in (limit, limit - 1):
        if candidate > 0 and items[:candidate] == previous[:candidate]:
            return candidate
    for index in range(limit):
        item = items[index]
        if item is not previous[index] and item != previous[index]:
            return index
    return limit


class BodyEncoder:
    """One session's request bodies: a JSON object whose ``list_key`` array grows."""

    def __init__(self, list_key: str = "messages") -> None:
        self._list_key = list_key
        self._list = _EncodedList()
        self._fields: dict[str, tuple[Any, bytes]] = {}
        self.stats = EncodeStats()

    def encode(self, body: Mapping[str, Any]) -> bytes:
        """``dumps(body)``, reusing what did not change since the last call."""
        stats = EncodeStats()
        parts: list[bytes | bytearray] = [b"{"]
        fields: dict[str, tuple[Any, bytes]] = {}
        for position, (key, value) in enumerate(body.items()):
            if position:
                parts.append(b",")
            parts.append(dumps(key) + b":")
            if key == self._list_key and isinstance(value, list):
                self._list.update(value, stats)
                self._list.append_to(parts)
                continue
            cached = self._fields.get(key)
            if cached is not None and (cached[0] is value or cached[0] == value):
                encoded = cached[1]
                stats.reused_fields += 1
            else:
                encoded = dumps(value)
                stats.encoded_fields += 1
            fields[key] = (value, encoded)
            parts.append(encoded)
        if self._list_key not in body:
            self._list = _EncodedList()
        parts.append(b"}")
        self._fields = fields
        self.stats = stats
        return b"".join(parts)


class SessionEncoders:
    """A provider's encoders, one per session, the most recently used kept."""

    def __init__(self, list_key: str = "messages", max_sessions: int = MAX_SESSIONS) -> None:
        self._encoders = SessionCache(lambda: BodyEncoder(list_key), max_sessions)

    def encode(self, session: str | None, body: Mapping[str, Any]) -> bytes:
        """The body's bytes; ``session`` None (a one-off call): encoded whole, nothing kept."""
        if session is None:
            return dumps(body)
        return self._encoders.get(session).encode(body)

    def stats(self, session: str) -> EncodeStats | None:
        encoder = self._encoders.peek(session)
        return encoder.stats if encoder is not None else None
