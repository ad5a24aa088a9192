"""Signal end to end, in-process: the daemon, the fake signal-cli daemon and the fake model,
all over real HTTP (SSE in, JSON-RPC out)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.daemon_harness import Harness, daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply, text_reply
from tests.fakes.signal_cli import FakeSignalCli, Person
from tests.test_approvals import runs, tainted_call
from tests.test_telegram_channel import echo, said
from wakeful.channels.chat.chunking import split_message
from wakeful.channels.signal.client import MAX_CHARS

pytestmark = pytest.mark.anyio

OWNER = Person("+15552223333", "0d2e5f4c-7b1a-4c3e-9f6d-2a8b1c0e3d4f", "Owner")
STRANGER = Person("+15559998888", "8a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "Stranger")
GROUP = "Pmpi+EfPWmsxiomLe9Nx2XF9HOE483p6iKiFj65iMwI="
OTHER_GROUP = "QWxsIHRoZSB3b3JsZCdzIGEgc3RhZ2UsIGFuZCBhbGw="


@pytest.fixture
def signal() -> Iterator[FakeSignalCli]:
    # A keep-alive every 0.5 s instead of signal-cli's 15 s: the same stream, only livelier.
    with FakeSignalCli(keepalive_s=0.5) as fake:
        yield fake


def account_config(fake: FakeSignalCli, **overrides: Any) -> dict[str, Any]:
    """A ``[[chat.signal]]`` entry for this fake. The retries are quicker than the defaults
    (1 s doubling to 60 s) so outages pass fast; test_the_defaults_answer_a_message runs
    the defaults."""
    entry: dict[str, Any] = {
        "name": "phone",
        "url": fake.base_url,
        "allowed_users": [OWNER.number],
        "retry_min_s": 0.05,
        "retry_max_s": 0.3,
    }
    return entry | overrides


@asynccontextmanager
async def daemon(
    tmp_path: Path, model: FakeModelServer, fake: FakeSignalCli, **account: Any
) -> AsyncIterator[Harness]:
    extra = account.pop("sections", {})
    settings = daemon_settings(
        tmp_path / "data",
        model.base_url,
        chat={"signal": [account_config(fake, **account)]},
        **extra,
    )
    async with harness(settings) as h:
        await fake.until(lambda: fake.open_streams > 0, what="the event stream")
        yield h


async def test_an_owners_message_is_answered_once_and_marked_read(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal) as h:
        said_ = signal.user_says(OWNER, "hello from signal")
        [request] = await model_server.await_requests(1)
        [sent] = await signal.await_sent(1)
        await signal.until(lambda: bool(signal.receipts), what="the read receipt")
        [event] = [
            m for m in await h.trajectory() if m["role"] == "user"
        ]  # the event as the model saw it
    assert said(request.body) == "hello from signal"
    assert (sent.to, sent.text) == (OWNER.number, "answer to hello from signal")
    assert signal.receipts == [
        {"recipient": [OWNER.number], "targetTimestamp": [said_["timestamp"]], "type": "read"}
    ]
    assert "hello from signal" in event["content"]
    assert len(model_server.requests) == 1 and len(signal.sent) == 1


async def test_the_defaults_answer_a_message(
    tmp_path: Path, model_server: FakeModelServer, capsys: pytest.CaptureFixture[str]
) -> None:
    """Only what must be said (name, url, allowed_users), against a daemon with signal-cli's
    own 15 s keep-alive."""
    model_server.responder = echo
    with FakeSignalCli() as fake:
        entry = {"name": "phone", "url": fake.base_url, "allowed_users": [OWNER.number]}
        settings = daemon_settings(
            tmp_path / "data", model_server.base_url, chat={"signal": [entry]}
        )
        async with harness(settings):
            await fake.until(lambda: fake.open_streams > 0, what="the event stream")
            fake.user_says(OWNER, "defaults")
            [sent] = await fake.await_sent(1)
    assert (sent.to, sent.text) == (OWNER.number, "answer to defaults")
    assert fake.authorizations == {None}  # no token configured, none sent


async def test_a_proxy_token_is_sent_and_never_logged(
    tmp_path: Path,
    model_server: FakeModelServer,
    signal: FakeSignalCli,
    capsys: pytest.CaptureFixture[str],
) -> None:
    token = "proxy-token-0123456789abcdef"
    (tmp_path / "signal-token").write_text(token + "\n")
    model_server.responder = echo
    async with daemon(
        tmp_path, model_server, signal, auth_token_file=str(tmp_path / "signal-token")
    ) as h:
        signal.stop()  # a broken stream is logged: the token must not be in that line
        await until_status(h, lambda s: not s["components"]["chat.signal:phone"]["ok"])
        signal.start()
        await until_status(h, lambda s: s["components"]["chat.signal:phone"]["ok"])
        signal.user_says(OWNER, "hello")
        await signal.await_sent(1)
    assert signal.authorizations == {f"Bearer {token}"}
    captured = capsys.readouterr()
    assert "signal event stream down" in captured.out + captured.err
    assert token not in captured.out + captured.err


async def test_the_owner_may_be_listed_by_aci_and_hide_their_number(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    """allowed_users holds the ACI; the envelope has no number: heard, answered by ACI."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal, allowed_users=[OWNER.uuid.upper()]):
        signal.user_says(OWNER, "number hidden", hide_number=True)
        [sent] = await signal.await_sent(1)
    assert (sent.to, sent.text) == (OWNER.uuid, "answer to number hidden")


async def status_of(h: Harness) -> dict[str, Any]:
    status: dict[str, Any] = (await h.client.get("/api/status")).json()
    return status


async def until_status(h: Harness, check: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    """Until the status page says what ``check`` wants (it has no long poll: read again)."""
    with anyio.fail_after(10):
        while not check(status := await status_of(h)):  # noqa: ASYNC110 - no event to await
            await anyio.sleep(0.02)
    return status


async def test_receipts_typing_and_empty_messages_move_the_cursor_and_nothing_else(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal) as h:
        signal.user_says(OWNER, "words")
        await signal.await_sent(1)
        signal.other_event(OWNER, "receiptMessage")
        signal.other_event(OWNER, "typingMessage")
        signal.user_says(OWNER, None)  # a sticker-like message: no text, no attachment
        await until_status(h, lambda s: s["chat.signal:phone"]["events"] == 4)
    async with daemon(tmp_path, model_server, signal):
        pass
    assert [said(r.body) for r in model_server.requests] == ["words"]
    assert signal.stream_opens[-1] is not None and signal.stream_opens[-1].endswith("-4")


async def test_an_attachment_is_a_reference_in_the_text_never_its_bytes(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    model_server.responder = echo
    photo = {"contentType": "image/jpeg", "filename": "cat.jpg", "id": "2J9xQ.jpg", "size": 48213}
    async with daemon(tmp_path, model_server, signal):
        signal.user_says(OWNER, "look", attachments=[photo])
        [request] = await model_server.await_requests(1)
    assert (
        said(request.body) == 'look\n[attachment: image/jpeg "cat.jpg", 48213 bytes, id 2J9xQ.jpg]'
    )


async def test_an_unknown_sender_is_paired_by_the_owner_before_reaching_the_model(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal, session="per-user") as h:
        signal.user_says(STRANGER, "let me in")
        [asked] = await signal.await_sent(1)
        assert asked.to == STRANGER.uuid and "pairing code" in asked.text.lower()
        assert model_server.requests == []
        code = next(line for line in asked.text.splitlines() if re.fullmatch(r"\w{4}-\w{4}", line))
        listed = (await h.client.get("/api/pairing")).json()["pending"]
        assert [(p["platform"], p["user_id"]) for p in listed] == [("signal", STRANGER.uuid)]
        answer = await h.client.post(f"/api/pairing/signal/{code}", json={"decision": "approve"})
        assert answer.status_code == 200, answer.text
        await signal.await_sent(2)  # "you're paired"
        signal.user_says(STRANGER, "now?")
        [*_, reply] = await signal.await_sent(3)
        own_session = await h.trajectory(f"signal:phone:{STRANGER.uuid}")
    assert (reply.to, reply.text) == (STRANGER.uuid, "answer to now?")
    assert [said(r.body) for r in model_server.requests] == ["now?"]
    assert [m["role"] for m in own_session][-2:] == ["user", "assistant"]


async def test_group_messages_only_from_allowed_groups_and_answered_in_the_group(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    """The allowed group's owner message is answered there; another group, and a stranger in
    the allowed group, are ignored — no pairing code is ever posted into a group."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal, allowed_groups=[GROUP]) as h:
        signal.user_says(OWNER, "in another group", group_id=OTHER_GROUP)
        signal.user_says(STRANGER, "stranger in the group", group_id=GROUP)
        signal.user_says(OWNER, "in the group", group_id=GROUP)
        [sent] = await signal.await_sent(1)
        status = (await h.client.get("/api/status")).json()["chat.signal:phone"]
    assert (sent.to, sent.text) == (f"group:{GROUP}", "answer to in the group")
    assert sent.params == {"groupId": GROUP, "message": "answer to in the group"}
    assert [said(r.body) for r in model_server.requests] == ["in the group"]
    assert status["ignored"] == 2


async def test_stop_from_signal_closes_the_model_stream(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    """ "stop" while a long reply streams aborts it, as it does from POST /api/messages."""
    model_server.push(Reply(text="a very long story " * 50, hang=True))
    async with daemon(tmp_path, model_server, signal):
        signal.user_says(OWNER, "tell me a long story")
        await model_server.await_requests(1)
        signal.user_says(OWNER, "stop")
        aborted = await model_server.await_abort(0)
    assert aborted.aborted


async def test_typing_shows_while_the_model_works(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    model_server.push(Reply(text="slow " * 10, token_delay_s=0.1))
    async with daemon(tmp_path, model_server, signal, typing_every_s=0.3):
        signal.user_says(OWNER, "think hard")
        [sent] = await signal.await_sent(1)
    assert signal.typing and {p["recipient"][0] for p, _ in signal.typing} == {OWNER.number}
    assert signal.typing[0][1] < sent.received_at


async def test_a_long_reply_arrives_in_pieces_within_signals_limit(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    text = "\n\n".join(f"Part {i}: " + "word " * 150 for i in range(8))
    model_server.push(Reply(text=text))
    async with daemon(tmp_path, model_server, signal):
        signal.user_says(OWNER, "write a lot")
        pieces = split_message(text, MAX_CHARS)
        sent = await signal.await_sent(len(pieces))
    assert len(pieces) >= 3
    assert [s.text for s in sent] == pieces
    assert all(len(s.text) <= MAX_CHARS for s in sent)


async def test_approval_by_typing_approve_runs_the_call_once(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    """Signal has no buttons: the notice says what to type, and "approve <id>" decides."""
    sections = {"notify": {"urgent": [f"chat:signal:phone#{OWNER.number}"]}}
    async with daemon(tmp_path, model_server, signal, sections=sections) as h:
        approval = await tainted_call(h, model_server)
        aid = approval["id"]
        await signal.until(lambda: any(aid in s.text for s in signal.sent), what="the notice")
        notice = next(s for s in signal.sent if aid in s.text)
        assert notice.to == OWNER.number and f'Reply "approve {aid}"' in notice.text
        model_server.push(text_reply("done"))
        signal.user_says(OWNER, f"Approve {aid}")
        await signal.until(
            lambda: any(s.text.startswith(f"approved {aid}") for s in signal.sent),
            what="the decision's answer",
        )
        listed = (await h.client.get("/api/approvals?all=1")).json()
        await signal.until(lambda: runs(tmp_path / "data") == 1, what="the call ran")
    [decided] = [a for a in listed if a["id"] == aid]
    assert decided["decision"] == "approve"
    assert decided["decided_by"] == f"signal:phone:{OWNER.number}"
    assert runs(tmp_path / "data") == 1


async def test_the_daemon_going_down_is_shown_and_nothing_is_lost_when_it_is_back(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    """signal-cli stops: the account's health says so and wakeful keeps trying; a reply
    owed meanwhile waits; what was said meanwhile arrives once it is back."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal) as h:
        signal.user_says(OWNER, "first")
        await signal.await_sent(1)
        signal.stop()
        down = await until_status(h, lambda s: not s["components"]["chat.signal:phone"]["ok"])
        assert "event stream" in down["components"]["chat.signal:phone"]["detail"]
        signal.user_says(OWNER, "said while it was down")
        signal.start()
        sent = await signal.await_sent(2)
        health = (await h.client.get("/api/status")).json()["components"]["chat.signal:phone"]
    assert [s.text for s in sent] == ["answer to first", "answer to said while it was down"]
    assert health["ok"]
    assert len(signal.stream_opens) >= 2


async def test_a_rate_limited_send_waits_signals_retry_after_then_arrives_once(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    model_server.responder = echo
    signal.fail("ratelimit", retry_after=1)
    async with daemon(tmp_path, model_server, signal):
        signal.user_says(OWNER, "hello")
        await signal.until(lambda: any(c.error == -5 for c in signal.calls), what="the 429")
        limited_at = next(c.at for c in signal.calls if c.error == -5)
        signal.recover()
        [sent] = await signal.await_sent(1)
    assert sent.text == "answer to hello"
    assert sent.received_at - limited_at >= 0.9  # not asked again before retryAfterSeconds


async def test_a_refused_recipient_is_never_retried(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    """-1 (say, an unregistered user) will not change: one attempt, the message failed."""
    model_server.responder = echo
    signal.fail("user")
    async with daemon(tmp_path, model_server, signal) as h:
        signal.user_says(OWNER, "hello")
        await signal.until(lambda: any(c.error == -1 for c in signal.calls), what="the refusal")
        with anyio.fail_after(10):
            while True:  # the outbox has no long poll: read it again until it says failed
                outbox = (await h.client.get("/api/sessions/main/outbox")).json()["messages"]
                if outbox and outbox[-1]["state"] == "failed":
                    break
                await anyio.sleep(0.02)
    assert sum(c.method == "send" for c in signal.calls) == 1


async def test_a_restart_resumes_after_the_last_event_handled(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    """wakeful down, signal-cli up: it keeps receiving; the next stream names the last id
    handled and gets exactly what came after it."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal):
        signal.user_says(OWNER, "before")
        await signal.await_sent(1)
    await signal.until(lambda: signal.open_streams == 0)
    signal.user_says(OWNER, "while wakeful was down")
    async with daemon(tmp_path, model_server, signal):
        sent = await signal.await_sent(2)
    first_id, second_id = signal.stream_opens
    assert first_id is None and second_id is not None and second_id.endswith("-1")
    assert [s.text for s in sent] == ["answer to before", "answer to while wakeful was down"]
    assert len(model_server.requests) == 2


async def test_an_envelope_delivered_twice_is_one_event(
    tmp_path: Path, model_server: FakeModelServer, signal: FakeSignalCli
) -> None:
    """Signal redelivers a message signal-cli did not acknowledge (it crashed): the event id is
    the sender and the sender's timestamp, so the store drops the second copy."""
    model_server.responder = echo
    async with daemon(tmp_path, model_server, signal):
        envelope = signal.user_says(OWNER, "once")
        await signal.await_sent(1)
        signal.deliver(envelope)
        signal.user_says(OWNER, "twice")
        sent = await signal.await_sent(2)
    assert [s.text for s in sent] == ["answer to once", "answer to twice"]
    assert [said(r.body) for r in model_server.requests] == ["once", "twice"]
