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


# The directory of the config file last loaded (``load_settings`` sets it): where a
# relative ``*_file`` is found outside systemd, so the CLI on the same host reads the
# same secrets as the service (/etc/wakeful/credentials/admin-token).
_config_dir: Path | None = None


def set_config_dir(directory: Path | None) -> None:
    global _config_dir
    _config_dir = directory


def config_dir() -> Path | None:
    """The directory of the config file last loaded, if any."""
    return _config_dir


def credential_path(path: Path) -> Path:
    """Where a ``*_file`` is read from.

    Absolute: as written. Relative: a systemd credential (``LoadCredential=``) in
    ``$CREDENTIALS_DIRECTORY`` when set; else ``credentials/<name>`` or ``<name>``
    beside the config file; else relative to the working directory.
    """
    path = path.expanduser()
    if path.is_absolute():
        return path
    credentials = os.environ.get("CREDENTIALS_DIRECTORY")
    if credentials:
        return Path(credentials) / path
    if _config_dir is not None:
        beside = [_config_dir / "credentials" / path, _config_dir / path]
        return next((candidate for candidate in beside if candidate.exists()), beside[0])
    return path


def read_secret_file(path: Path, key: str) -> str:
    path = credential_path(path)
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror or exc}") from None
    if not value:
        raise ConfigError(f"{key}: {path} is empty; put the secret on its first line")
    return value


def reject_repeated_names(names: list[str], what: str) -> None:
    """For a list-of-tables section whose entries are named: each name once."""
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{what} names must be unique; {', '.join(repeated)} repeats")
