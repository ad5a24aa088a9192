"""A chat account's secret is redacted from every log line (and tool output) the moment
it is read from its file: the config's own reader does it (read_secret), so no caller
can read one and forget to. Each platform whose config reads its secrets itself, and
e-mail's account password."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from wakeful.channels.email.config import EmailAccountConfig
from wakeful.channels.irc.config import IrcConfig
from wakeful.channels.matrix.config import MatrixConfig
from wakeful.channels.signal.config import SignalConfig
from wakeful.channels.xmpp.config import XmppConfig
from wakeful.kernel.logging import redact_text

MATRIX = {"name": "mx", "homeserver": "https://matrix.example.org", "user_id": "@w:example.org"}
# Per platform: the config holding a secret file (by its key), and the read of it.
READERS: dict[str, tuple[Callable[[str], Any], Callable[[Any], object]]] = {
    "signal": (
        lambda path: SignalConfig(name="s", url="http://127.0.0.1:1", auth_token_file=path),
        lambda config: config.auth_token(),
    ),
    "xmpp": (
        lambda path: XmppConfig(name="x", jid="w@example.org", password_file=path),
        lambda config: config.password(),
    ),
    "irc sasl": (
        lambda path: IrcConfig(
            name="i", server="irc.example.org", nick="w", sasl_username="w",
            sasl_password_file=path,
        ),
        lambda config: config.sasl_password(),
    ),
    "irc server": (
        lambda path: IrcConfig(
            name="i", server="irc.example.org", nick="w", server_password_file=path
        ),
        lambda config: config.server_password(),
    ),
    "matrix token": (
        lambda path: MatrixConfig(**MATRIX, access_token_file=path),
        lambda config: config.credential(),
    ),
    "email": (
        lambda path: EmailAccountConfig(
            name="e", imap_host="imap.example.org", smtp_host="smtp.example.org",
            username="w@example.org", password_file=path,
        ),
        lambda config: config.resolve_password(),
    ),
    "matrix password": (
        lambda path: MatrixConfig(**MATRIX, password_file=path),
        lambda config: config.credential(),
    ),
}  # fmt: skip


@pytest.mark.parametrize("platform", READERS)
def test_a_secret_is_redacted_as_soon_as_its_config_reads_it(platform: str, tmp_path: Path) -> None:
    secret = f"secret-{secrets.token_hex(8)}"  # new each run: never redacted before
    path = tmp_path / "secret"
    path.write_text(secret + "\n")
    path.chmod(0o600)
    make, read = READERS[platform]
    config = make(str(path))
    assert redact_text(f"said {secret}") == f"said {secret}"  # not yet read
    read(config)
    assert redact_text(f"said {secret}") == "said [REDACTED]"
