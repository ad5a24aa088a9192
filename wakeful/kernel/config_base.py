"""What every config section shares: the error type, strict sections, secret files.

Channel packages define their own sections on these (``wakeful/channels/*/config.py``);
``wakeful.app.config`` composes them into the whole :class:`Settings`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict

from wakeful.kernel.config_files import (
    ConfigError,
    config_dir,
    credential_path,
    read_secret_file,
    set_config_dir,
)
from wakeful.kernel.logging import add_secrets

__all__ = [
    "ConfigError",
    "Section",
    "config_dir",
    "credential_path",
    "read_secret",
    "read_secret_file",
    "reject_repeated_names",
    "set_config_dir",
]


def read_secret(path: Path, key: str) -> str:
    """read_secret_file's value, kept out of every log line from here on (before anything
    can fail and log it): how a section reads a secret from its file."""
    secret = read_secret_file(path, key)
    add_secrets([secret])
    return secret


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


def reject_repeated_names(names: list[str], what: str) -> None:
    """For a list-of-tables section whose entries are named: each name once."""
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{what} names must be unique; {', '.join(repeated)} repeats")
