"""A fake OpenAI-compatible model server on real HTTP, for tests and benchmarks.

It runs uvicorn in a background thread (so the client may be in-process or a
subprocess), streams scripted replies token by token, records every request,
notices the moment a client abandons a stream, and checks each request's
trajectory with the strict validator.

    with FakeModelServer() as server:
        server.push(Reply(text="hello"))
        ...  # point a client at server.base_url
        server.wait_for_requests(1)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from uvicorn._types import ASGIReceiveCallable, ASGISendCallable, HTTPScope, Scope

from tests.fakes.loopback_http import LoopbackHttpServer, ServesWhileOpen
from tests.fakes.model_replies import Reply, ReplyRenderer, ToolCallSpec, load_script, text_reply
from tests.fakes.reasoning_rules import ReasoningRules, reasoning_violations
from tests.trajectory_validator import TrajectoryError, validate_both
from wakeful.core.context.save_before_compaction import SAVE_PROMPT

__all__ = ["FakeModelServer", "RecordedRequest", "Reply", "ToolCallSpec"]

Responder = Callable[[dict[str, Any]], Reply]


@dataclass
class RecordedRequest:
    body: dict[str, Any]
    received_at: float  # time.monotonic()
    index: int
    headers: dict[str, str]
    aborted: bool = False
    completed: bool = False
    aborted_at: float | None = None
    ended_at: float | None = None  # time.monotonic() when completed or aborted
    # The scripted reply it was given; None for a request answered without one (its
    # body never arrived whole, too long, refused as invalid). So request indexes and
    # the replies' own numbering differ once any request went without.
    reply: Reply | None = None


class FakeModelServer(ServesWhileOpen):
    """An OpenAI-compatible `/v1/chat/completions` endpoint with a script."""

    provider = "openai"  # the [llm] provider that talks to it

    def __init__(
        self, port: int = 0, *, validate: bool = True, reasoning_rules: ReasoningRules = "openai"
    ) -> None:
        self.validate = validate
        self.reasoning_rules: ReasoningRules = reasoning_rules  # what replayed reasoning may be
        self.requests: list[RecordedRequest] = []
        # Each request's body exactly as sent (same index), for byte-identity
        # checks: prompt caches key on bytes.
        self.raw_bodies: list[bytes] = []
        self.violations: list[str] = []
        self.responder: Responder = lambda _body: text_reply()
        # The silent turn before a compaction (memory's save) is answered here, ahead of
        # the script: a test's queued replies are for the session's own turns. Default:
        # nothing to save. A test of the save sets its own.
        self.save_responder: Responder = lambda _body: Reply(text="")
        # Set: a request estimated above this many tokens is refused the way OpenAI
        # refuses it (400, code context_length_exceeded), before any reply is used.
        self.context_window: int | None = None
        self.too_long: list[int] = []  # indexes of the requests refused as too long
        self._queue: deque[Reply] = deque()
        self.models_status = 200  # GET /models answers this (401: the key refused)
        # POST /embeddings: the texts each request asked for, and the status to answer
        # (a test's endpoint that fails); vectors from concept_vector below.
        self.embedded: list[list[str]] = []
        self.embeddings_status = 200
        self.embedding_dims = 64  # a benchmark sets a real model's (1536)
        # Set: GET /models refuses any other bearer token, as OpenAI refuses a wrong key.
        self.api_key: str | None = None
        self._cond = threading.Condition()
        self._http = LoopbackHttpServer(self, "fake model server", port)
        self.port: int = self._http.port

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- scripting --------------------------------------------------------

    def push(self, *replies: Reply) -> None:
        """Queue replies; each request takes the oldest, then falls back to `responder`."""
        with self._cond:
            self._queue.extend(replies)

    def _over_window(self, body: dict[str, Any]) -> bool:
        return self.context_window is not None and prompt_estimate(body) > self.context_window

    def _next_reply(self, body: dict[str, Any]) -> Reply:
        if is_save_request(body):
            return self.save_responder(body)
        with self._cond:
            if self._queue:
                return self._queue.popleft()
        return self.responder(body)

    # --- recording and waiting ---------------------------------------------

    def _record(
        self, body: dict[str, Any], headers: dict[str, str], raw: bytes = b"", *, whole: bool = True
    ) -> RecordedRequest:
        with self._cond:
            index = len(self.requests)
            record = RecordedRequest(body, time.monotonic(), index, headers)
            self.requests.append(record)
            self.raw_bodies.append(raw)
            if self.validate and whole:
                self._validate(record)
            self._cond.notify_all()
        return record

    def _validate(self, record: RecordedRequest) -> None:
        try:
            validate_both(record.body.get("messages") or [], record.body.get("tools"))
        except TrajectoryError as exc:
            self.violations.append(f"request {record.index}: {exc}")
        messages = record.body.get("messages") or []
        for problem in reasoning_violations(messages, self.reasoning_rules):
            self.violations.append(f"request {record.index}: {problem}")

    def _finish(self, record: RecordedRequest, *, aborted: bool) -> None:
        with self._cond:
            if record.completed or record.aborted:
                return
            record.ended_at = time.monotonic()
            if aborted:
                record.aborted = True
                record.aborted_at = record.ended_at
            else:
                record.completed = True
            self._cond.notify_all()

    def wait_for_requests(self, n: int, timeout_s: float = 5.0) -> list[RecordedRequest]:
        """Block until at least `n` requests have arrived; return them all."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self.requests) >= n, timeout_s):
                raise TimeoutError(f"{len(self.requests)} of {n} requests within {timeout_s} s")
            return list(self.requests)

    def wait_for_abort(self, index: int, timeout_s: float = 5.0) -> RecordedRequest:
        """Block until request `index` was abandoned by its client."""
        return self._wait_for_end(index, timeout_s, want_abort=True)

    def wait_for_completion(self, index: int, timeout_s: float = 5.0) -> RecordedRequest:
        """Block until request `index` was answered in full."""
        return self._wait_for_end(index, timeout_s, want_abort=False)

    def _wait_for_end(self, index: int, timeout_s: float, *, want_abort: bool) -> RecordedRequest:
        def ended() -> bool:
            return len(self.requests) > index and (
                self.requests[index].aborted or self.requests[index].completed
            )

        with self._cond:
            if not self._cond.wait_for(ended, timeout_s):
                raise TimeoutError(f"request {index} still open after {timeout_s} s")
            record = self.requests[index]
        if record.aborted != want_abort:
            state = "aborted" if record.aborted else "completed"
            raise AssertionError(f"request {index} {state}, not as expected")
        return record

    async def await_requests(self, n: int, timeout_s: float = 5.0) -> list[RecordedRequest]:
        return await anyio.to_thread.run_sync(
            self.wait_for_requests, n, timeout_s, abandon_on_cancel=True
        )

    async def await_abort(self, index: int, timeout_s: float = 5.0) -> RecordedRequest:
        return await anyio.to_thread.run_sync(
            self.wait_for_abort, index, timeout_s, abandon_on_cancel=True
        )

    async def await_completion(self, index: int, timeout_s: float = 5.0) -> RecordedRequest:
        return await anyio.to_thread.run_sync(
            self.wait_for_completion, index, timeout_s, abandon_on_cancel=True
        )

    # --- ASGI -------------------------------------------------------------

    async def __call__(
        self, scope: Scope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["type"] != "http":
            return
        try:
            await self._handle(scope, receive, send)
        except Exception as exc:
            # A bug in the fake must fail the test, not just a log line.
            with self._cond:
                self.violations.append(f"fake model server error: {exc!r}")
            raise

    async def _handle(
        self, scope: HTTPScope, receive: ASGIReceiveCallable, send: ASGISendCallable
    ) -> None:
        if scope["method"] == "GET" and scope["path"].rstrip("/").endswith("/models"):
            given = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            wrong_key = self.api_key is not None and given != f"Bearer {self.api_key}"
            if self.models_status != 200 or wrong_key:  # a refused key, as OpenAI answers it
                error = {"message": "Incorrect API key provided", "type": "invalid_request_error"}
                await _send_json(send, 401 if wrong_key else self.models_status, {"error": error})
                return
            await _send_json(send, 200, {"object": "list", "data": [{"id": "fake-model"}]})
            return
        if scope["method"] == "POST" and scope["path"].endswith("/embeddings"):
            await self._embeddings(receive, send)
            return
        if scope["method"] != "POST" or not scope["path"].endswith("/chat/completions"):
            await _send_json(send, 404, {"error": {"message": "not found", "type": "invalid"}})
            return
        raw = await _read_whole_body(receive)
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        if raw is None:
            # The client hung up before its body was whole (cancelled while
            # sending): no API would see this request, so there is nothing to check.
            self._finish(self._record({}, headers, whole=False), aborted=True)
            return
        try:
            body = json.loads(raw)
        except ValueError:
            body = {"unparsable": raw.decode(errors="replace")}
        record = self._record(body, headers, raw)
        if self._over_window(body):
            self.too_long.append(record.index)
            self._finish(record, aborted=False)
            await _send_json(send, 400, _too_long_body(self.context_window or 0))
            return
        reply = record.reply = self._next_reply(body)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._watch_disconnect, receive, record, tg.cancel_scope)
            await self._respond(send, reply, body, record)
            tg.cancel_scope.cancel()

    async def _embeddings(self, receive: ASGIReceiveCallable, send: ASGISendCallable) -> None:
        """OpenAI's /v1/embeddings shape: {"data": [{"index", "embedding"}], "model", …}."""
        body = json.loads(await _read_body(receive))
        texts = [body["input"]] if isinstance(body["input"], str) else list(body["input"])
        with self._cond:
            self.embedded.append(texts)
        if self.embeddings_status != 200:
            error = {"message": "the embeddings model is overloaded", "type": "server_error"}
            await _send_json(send, self.embeddings_status, {"error": error})
            return
        data = [
            {
                "object": "embedding",
                "index": i,
                "embedding": concept_vector(text, self.embedding_dims),
            }
            for i, text in enumerate(texts)
        ]
        usage = {"prompt_tokens": sum(len(t.split()) for t in texts), "total_tokens": 0}
        await _send_json(
            send, 200, {"object": "list", "data": data, "model": body["model"], "usage": usage}
        )

    async def _watch_disconnect(
        self, receive: ASGIReceiveCallable, record: RecordedRequest, scope: anyio.CancelScope
    ) -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self._finish(record, aborted=True)
                scope.cancel()
                return

    async def _respond(
        self, send: ASGISendCallable, reply: Reply, body: dict[str, Any], record: RecordedRequest
    ) -> None:
        renderer = ReplyRenderer(reply, body)
        if reply.first_token_delay_s:
            await anyio.sleep(reply.first_token_delay_s)
        if body.get("stream") and reply.status == 200:
            await self._stream(send, renderer, record)
            return
        # A JSON body goes out in one write: count it complete before the
        # write, as uvicorn reports the finished response as a disconnect.
        self._finish(record, aborted=False)
        if reply.status == 200:
            await _send_json(send, 200, renderer.completion_body())
            return
        extra = []
        if reply.retry_after_s is not None:
            extra.append((b"retry-after-ms", str(int(reply.retry_after_s * 1000)).encode()))
        await _send_json(send, reply.status, renderer.error_body(), extra)

    async def _stream(
        self, send: ASGISendCallable, renderer: ReplyRenderer, record: RecordedRequest
    ) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"text/event-stream"),
                    (b"cache-control", b"no-cache"),
                ],
            }
        )
        delay = renderer.reply.token_delay_s
        for position, chunk in enumerate(renderer.content_chunks()):
            if position and delay:
                await anyio.sleep(delay)
            await _send_event(send, json.dumps(chunk))
        if renderer.reply.corrupt:
            await send({"type": "http.response.body", "body": CORRUPT[renderer.reply.corrupt],
                        "more_body": False})  # fmt: skip
            self._finish(record, aborted=False)
            return
        if renderer.reply.hang:
            await anyio.sleep_forever()  # ended by the disconnect watcher or shutdown
        while renderer.reply.endless:  # ended by the disconnect watcher or shutdown
            await anyio.sleep(delay)
            await _send_event(send, json.dumps(renderer.word_chunk(" more")))
        for chunk in renderer.final_chunks():
            await _send_event(send, json.dumps(chunk))
        # Complete as [DONE] is handed over, not once the write returns: under load the
        # write waits for the transport to drain, meanwhile the client reads [DONE] and
        # hangs up, and the disconnect watcher took that for an abort (CI saw a finished
        # reply counted as aborted, and the interleaving property failed on it).
        self._finish(record, aborted=False)
        await _send_event(send, "[DONE]")
        await send({"type": "http.response.body", "body": b"", "more_body": False})

    # --- lifecycle --------------------------------------------------------

    def start(self) -> None:
        self._http.start()

    def close(self) -> None:
        """Stop at once; open streams, even hanging ones, are cut off."""
        self._http.close()


def concept_vector(text: str, dims: int = 64) -> list[float]:
    """A stand-in for meaning: words of one concept (CONCEPTS) share a dimension, any
    other word hashes to its own; a text is the sum of its words. "automobile" is then
    near "car" though they share no letter, which is what a test of meaning needs."""
    vector = [0.0] * dims
    for word in re.findall(r"\w+", text.lower()):
        concept = CONCEPTS.get(word, word)
        vector[zlib.crc32(concept.encode()) % dims] += 1.0
    return vector


# Synonyms a real embedding model would put close together.
CONCEPTS = {
    word: concept
    for concept, words in {
        "car": ("car", "cars", "automobile", "vehicle", "volvo"),
        "colour": ("colour", "color", "red", "blue", "painted"),
        "doctor": ("doctor", "physician", "dentist", "appointment"),
    }.items()
    for word in words
}


async def _read_body(receive: ASGIReceiveCallable) -> bytes:
    return await _read_whole_body(receive) or b""


async def _read_whole_body(receive: ASGIReceiveCallable) -> bytes | None:
    """The whole request body, or None when the client left before sending all of it."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


# What a broken endpoint sends (Reply.corrupt): invalid UTF-8, and a line that is not JSON.
CORRUPT = {
    "utf8": b'data: {"id": "x", "choices": [{"delta": {"content": "\xff\xfe\xc3"}}]}\n\n',
    "json": b"data: {this is not json at all\n\n",
}


async def _send_event(send: ASGISendCallable, data: str) -> None:
    payload = f"data: {data}\n\n".encode()
    await send({"type": "http.response.body", "body": payload, "more_body": True})


async def _send_json(
    send: ASGISendCallable,
    status: int,
    body: dict[str, Any],
    extra_headers: list[tuple[bytes, bytes]] | None = None,
) -> None:
    payload = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), *(extra_headers or [])]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload, "more_body": False})


def is_save_request(body: dict[str, Any]) -> bool:
    """The silent turn before a compaction (wakeful/core/context/save_before_compaction.py)."""
    messages = body.get("messages") or [{}]
    return messages[0].get("content") == SAVE_PROMPT


def prompt_estimate(body: dict[str, Any]) -> int:
    """The fake's token count of a request, as its usage reports it (ReplyRenderer)."""
    text = json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))
    return max(1, len(text) // 4)


def _too_long_body(window: int) -> dict[str, Any]:
    return {
        "error": {
            "message": f"This model's maximum context length is {window} tokens. Please reduce "
            "the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the fake OpenAI-compatible server.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--script", help="JSON file with a list of replies, served in order")
    args = parser.parse_args()
    server = FakeModelServer(args.port)
    if args.script:
        server.push(*load_script(args.script))
    with server:
        print(server.base_url, flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()  # until interrupted
    for violation in server.violations:
        print(violation, file=sys.stderr)


if __name__ == "__main__":
    main()
