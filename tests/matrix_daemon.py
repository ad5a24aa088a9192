"""A `wakeful run` with one ``[[chat.matrix]]`` account on the test Synapse, and its people."""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.daemon_process import free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply
from tests.synapse_server import MatrixTestClient, MatrixUser, SynapseServer

T = TypeVar("T")
ACCOUNT = "home"
TAG = re.compile(r"\bmsg-\d+\b")


def answer_tags(model_server: FakeModelServer, token_delay_s: float = 0.0) -> None:
    """The model answers "**got** <tags>", naming the msg-N tags of everything said to it
    since its last answer: which messages a reply answers can be read off the room."""

    def respond(body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        answers = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        since = messages[answers[-1] + 1 :] if answers else messages
        said = " ".join(str(m["content"]) for m in since if m["role"] == "user")
        return Reply(text="**got** " + " ".join(TAG.findall(said)), token_delay_s=token_delay_s)

    model_server.responder = respond


def wait_until(probe: Callable[[], T | None], what: str, timeout_s: float = 20.0) -> T:
    """Poll ``probe`` until it returns something truthy: a homeserver sends no event we
    could wait on from a test, so its state is read again until the deadline."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s} s")
        time.sleep(0.05)


@dataclass
class MatrixScene:
    """The bot account, its owner (allowed) and the config of a daemon answering as it."""

    synapse: SynapseServer
    bot: MatrixUser
    owner: MatrixUser
    owner_client: MatrixTestClient
    config: Path
    port: int

    def room_with_bot(self, *others: MatrixUser) -> str:
        """A room the owner makes, inviting the bot (and ``others``, who join)."""
        room = self.owner_client.create_room([self.bot.user_id, *(u.user_id for u in others)])
        for other in others:
            with MatrixTestClient(self.synapse.url, other) as client:
                client.join(room)
        return room

    def wait_joined(self, room: str) -> None:
        wait_until(
            lambda: self.owner_client.members(room).get(self.bot.user_id) == "join",
            f"the bot joining {room}",
        )

    def bot_replies(self, room: str) -> list[dict[str, Any]]:
        return self.owner_client.replies_from(room, self.bot.user_id)

    def wait_replies(self, room: str, count: int, timeout_s: float = 20.0) -> list[dict[str, Any]]:
        return wait_until(
            lambda: (replies := self.bot_replies(room)) and len(replies) >= count and replies,
            f"{count} replies from the bot in {room}",
            timeout_s,
        )


def matrix_section(
    synapse: SynapseServer,
    bot: MatrixUser,
    allowed: list[str],
    secret: Path,
    *,
    password: bool,
    session: str = "main",
    tuned: bool = True,
) -> str:
    """The account's section; ``tuned``: a short long poll and typing renewal, so a test
    sees a restart's first sync and the typing notice sooner. Untuned: only what the
    daemon cannot do without (homeserver, account, credential, owner)."""
    secret.write_text((bot.password if password else bot.access_token) + "\n")
    secret.chmod(0o600)
    key = "password_file" if password else "access_token_file"
    quoted = ", ".join(f'"{user}"' for user in allowed)
    lines = [
        "[[chat.matrix]]",
        f'name = "{ACCOUNT}"',
        f'homeserver = "{synapse.url}"',
        f'user_id = "{bot.user_id}"',
        f'{key} = "{secret}"',
        f"allowed_users = [{quoted}]",
    ]
    if session != "main":  # the default
        lines.append(f'session = "{session}"')
    if tuned:
        lines += ["sync_timeout_s = 5", "typing_every_s = 2"]
    return "\n".join([*lines, ""])


@contextmanager
def matrix_scene(
    synapse: SynapseServer,
    data_dir: Path,
    model_url: str,
    *,
    password: bool = False,
    also_allowed: tuple[MatrixUser, ...] = (),
    session: str = "main",
    tuned: bool = True,
) -> Iterator[MatrixScene]:
    bot, owner = synapse.register(), synapse.register()
    port = free_port()
    config = write_config(data_dir, model_url, port)
    allowed = [owner.user_id, *(user.user_id for user in also_allowed)]
    secret = data_dir / "matrix-secret"
    section = matrix_section(
        synapse, bot, allowed, secret, password=password, session=session, tuned=tuned
    )
    config.write_text(config.read_text() + section)
    with MatrixTestClient(synapse.url, owner) as owner_client:
        yield MatrixScene(synapse, bot, owner, owner_client, config, port)
