"""What every chat platform shares, through the real daemon: the sender check,
pairing, the cursor committed with the event, chunked exactly-once delivery,
typing while a run is active."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.chat_loopback import LoopbackChat
from tests.daemon_harness import ADMIN_TOKEN, Harness, daemon_settings, watch_feed
from tests.fakes.model_replies import Reply, ToolCallSpec, text_reply
from tests.fakes.model_server import FakeModelServer
from wakeful.app.components import default_components
from wakeful.app.lifespan import running_daemon
from wakeful.channels.chat.chunking import split_message
from wakeful.channels.chat.inbound import PAIRED_TEXT, PlatformMessage, Received
from wakeful.cli import main as cli
from wakeful.store.base import ChannelState, Cursor

pytestmark = pytest.mark.anyio
OWNER, STRANGER = "111", "999"


def message(n: int, text: str, user: str = OWNER) -> PlatformMessage:
    return PlatformMessage(str(n), user, f"user {user}", f"chat-{user}", text)


def cursor(n: int) -> Cursor:
    return Cursor("telegram:loop:offset", str(n + 1))


async def start(tmp_path: Path, model_server: FakeModelServer, chat: LoopbackChat):  # type: ignore[no-untyped-def]
    settings = daemon_settings(tmp_path / "data", model_server.base_url)
    return running_daemon(settings, [*default_components(settings), chat])


async def test_an_owners_message_reaches_the_model_once_and_the_reply_goes_back_there(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.push(text_reply("hello from the agent"))
    chat = LoopbackChat({OWNER})
    async with await start(tmp_path, model_server, chat) as running:
        assert chat.inbound is not None
        assert await chat.inbound.receive(message(1, "hi"), cursor=cursor(1)) is Received.SUBMITTED
        sent = await chat.client.wait_sent(1)
        assert sent[0][:2] == (f"chat-{OWNER}", "hello from the agent")
        # Read again (a restart before the platform saw our offset): nothing new happens.
        assert await chat.inbound.receive(message(1, "hi"), cursor=cursor(1)) is Received.DUPLICATE
        assert await state(chat).get_state("telegram:loop:offset") == "2"
        events = await running.daemon.event_log("main")
        assert [e["id"] for e in events] == ["telegram:loop:1"]
        assert events[0]["source"] == {
            "type": "telegram", "principal": OWNER, "trusted": True, "name": f"user {OWNER}",
        }  # fmt: skip
    assert len(model_server.requests) == 1


async def test_a_stranger_is_asked_to_pair_and_reaches_the_model_only_once_approved(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    chat = LoopbackChat({OWNER})
    async with await start(tmp_path, model_server, chat) as running:
        assert chat.inbound is not None
        got = await chat.inbound.receive(message(1, "let me in", STRANGER), cursor=cursor(1))
        assert got is Received.PAIRING
        ((address, text, _),) = await chat.client.wait_sent(1)
        assert address == f"chat-{STRANGER}" and "pairing code" in text
        code = re.search(r"^([A-Z0-9]{4}-[A-Z0-9]{4})$", text, re.MULTILINE)
        assert code is not None, text  # the code on a line of its own
        # Writing again at once: no second code, no reply storm; the cursor still moves.
        assert await chat.inbound.receive(message(2, "hello?", STRANGER), cursor=cursor(2)) is (
            Received.PAIRING
        )
        assert await state(chat).get_state("telegram:loop:offset") == "3"
        assert len(chat.client.sent) == 1 and model_server.requests == []

        config = write_cli_config(tmp_path, running.url)
        listing = await run_cli(["-c", str(config), "pairing", "list"])
        assert code.group(1) in listing and STRANGER in listing
        approved = await run_cli(
            ["-c", str(config), "pairing", "approve", "telegram", code.group(1).lower()]
        )
        assert f"user {STRANGER} on telegram (loop) is let in" in approved
        sent = await chat.client.wait_sent(2)
        assert sent[1][:2] == (f"chat-{STRANGER}", PAIRED_TEXT)

        model_server.push(text_reply("welcome"))
        assert await chat.inbound.receive(message(3, "thanks!", STRANGER)) is Received.SUBMITTED
        sent = await chat.client.wait_sent(3)
        assert sent[2][:2] == (f"chat-{STRANGER}", "welcome")
    assert len(model_server.requests) == 1


async def test_a_denied_stranger_is_not_answered_again(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    chat = LoopbackChat({OWNER})
    async with await start(tmp_path, model_server, chat) as running:
        assert chat.inbound is not None
        await chat.inbound.receive(message(1, "hi", STRANGER))
        ((_, text, _),) = await chat.client.wait_sent(1)
        code = text.split("\n\n")[2]
        config = write_cli_config(tmp_path, running.url)
        out = await run_cli(["-c", str(config), "pairing", "deny", "telegram", code])
        assert "kept out" in out
        assert await chat.inbound.receive(message(2, "hi again", STRANGER)) is Received.IGNORED
        assert len(chat.client.sent) == 1 and model_server.requests == []
        # A code that is no longer pending: one line saying why, exit 1.
        code_now, out = await run_cli_code(
            ["-c", str(config), "pairing", "approve", "telegram", code]
        )
        assert code_now == 1 and "no pending pairing code" in out


async def test_a_long_reply_is_sent_in_pieces_and_a_failed_piece_resends_only_itself(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    paragraphs = [f"paragraph {i} " + "word " * 30 for i in range(6)]
    model_server.push(text_reply("\n\n".join(paragraphs)))
    chat = LoopbackChat({OWNER}, max_chars=400)
    chat.client.fail_next = 0
    async with await start(tmp_path, model_server, chat):
        assert chat.inbound is not None

        original = chat.client.send_text
        calls = 0

        async def fail_the_second_piece_once(address: str, text: str, *, ref: str) -> None:
            nonlocal calls
            calls += 1
            if calls == 2:
                from wakeful.core.outbox.channels import TryLater

                raise TryLater("the platform is down (scripted)")
            await original(address, text, ref=ref)

        chat.client.send_text = fail_the_second_piece_once  # type: ignore[method-assign]
        await chat.inbound.receive(message(1, "write a lot"))
        pieces = split_message("\n\n".join(paragraphs), 400)
        sent = await chat.client.wait_sent(len(pieces), timeout_s=30)
        assert [text for _, text, _ in sent] == pieces  # each once, in order
        assert len({ref for _, _, ref in sent}) == len(pieces)


async def test_typing_shows_while_the_run_is_active(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.push(Reply(text="slow " * 20, token_delay_s=0.02))
    chat = LoopbackChat({OWNER})
    async with await start(tmp_path, model_server, chat):
        assert chat.inbound is not None and chat.indicator is not None
        await chat.inbound.receive(message(1, "hi"))
        await chat.client.wait_typing()
        await chat.client.wait_sent(1)
        assert set(chat.client.typing) == {f"chat-{OWNER}"}
        with anyio.fail_after(10):  # the run goes idle: typing stops
            await chat.indicator.wait_stopped()
        stopped_at = len(chat.client.typing)
        await anyio.sleep(0.2)  # four typing periods: an indicator still going would show
        assert len(chat.client.typing) == stopped_at


@given(st.text(alphabet=st.sampled_from("ab \n`"), max_size=2000), st.integers(16, 300))
def test_split_message_keeps_every_piece_within_the_limit(text: str, limit: int) -> None:
    pieces = split_message(text, limit)
    assert all(len(piece) <= limit for piece in pieces)
    if "```" not in text:
        joined = "".join(pieces).replace(" ", "").replace("\n", "")
        assert joined == text.replace(" ", "").replace("\n", "")


def test_split_message_closes_and_reopens_a_code_fence() -> None:
    text = "intro\n\n```python\n" + "\n".join(f"x = {i}" for i in range(80)) + "\n```\nafter"
    pieces = split_message(text, 200)
    assert len(pieces) > 1
    for piece in pieces:
        assert piece.count("```") % 2 == 0, piece
    assert pieces[1].startswith("```python\n")


def state(chat: LoopbackChat) -> ChannelState:
    assert chat.state is not None
    return chat.state


def write_cli_config(tmp_path: Path, url: str) -> Path:
    port = url.rsplit(":", 1)[1]
    path = tmp_path / "cli.toml"
    path.write_text(
        f'[daemon]\ndata_dir = "{tmp_path / "cli-data"}"\n'
        f'[server]\nbind = "127.0.0.1:{port}"\nadmin_token = "{ADMIN_TOKEN}"\n'
    )
    return path


async def run_cli(argv: list[str]) -> str:
    code, out = await run_cli_code(argv)
    assert code == 0, out
    return out


async def run_cli_code(argv: list[str]) -> tuple[int, str]:
    import contextlib
    import io

    def call() -> tuple[int, str]:
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            code = cli.main(argv)
        return code, buffer.getvalue()

    return await anyio.to_thread.run_sync(call)


async def test_a_notification_reaches_the_user_where_they_last_wrote_even_after_a_restart(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """send_user_notification from a timer's run (no chat message answered): it goes
    to the chat the owner last wrote from — remembered in the store across a restart."""
    model_server.push(text_reply("noted"))
    chat = LoopbackChat({OWNER})
    async with await start(tmp_path, model_server, chat):
        assert chat.inbound is not None
        await chat.inbound.receive(message(1, "remember me"))
        await chat.client.wait_sent(1)
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("send_user_notification",
                                       {"text": "the build broke", "urgency": "high"})]),
        text_reply(""),
    )  # fmt: skip
    chat = LoopbackChat({OWNER})
    settings = daemon_settings(tmp_path / "data", model_server.base_url)
    async with running_daemon(settings, [*default_components(settings), chat]) as running:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        async with httpx.AsyncClient(base_url=running.url, headers=headers) as client:
            async with watch_feed(Harness(running, client)) as feed:
                await running.daemon.submit(timer_event())
                sent = await chat.client.wait_sent(1)
                assert sent[0][:2] == (f"chat-{OWNER}", "the build broke")
                # High urgency: the web page has it too, unread until seen.
                await feed.wait_for(lambda item: item["type"] == "reply")
            unread = (await client.get("/api/sessions/main/outbox", params={"unread": 1})).json()
        assert [(m["channel"], m["text"]) for m in unread["messages"]] == [
            ("chat:web", "the build broke")
        ]


def timer_event():  # type: ignore[no-untyped-def]
    from wakeful.kernel.events import Event

    return Event.parse({
        "id": "timer:nightly:1", "kind": "timer.trigger",
        "source": {"type": "timer", "principal": "nightly", "trusted": True},
        "channel": "timer:nightly", "content": {"text": "check the build"},
    })  # fmt: skip


async def test_the_chat_guides_commands_run_as_written(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """docs/chat.md's ```sh lines, exactly as written, against a daemon holding the
    two pairing requests they name (the config found through $WAKEFUL_CONFIG)."""
    import json
    import os
    import subprocess
    import sys
    import time
    from dataclasses import asdict

    from tests.test_documented_commands import ROOT, shell_lines
    from wakeful.channels.chat.pairing import PairingRequest, code_key, pending_key

    lines = shell_lines(ROOT / "docs" / "chat.md")
    assert lines == [
        "wakeful pairing list",
        "wakeful pairing approve telegram ABCD-EFGH",
        "wakeful pairing deny slack WXYZ-2345",
    ]
    chat = LoopbackChat({OWNER})
    async with await start(tmp_path, model_server, chat) as running:
        now = time.time()
        for platform, name, code, user in (("telegram", "loop", "ABCDEFGH", "5"),
                                           ("slack", "work", "WXYZ2345", "U7")):  # fmt: skip
            request = PairingRequest(platform, name, code, user, None, f"chat-{user}", "main",
                                     now, now)  # fmt: skip
            await state(chat).put_state(code_key(platform, code), json.dumps(asdict(request)))
            await state(chat).put_state(pending_key(platform, name, user), code)
        env = {
            **os.environ,
            "WAKEFUL_CONFIG": str(write_cli_config(tmp_path, running.url)),
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        }

        def run(line: str) -> str:
            done = subprocess.run(line, shell=True, env=env, capture_output=True, text=True)
            assert done.returncode == 0, (line, done.stdout, done.stderr)
            return done.stdout

        outputs = [await anyio.to_thread.run_sync(run, line) for line in lines]
    assert "ABCD-EFGH" in outputs[0] and "WXYZ-2345" in outputs[0]
    assert "is let in" in outputs[1] and "kept out" in outputs[2]
    sent = await chat.client.wait_sent(1)
    assert sent[0][:2] == ("chat-5", PAIRED_TEXT)


def test_per_user_sessions_are_valid_names_for_any_user_id() -> None:
    """A Matrix id with '=' or '/' (allowed there) still names a session; two differ."""
    from unittest.mock import MagicMock

    from wakeful.channels.chat.inbound import ChatInbound
    from wakeful.kernel.events import SESSION_PATTERN

    inbound = ChatInbound(
        platform="matrix", name="mx", session="per-user", allowed=(), setup=MagicMock()
    )
    assert inbound.session_for("@ada:example.org") == "matrix:mx:@ada:example.org"
    odd = [inbound.session_for("@a=b/c:example.org"), inbound.session_for("@a_b_c:example.org")]
    assert all(SESSION_PATTERN.match(name) for name in odd) and odd[0] != odd[1]


def test_the_platform_names_are_the_chat_sections_fields() -> None:
    """One list names the platforms for the pairing API and `wakeful pairing`; it must
    be the [chat] section's, or a new platform's strangers could never be let in."""
    from wakeful.app.chat_section import ChatSection
    from wakeful.channels.chat.platforms import PLATFORMS

    assert sorted(PLATFORMS) == sorted(ChatSection.model_fields)
