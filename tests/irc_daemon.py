"""The IRC tests' daemon: in-process, against a real ngircd and the fake model."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from tests.daemon_harness import Harness, daemon_settings, harness, last_user_text
from tests.fakes.model_server import FakeModelServer, Reply
from tests.irc_user import IrcUser, Said
from tests.ngircd_server import Ngircd

OWNER = "owner"
STRANGER = "stranger"
BOT = "wakeful"
CHANNEL = "#home"
# ngircd without ident and DNS shows users as nick!~user@127.0.0.1.
OWNER_MASK = f"{OWNER}!*@127.0.0.1"


def irc_config(server: Ngircd, **overrides: Any) -> dict[str, Any]:
    """A [[chat.irc]] entry for the test server; everything else at its default. The
    server speaks plain text on a loopback port (ngircd here has no certificate)."""
    return {
        "name": "net",
        "server": "127.0.0.1",
        "port": server.port,
        "tls": False,
        "nick": BOT,
        "channels": [CHANNEL],
        "allowed_users": [OWNER_MASK],
        **overrides,
    }


def said(body: dict[str, Any]) -> str:
    """The last user message of a model request, without the time the daemon puts before it."""
    return re.sub(r"^\[[^\]]*\] ", "", last_user_text(body))


def echo(body: dict[str, Any]) -> Reply:
    return Reply(text=f"answer to {said(body)}")


@asynccontextmanager
async def irc_daemon(
    tmp_path: Path, model: FakeModelServer, server: Ngircd, **overrides: Any
) -> AsyncIterator[Harness]:
    sections: dict[str, Any] = {"chat": {"irc": [irc_config(server, **overrides.pop("irc", {}))]}}
    settings = daemon_settings(tmp_path / "data", model.base_url, **sections, **overrides)
    async with harness(settings) as h:
        yield h


async def wait_said(
    user: IrcUser, predicate: Callable[[list[Said]], bool], what: str, timeout_s: float = 20.0
) -> list[Said]:
    return await anyio.to_thread.run_sync(lambda: user.wait_said(predicate, timeout_s, what))


async def from_bot(
    user: IrcUser, count: int, what: str = "", timeout_s: float = 20.0
) -> list[Said]:
    """Until ``count`` messages from the bot (any nick starting with wakeful) arrived."""
    said_ = await wait_said(
        user,
        lambda s: (
            len([m for m in s if m.sender.startswith(BOT) and m.command == "PRIVMSG"]) >= count
        ),
        what or f"{count} messages from the bot",
        timeout_s,
    )
    return [m for m in said_ if m.sender.startswith(BOT) and m.command == "PRIVMSG"]


async def irc_status(h: Harness) -> dict[str, Any]:
    status: dict[str, Any] = (await h.client.get("/api/status")).json()
    return status


async def until_connected(h: Harness, *, connections: int = 1, timeout_s: float = 20.0) -> None:
    """Until the bot has registered with the server ``connections`` times in all."""
    with anyio.fail_after(timeout_s):
        while True:
            entry = (await irc_status(h)).get("chat.irc:net", {})
            if entry.get("connected") and entry.get("connections", 0) >= connections:
                return
            await anyio.sleep(0.05)  # the status page has no long poll


async def until_healthy(h: Harness, ok: bool, timeout_s: float = 20.0) -> dict[str, Any]:
    """Until the connection's health is ``ok``; that health."""
    with anyio.fail_after(timeout_s):
        while True:
            health: dict[str, Any] = (await irc_status(h))["components"]["chat.irc:net"]
            if health["ok"] == ok:
                return health
            await anyio.sleep(0.05)  # the status page has no long poll


def sees_in_channel(line: str, viewer: str, nick: str) -> bool:
    """``line`` shows ``nick`` in CHANNEL to ``viewer``: its JOIN, or the names list."""
    joined = line.startswith(f":{nick}!") and line.split(" ")[1:3] in (
        ["JOIN", CHANNEL],
        ["JOIN", f":{CHANNEL}"],
    )
    names = [name.lstrip("~&@%+") for name in line.rpartition(":")[2].split()]
    listed = f" 353 {viewer} " in line and nick in names
    return joined or listed


async def join_with_bot(user: IrcUser, nick: str = BOT) -> None:
    """The user joins CHANNEL and waits until the bot is in it too."""
    user.join(CHANNEL)
    await anyio.to_thread.run_sync(
        lambda: user.wait_line(
            lambda line: sees_in_channel(line, user.nick, nick), what="the bot in the channel"
        )
    )


async def until_outbox(
    h: Harness, predicate: Callable[[dict[str, Any]], bool], timeout_s: float = 20.0
) -> dict[str, Any]:
    """Until a message in main's outbox matches ``predicate``; that message."""
    with anyio.fail_after(timeout_s):
        while True:
            listed = (await h.client.get("/api/sessions/main/outbox")).json()["messages"]
            found = next((m for m in listed if predicate(m)), None)
            if found is not None:
                return dict(found)
            await anyio.sleep(0.05)  # the outbox has no long poll
