"""A `wakeful run` with one ``[[chat.xmpp]]`` account on the test Prosody, and its people."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.daemon_process import free_port, write_config
from tests.prosody_server import ProsodyServer
from tests.support.chat_config import toml_table
from tests.xmpp_user import XmppUser

ACCOUNT = "home"
PASSWORDS = {"bot": "bot-secret-31", "owner": "owner-secret-32", "stranger": "stranger-secret-33"}


def xmpp_entry(
    server: ProsodyServer, bot: str, allowed: list[str], password_file: Path, **extra: object
) -> dict[str, object]:
    """The account's entry: only what the daemon cannot do without (its JID and password,
    the server, the owner, the test CA), plus ``extra`` keys a test sets."""
    return {
        "name": ACCOUNT,
        "jid": bot,
        "password_file": str(password_file),
        # No DNS SRV record names the test server: it is given.
        "server": "127.0.0.1",
        "port": server.port,
        "ca_file": str(server.cert),  # the test server's self-signed certificate
        "allowed_jids": allowed,
        **extra,
    }


@dataclass
class XmppScene:
    server: ProsodyServer
    bot: str
    owner: str
    stranger: str
    owner_client: XmppUser
    config: Path
    port: int

    def stranger_client(self) -> XmppUser:
        return XmppUser(self.server, self.stranger, PASSWORDS["stranger"])


def register_people(server: ProsodyServer) -> tuple[str, str, str]:
    """The bot's, the owner's and a stranger's accounts: their JIDs."""
    bot, owner, stranger = (server.register(user, PASSWORDS[user]) for user in PASSWORDS)
    return bot, owner, stranger


def write_password(directory: Path) -> Path:
    password_file = directory / "xmpp-password"
    password_file.write_text(PASSWORDS["bot"] + "\n")
    password_file.chmod(0o600)
    return password_file


@contextmanager
def xmpp_scene(
    server: ProsodyServer, data_dir: Path, model_url: str, **extra: object
) -> Iterator[XmppScene]:
    bot, owner, stranger = register_people(server)
    port = free_port()
    config = write_config(data_dir, model_url, port)
    password_file = write_password(data_dir)
    entry = xmpp_entry(server, bot, [owner], password_file, **extra)
    config.write_text(config.read_text() + toml_table("chat.xmpp", entry))
    with XmppUser(server, owner, PASSWORDS["owner"]) as owner_client:
        yield XmppScene(server, bot, owner, stranger, owner_client, config, port)
