"""A fake Anthropic Messages API on real HTTP, for tests and benchmarks.

``POST /v1/messages`` streams the documented SSE sequence: ``message_start``
(with usage), a ``ping``, per content block ``content_block_start``, its deltas
(``text_delta``, ``input_json_delta``, ``thinking_delta``, ``signature_delta``)
and ``content_block_stop``, then ``message_delta`` (stop reason, output usage)
and ``message_stop``. It takes the same scripted :class:`Reply` objects as the
OpenAI fake (``Reply.reasoning`` becomes a thinking block with a signature the
server generates and later verifies), and rejects with Anthropic's 400 error
body whatever the real API rejects (tests/fakes/anthropic_rules.py), recording
it as a violation.

Each request is recorded twice: ``wire_bodies`` holds the Anthropic body as
sent; ``requests[i].body`` is the same conversation in the canonical OpenAI
form, so scenario tests and responders read both fakes' requests alike.

Cached input is counted as the API does: each ``cache_control`` breakpoint
writes the prefix up to it; a later request reads the longest prefix an
earlier request wrote that ends at one of its breakpoints or within the 20
block boundaries before one.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from typing import Any

import anyio
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, HTTPScope

from tests.fakes.anthropic_rules import IssuedThinking, request_violations
from tests.fakes.model_replies import Reply, tokenize
from tests.fakes.model_server import FakeModelServer, RecordedRequest, _read_whole_body, _send_json

__all__ = ["FakeAnthropicServer"]

_ids = itertools.count(1)
_LOOKBACK = 20  # block boundaries before a breakpoint the API checks for a cache hit
_FRAGMENT = 6  # characters per input_json_delta, like the real API's small fragments
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


class FakeAnthropicServer(FakeModelServer):
    """An Anthropic ``/v1/messages`` endpoint with a script; see the module docstring."""

    provider = "anthropic"

    def __init__(self, port: int = 0, *, validate: bool = True) -> None:
        super().__init__(port, validate=validate)
        self.wire_bodies: list[dict[str, Any]] = []
        self.issued = IssuedThinking()
        self._cache: set[str] = set()  # hashes of prefixes written at breakpoints
        self.cache_reads: list[int] = []  # per request: cache_read_input_tokens reported
        self.input_totals: list[int] = []  # per request: all input tokens

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"  # the SDK adds /v1/messages

    async def _handle(
        self, scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["method"] != "POST" or scope["path"].rstrip("/") != "/v1/messages":
            await _send_json(send, 404, _error(404, f"not found: {scope['path']}"))
            return
        raw = await _read_whole_body(receive)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if raw is None:
            self._finish(self._record({}, headers, whole=False), aborted=True)
            return
        try:
            wire = json.loads(raw)
        except ValueError:
            wire = {}
        problems = request_violations(wire, self.issued)
        with self._cond:
            record = self._record(canonical_body(wire), headers, raw)
            self.wire_bodies.append(wire)
            if self.validate:
                self.violations.extend(f"request {record.index}: {p}" for p in problems)
        if problems:
            self._finish(record, aborted=False)
            await _send_json(send, 400, _error(400, problems[0]))
            return
        reply = record.reply = self._next_reply(record.body)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_disconnect, receive, record, tg.cancel_scope)
            await self._answer(send, reply, wire, record)
            tg.cancel_scope.cancel()

    async def _answer(
        self, send: ASGISendCallable, reply: Reply, wire: dict[str, Any], record: RecordedRequest
    ) -> None:
        if reply.first_token_delay_s:
            await anyio.sleep(reply.first_token_delay_s)
        if reply.status != 200:
            self._finish(record, aborted=False)
            extra = []
            if reply.retry_after_s is not None:
                extra.append((b"retry-after-ms", str(int(reply.retry_after_s * 1000)).encode()))
            await _send_json(send, reply.status, _error(reply.status, reply.error_message), extra)
            return
        read, created, total = self._cache_usage(wire)
        if reply.cached_tokens is not None:
            read = reply.cached_tokens
        if reply.prompt_tokens is not None:
            total = reply.prompt_tokens
        self.cache_reads.append(read)
        self.input_totals.append(total)
        start = {"type": "http.response.start", "status": 200}
        headers = [(b"content-type", b"text/event-stream"), (b"cache-control", b"no-cache")]
        await send({**start, "headers": headers})
        usage = {
            "input_tokens": max(0, total - read - created),
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": created,
            "output_tokens": 1,
        }
        model = str(wire.get("model") or "fake-model")
        await _event(send, "message_start", {"message": _message(model, usage)})
        await _event(send, "ping", {})
        output = 0
        thinking = isinstance(wire.get("thinking"), dict)
        blocks = 0
        for position, (kind, payload) in enumerate(_events(reply, self.issued, thinking)):
            blocks += kind == "content_block_start"
            if position and reply.token_delay_s and kind == "content_block_delta":
                await anyio.sleep(reply.token_delay_s)
            output += 1 if kind == "content_block_delta" else 0
            await _event(send, kind, payload)
        if reply.corrupt == "overloaded":  # the API's mid-stream error event, then the end
            await _event(send, "error", _error(529, "Overloaded"))
            self._finish(record, aborted=False)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        if reply.hang:
            await anyio.sleep_forever()  # ended by the disconnect watcher or shutdown
        if reply.endless:  # one text block more, one word at a time, until the client leaves
            opened = {"index": blocks, "content_block": {"type": "text", "text": ""}}
            await _event(send, "content_block_start", opened)
            while True:
                await anyio.sleep(reply.token_delay_s)
                delta = {"type": "text_delta", "text": " more"}
                await _event(send, "content_block_delta", {"index": blocks, "delta": delta})
        stop = reply.finish_reason or ("tool_use" if reply.tool_calls else "end_turn")
        delta = {"delta": {"stop_reason": stop, "stop_sequence": None}}
        output = reply.completion_tokens if reply.completion_tokens is not None else output
        await _event(send, "message_delta", {**delta, "usage": {"output_tokens": output}})
        # Complete as message_stop is handed over (the OpenAI fake says why).
        self._finish(record, aborted=False)
        await _event(send, "message_stop", {})
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    def _cache_usage(self, wire: dict[str, Any]) -> tuple[int, int, int]:
        """(cache read, cache written, all input) tokens, by the API's prefix rule.

        Each breakpoint writes the prefix up to it; a read is the longest prefix
        written earlier that ends at a breakpoint or at one of the 20 block
        boundaries before it (the API's lookback).
        """
        digest = hashlib.sha256()
        boundaries: list[tuple[str, int]] = []  # (prefix hash, tokens) after each block
        breakpoints: list[int] = []  # positions in boundaries
        tokens = 0
        for block in _prefix_blocks(wire):
            stripped = {k: v for k, v in block.items() if k != "cache_control"}
            text = json.dumps(stripped, sort_keys=True)
            digest.update(text.encode())
            tokens += len(text) // 4 + 1
            boundaries.append((digest.hexdigest(), tokens))
            if "cache_control" in block:
                breakpoints.append(len(boundaries) - 1)
        read = 0
        for position in breakpoints:
            for key, upto in boundaries[max(0, position - _LOOKBACK) : position + 1]:
                if key in self._cache:
                    read = max(read, upto)
        for position in breakpoints:
            self._cache.add(boundaries[position][0])
        written = boundaries[breakpoints[-1]][1] if breakpoints else 0
        return read, max(0, written - read), tokens


def _prefix_blocks(wire: dict[str, Any]) -> list[dict[str, Any]]:
    """The request in the API's cache order: tools, then system, then messages."""
    blocks: list[dict[str, Any]] = [t for t in wire.get("tools") or [] if isinstance(t, dict)]
    system = wire.get("system")
    if isinstance(system, str):
        blocks.append({"type": "text", "text": system})
    elif isinstance(system, list):
        blocks.extend(b for b in system if isinstance(b, dict))
    for message in wire.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content or []:
            if isinstance(block, dict):
                blocks.append({**block, "role": message.get("role")})
    return blocks


def _events(
    reply: Reply, issued: IssuedThinking, thinking: bool
) -> list[tuple[str, dict[str, Any]]]:
    """The content block events of one reply, in order."""
    events: list[tuple[str, dict[str, Any]]] = []
    index = 0

    def block(start: dict[str, Any], deltas: list[dict[str, Any]]) -> None:
        nonlocal index
        events.append(("content_block_start", {"index": index, "content_block": start}))
        events.extend(("content_block_delta", {"index": index, "delta": d}) for d in deltas)
        events.append(("content_block_stop", {"index": index}))
        index += 1

    if thinking and reply.reasoning:
        signature = f"sig-{next(_ids)}-" + hashlib.sha256(reply.reasoning.encode()).hexdigest()
        issued.signatures[signature] = reply.reasoning
        deltas = [{"type": "thinking_delta", "thinking": t} for t in tokenize(reply.reasoning)]
        deltas.append({"type": "signature_delta", "signature": signature})
        block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
    if thinking:
        for detail in reply.reasoning_details:
            if detail.get("type") == "redacted_thinking":
                data = f"redacted-{next(_ids)}"
                issued.redacted.add(data)
                block({"type": "redacted_thinking", "data": data}, [])
    if reply.text:
        deltas = [{"type": "text_delta", "text": t} for t in tokenize(reply.text)]
        block({"type": "text", "text": ""}, deltas)
    for spec in reply.tool_calls:
        use_id = spec.id or f"toolu_{next(_ids):024d}"
        arguments = spec.arguments_text()
        deltas = [
            {"type": "input_json_delta", "partial_json": arguments[i : i + _FRAGMENT]}
            for i in range(0, len(arguments), _FRAGMENT)
        ]
        block({"type": "tool_use", "id": use_id, "name": spec.name, "input": {}}, deltas)
    return events


def canonical_body(wire: dict[str, Any]) -> dict[str, Any]:
    """The Anthropic request as OpenAI-form ``messages`` and ``tools`` (each block one message)."""
    messages: list[dict[str, Any]] = []
    system = wire.get("system")
    if isinstance(system, list):
        system = "".join(str(b.get("text", "")) for b in system if isinstance(b, dict))
    if system:
        messages.append({"role": "system", "content": system})
    for turn in wire.get("messages") or []:
        content = turn.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        if turn.get("role") == "assistant":
            messages.append(_assistant(blocks))
            continue
        for block in blocks:
            if block.get("type") == "tool_result":
                result = block.get("content")
                if isinstance(result, list):
                    result = "".join(str(part.get("text", "")) for part in result)
                call_id = block.get("tool_use_id")
                messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
            elif block.get("type") == "text":
                messages.append({"role": "user", "content": block.get("text")})
    tools = [
        {
            "type": "function",
            "function": {
                "name": tool.get("name"),
                "description": tool.get("description", ""),
                "parameters": tool.get("input_schema"),
            },
        }
        for tool in wire.get("tools") or []
    ]
    body: dict[str, Any] = {"model": wire.get("model"), "messages": messages, "stream": True}
    if tools:
        body["tools"] = tools
    return body


def _assistant(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    calls = [
        {
            "id": b.get("id"),
            "type": "function",
            "function": {"name": b.get("name"), "arguments": json.dumps(b.get("input"))},
        }
        for b in blocks
        if b.get("type") == "tool_use"
    ]
    if calls:
        message["tool_calls"] = calls
    return message


def _message(model: str, usage: dict[str, int]) -> dict[str, Any]:
    return {
        "id": f"msg_fake{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }


def _error(status: int, message: str) -> dict[str, Any]:
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


async def _event(send: ASGISendCallable, kind: str, data: dict[str, Any]) -> None:
    payload = f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()
    await send({"type": "http.response.body", "body": payload, "more_body": True})
