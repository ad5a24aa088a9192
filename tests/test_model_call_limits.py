"""A model call is bounded twice: the whole call by [llm] timeout_s, a silence by
[llm] read_timeout_s (both providers, real HTTP to the streaming fake servers).

The limits are shortened here (seconds, not minutes) so each test takes about a
second; test_default_limits checks the values every user gets and that a
normal slow reply passes them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.daemon_harness import harness, settings_for, watch_feed
from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.fakes.model_server import FakeModelServer, Reply
from wakeful.app.config import LlmSection, Settings
from wakeful.app.startup.resources import make_provider
from wakeful.llm import ModelRequest, ModelUnavailable, ProviderError
from wakeful.llm.anthropic_provider import AnthropicProvider
from wakeful.llm.openai_provider import OpenAIProvider

pytestmark = pytest.mark.anyio

Server = FakeModelServer | FakeAnthropicServer
REQUEST = ModelRequest(messages=[{"role": "user", "content": "hi"}])
# The fake keeps talking (or stays silent) forever; on code without the limit
# the test would wait for ever, so it gives up here and fails.
GIVE_UP_S = 10.0


@pytest.fixture(params=["openai", "anthropic"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    fake: Server = FakeModelServer() if request.param == "openai" else FakeAnthropicServer()
    with fake:
        yield fake


def provider(server: Server, *, timeout_s: float, read_timeout_s: float) -> object:
    if isinstance(server, FakeAnthropicServer):
        return AnthropicProvider(
            "key", "fake-model", base_url=server.base_url, timeout_s=timeout_s,
            read_timeout_s=read_timeout_s, max_retries=0,
        )  # fmt: skip
    return OpenAIProvider(
        server.base_url, "key", "fake-model", timeout_s=timeout_s,
        read_timeout_s=read_timeout_s, max_retries=0,
    )  # fmt: skip


async def call(llm: object) -> tuple[BaseException, float]:
    assert isinstance(llm, OpenAIProvider | AnthropicProvider)
    started = time.monotonic()
    try:
        with anyio.fail_after(GIVE_UP_S):
            await llm.complete(REQUEST)
    except ProviderError as exc:
        return exc, time.monotonic() - started
    finally:
        await llm.aclose()
    raise AssertionError("the call returned")


async def test_a_model_that_never_stops_is_cut_at_timeout_s(server: Server) -> None:
    """Words every 50 ms for ever (never a silence): the call ends at timeout_s, naming it,
    and the server sees the stream closed."""
    server.push(Reply(text="Once upon a time", token_delay_s=0.05, endless=True))
    exc, took = await call(provider(server, timeout_s=1.0, read_timeout_s=0.5))
    assert "[llm] timeout_s = 1 s" in str(exc), exc
    assert 1.0 <= took < 3.0
    await server.await_abort(0, timeout_s=3)


async def test_a_model_that_goes_silent_is_cut_at_read_timeout_s(server: Server) -> None:
    """A few words, then nothing: the call ends after read_timeout_s of silence, long
    before timeout_s, naming read_timeout_s."""
    server.push(Reply(text="Half a sentence", hang=True))
    exc, took = await call(provider(server, timeout_s=30.0, read_timeout_s=0.5))
    assert isinstance(exc, ModelUnavailable)
    assert "[llm] read_timeout_s = 0.5 s" in str(exc), exc
    assert 0.5 <= took < 3.0
    await server.await_abort(0, timeout_s=3)


async def test_a_silent_server_before_the_answer_names_read_timeout_s(server: Server) -> None:
    """No headers at all for longer than read_timeout_s: the message names that key."""
    server.push(Reply(text="late", first_token_delay_s=5.0))
    exc, took = await call(provider(server, timeout_s=30.0, read_timeout_s=0.5))
    assert "[llm] read_timeout_s = 0.5 s" in str(exc), exc
    assert took < 3.0


async def test_the_run_fails_and_the_next_message_is_answered(
    tmp_path: Path, server: Server
) -> None:
    """Through the daemon: the endless reply fails the run with an alert naming
    [llm] timeout_s, and the next message gets its reply."""
    server.push(Reply(text="Talking", token_delay_s=0.05, endless=True), Reply(text="Answered."))
    # One failure stops the run (the retry-after-failure loop is test_loop_limits'), so
    # the test takes one deadline, not three plus back-off.
    settings = settings_for(
        tmp_path, server, llm={"timeout_s": 1.0}, loop={"max_consecutive_failures": 1}
    )
    async with harness(settings) as h, watch_feed(h) as feed:
        await h.send("tell me a story")
        alert = await feed.wait_for(lambda i: i["type"] == "alert", timeout_s=GIVE_UP_S)
        assert "[llm] timeout_s = 1 s" in alert["text"]
        await feed.wait_for(lambda i: "run stopped" in i.get("text", ""))
        await h.send("and now?")
        await feed.wait_for(lambda i: i.get("text") == "Answered.")
    await server.await_abort(0, timeout_s=3)


async def test_default_limits(server: Server) -> None:
    """The defaults: a whole call may take 300 s, a silence 60 s; a slow, ordinary
    reply (silences of 0.3 s, 2 s in all) passes both."""
    llm = LlmSection()
    assert (llm.timeout_s, llm.read_timeout_s) == (300.0, 60.0)
    assert Settings().llm == llm
    defaults = LlmSection(provider=server.provider, base_url=server.base_url, model="fake-model")
    built = make_provider(defaults, "key")
    assert isinstance(built, OpenAIProvider | AnthropicProvider)
    server.push(Reply(text="one two three four five six seven", token_delay_s=0.3))
    try:
        response = await built.complete(REQUEST)
    finally:
        await built.aclose()
    assert response.content == "one two three four five six seven"
