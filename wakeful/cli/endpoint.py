"""Where the running daemon listens and the admin token a client shows it.

A client command (``wakeful status``, ``send``, ``events`` …) needs three facts
of the configuration: ``[server] bind``, the admin token and the data
directory it may sit in. Validating the whole config for that imports pydantic
and every channel's sections (most of a second); this reads the three facts
with the standard library, the same way the daemon's config does
(:mod:`wakeful.kernel.config_files` is shared by both).

Anything this does not know exactly how the full config reads — a value of
another type, an environment override of another ``[server]`` or ``[daemon]``
key, a file that is not valid TOML — is left to the full config
(:func:`wakeful.app.config.load_settings`), so the answer and its errors are
the daemon's own. Errors in sections a client does not use are the daemon's to
report; the client does not validate them.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wakeful.kernel.config_files import (
    ADMIN_TOKEN_FILENAME,
    default_data_dir,
    read_secret_file,
    set_config_dir,
    split_bind,
)

DEFAULT_BIND = "127.0.0.1:8787"
ENV_PREFIX = "WAKEFUL_"
# The only environment overrides the fast path reads; any other WAKEFUL_SERVER__* or
# WAKEFUL_DAEMON__* variable sends the client to the full config.
_ENV_KEYS = {
    "WAKEFUL_SERVER__BIND": ("server", "bind"),
    "WAKEFUL_SERVER__ADMIN_TOKEN": ("server", "admin_token"),
    "WAKEFUL_SERVER__ADMIN_TOKEN_FILE": ("server", "admin_token_file"),
    "WAKEFUL_DAEMON__DATA_DIR": ("daemon", "data_dir"),
}


@dataclass(frozen=True)
class Endpoint:
    """The daemon as a client reaches it; ``token`` None: the daemon never ran here."""

    url: str
    token: str | None
    token_origin: str
    data_dir: Path


class NotPlain(Exception):
    """The configuration needs the full config to be read exactly."""


def base_url(bind: tuple[str, int]) -> str:
    host, port = bind
    # A wildcard bind listens everywhere; the local client reaches it on loopback.
    host = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    if ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}"


def endpoint(config: Path | None) -> Endpoint:
    """The daemon's address and token for the config file ``config`` (None: defaults)."""
    try:
        return _plain_endpoint(config)
    except NotPlain:
        return _full_endpoint(config)


def _plain_endpoint(config: Path | None) -> Endpoint:
    server, daemon = _sections(config)
    bind = _text(server, "bind", DEFAULT_BIND) or ""
    try:
        host_port = split_bind(bind)
    except ValueError:
        raise NotPlain from None  # the full config says what is wrong, as the daemon would
    raw_dir = _text(daemon, "data_dir", None)
    data_dir = Path(raw_dir).expanduser() if raw_dir else default_data_dir()
    token_text = _text(server, "admin_token", None)
    token_file = _text(server, "admin_token_file", None)
    set_config_dir(config.resolve().parent if config is not None else None)
    if token_text:
        token: str | None = token_text
        origin = "[server] admin_token"
    elif token_file:
        token = read_secret_file(Path(token_file), "server.admin_token_file")
        origin = token_file
    else:
        generated = data_dir / ADMIN_TOKEN_FILENAME
        origin = str(generated)
        token = read_secret_file(generated, "server.admin_token") if generated.exists() else None
    return Endpoint(base_url(host_port), token, origin, data_dir)


def _sections(config: Path | None) -> tuple[dict[str, Any], dict[str, Any]]:
    data: dict[str, Any] = {}
    if config is not None:
        try:
            data = tomllib.loads(config.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            raise NotPlain from None
    server, daemon = data.get("server", {}), data.get("daemon", {})
    if not isinstance(server, dict) or not isinstance(daemon, dict):
        raise NotPlain
    server, daemon = dict(server), dict(daemon)
    for name, value in os.environ.items():
        upper = name.upper()
        if not upper.startswith(("WAKEFUL_SERVER", "WAKEFUL_DAEMON")):
            continue
        if upper not in _ENV_KEYS:
            raise NotPlain  # e.g. WAKEFUL_SERVER='{"bind": …}': the full config's reading
        section, key = _ENV_KEYS[upper]
        (server if section == "server" else daemon)[key] = value  # the env wins, as there
    return server, daemon


def _text(section: dict[str, Any], key: str, default: str | None) -> str | None:
    value = section.get(key, default)
    if value is not None and not isinstance(value, str):
        raise NotPlain
    return value


def _full_endpoint(config: Path | None) -> Endpoint:
    # Imported here: pydantic and every section, only for configs the fast path leaves.
    from wakeful.app.config import load_settings

    settings = load_settings(config)
    server = settings.server
    data_dir = settings.daemon.data_dir_path()  # a client creates nothing
    token = server.client_admin_token(data_dir)
    if server.admin_token is not None:
        origin = "[server] admin_token"
    elif server.admin_token_file is not None:
        origin = str(server.admin_token_file)
    else:
        origin = str(data_dir / ADMIN_TOKEN_FILENAME)
    return Endpoint(base_url(server.host_port()), token, origin, data_dir)
