"""A `wakeful run` with one ``[[chat.xmpp]]`` account on the test Prosody, and its people."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.daemon_process import free_port, write_config
from tests.prosody_server import ProsodyServer
from tests.xmpp_user import XmppUser

ACCOUNT = "home"
PASSWORDS = {"bot": "bot-secret-31", "owner": "owner-secret-32", "stranger": "stranger-secret-33"}


def xmpp_section(
    server: ProsodyServer, bot: str, allowed: list[str], password_file: Path, **extra: object
) -> str:
    """The account's section: only what the daemon cannot do without (its JID and password,
    the server, the owner, the test CA), plus ``extra`` keys a test sets."""
    quoted = ", ".join(f'"{jid}"' for jid in allowed)
    lines = [
        "[[chat.xmpp]]",
        f'name = "{ACCOUNT}"',
        f'jid = "{bot}"',
        f'password_file = "{password_file}"',
        'server = "127.0.0.1"',
        f"port = {server.port}",
        f'ca_file = "{server.cert}"',  # the test server's self-signed certificate
        f"allowed_jids = [{quoted}]",
        *(f"{key} = {_toml(value)}" for key, value in extra.items()),
    ]
    return "\n".join([*lines, ""])


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)


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


@contextmanager
def xmpp_scene(
    server: ProsodyServer, data_dir: Path, model_url: str, **extra: object
) -> Iterator[XmppScene]:
    bot, owner, stranger = (server.register(user, PASSWORDS[user]) for user in PASSWORDS)
    port = free_port()
    config = write_config(data_dir, model_url, port)
    password_file = data_dir / "xmpp-password"
    password_file.write_text(PASSWORDS["bot"] + "\n")
    password_file.chmod(0o600)
    config.write_text(config.read_text() + xmpp_section(server, bot, [owner], password_file, **extra))
    with XmppUser(server, owner, PASSWORDS["owner"]) as owner_client:
        yield XmppScene(server, bot, owner, stranger, owner_client, config, port)
