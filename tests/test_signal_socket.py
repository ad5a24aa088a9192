"""Signal through signal-cli's socket modes (``daemon --tcp`` / ``--socket`` with
``--receive-mode manual``): one connection, newline-delimited JSON-RPC both ways."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer
from tests.fakes.signal_cli import FakeSignalCliSocket
from tests.test_signal_channel import OWNER, STRANGER, account_config, until_status
from tests.test_telegram_channel import echo, said
from wakeful.channels.signal.api import SignalError, StreamEvent
from wakeful.channels.signal.socket_api import SignalSocketApi

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["tcp", "unix"])
def signal(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FakeSignalCliSocket]:
    unix_path = tmp_path / "signal-cli.sock" if request.param == "unix" else None
    with FakeSignalCliSocket(unix_path=unix_path) as fake:
        yield fake


@asynccontextmanager
async def daemon(
    tmp_path: Path, model: FakeModelServer, fake: FakeSignalCliSocket, **account: Any
) -> AsyncIterator[Harness]:
    settings = daemon_settings(
        tmp_path / "data", model.base_url, chat={"signal": [account_config(fake, **account)]}
    )
    async with harness(settings) as h:
        await fake.until(lambda: fake.subscribers > 0, what="subscribeReceive")
        # The fake has the subscription before wakeful has its answer; a test that breaks
        # the connection in between would see a stream that was never open (CI saw it).
        await until_status(h, lambda s: s["components"]["chat.signal:phone"]["ok"])
        yield h


async def test_a_message_is_answered_and_marked_read_on_the_same_connection(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCliSocket
) -> None:
    """The read receipt is a call made while a notification is being handled: the reader
    hands its response over, nothing waits on itself."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal):
        said_ = signal.user_says(OWNER, "over the socket")
        [sent] = await signal.await_sent(1)
        await signal.until(lambda: bool(signal.receipts), what="the read receipt")
    assert (sent.to, sent.text) == (OWNER.number, "answer to over the socket")
    assert signal.receipts[0]["targetTimestamp"] == [said_["timestamp"]]
    assert [said(r.body) for r in model_server.requests] == ["over the socket"]


async def test_a_stranger_gets_a_pairing_code(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCliSocket
) -> None:
    async with daemon(tmp_path, model_server, signal):
        signal.user_says(STRANGER, "hi")
        [sent] = await signal.await_sent(1)
    assert sent.to == STRANGER.uuid and "pairing code" in sent.text.lower()
    assert model_server.requests == []


async def test_what_is_said_while_wakeful_is_away_waits_and_arrives_once(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCliSocket
) -> None:
    """--receive-mode manual: signal-cli fetches only while wakeful is subscribed, so a
    message sent meanwhile waits on Signal's server and comes with the next connection."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal):
        signal.user_says(OWNER, "before")
        await signal.await_sent(1)
    await signal.until(lambda: signal.subscribers == 0, what="the connection closed")
    signal.user_says(OWNER, "while away")
    assert len(signal.waiting) == 1
    async with daemon(tmp_path, model_server, signal):
        sent = await signal.await_sent(2)
    assert [s.text for s in sent] == ["answer to before", "answer to while away"]
    assert len(model_server.requests) == 2


async def test_the_daemon_going_down_is_shown_and_recovered_from(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCliSocket
) -> None:
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal) as h:
        signal.stop()
        # Between tries the account shows "connecting to …" (not ok either); under load
        # that may be what the first look sees, so wait for the failure to be named.
        down = await until_status(h, lambda s: _named_down(s["components"]["chat.signal:phone"]))
        assert not down["components"]["chat.signal:phone"]["ok"]
        signal.user_says(OWNER, "said while it was down")
        signal.start()
        [sent] = await signal.await_sent(1)
        up = await until_status(h, lambda s: s["components"]["chat.signal:phone"]["ok"])
    assert sent.text == "answer to said while it was down"
    assert up["chat.signal:phone"]["streams opened"] >= 2


def _named_down(health: dict[str, Any]) -> bool:
    detail = str(health["detail"])
    return not health["ok"] and ("cannot connect" in detail or "closed the connection" in detail)


async def test_a_connection_dropped_before_its_answer_fails_the_call_at_once() -> None:
    """signal-cli going away while a call waits for its answer (here: the subscription a
    new connection opens) ends the call as soon as the connection ends, as a broken
    connection, not as a refusal after CALL_TIMEOUT_S (30 s) during which the account
    looked like it was still connecting."""
    said_lines: list[bytes] = []

    async def hang_up(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            said_lines.append(await BufferedByteReceiveStream(stream).receive_until(b"\n", 4096))

    opened: list[None] = []
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as listener:
        port = listener.extra(anyio.abc.SocketAttribute.local_port)
        async with anyio.create_task_group() as group:
            group.start_soon(listener.serve, hang_up)
            api = SignalSocketApi(f"tcp://127.0.0.1:{port}", account=None)
            with anyio.fail_after(5), pytest.raises(SignalError) as raised:
                await api.listen(None, lambda: opened.append(None), _never_called)
            group.cancel_scope.cancel()
    assert b"subscribeReceive" in said_lines[0]
    assert raised.value.code == 0 and "closed the connection" in raised.value.message
    assert opened == []  # never reported as listening
    with pytest.raises(SignalError, match="not connected"):
        await api.call("send", {})


async def _never_called(event: StreamEvent) -> None:
    raise AssertionError(event)
