"""What every config section shares: the error type, strict sections, secret files.

Channel packages define their own sections on these (``wakeful/channels/*/config.py``);
``wakeful.daemon.config`` composes them into the whole :class:`Settings`.
"""

from __future__ import annotations

import os
from pathlib import Path

from pydantic import BaseModel, ConfigDict


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key and the fix."""


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


def credential_path(path: Path) -> Path:
    """A relative ``*_file`` names a systemd credential (``LoadCredential=``) when
    ``$CREDENTIALS_DIRECTORY`` is set; otherwise paths are used as written."""
    credentials = os.environ.get("CREDENTIALS_DIRECTORY")
    path = path.expanduser()
    return Path(credentials) / path if credentials and not path.is_absolute() else path


def read_secret_file(path: Path, key: str) -> str:
    path = credential_path(path)
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror or exc}") from None
    if not value:
        raise ConfigError(f"{key}: {path} is empty; put the secret on its first line")
    return value
