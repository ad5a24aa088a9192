"""What every config section shares: the error type, strict sections, secret files.

Channel packages define their own sections on these (``wakeful/channels/*/config.py``);
``wakeful.app.config`` composes them into the whole :class:`Settings`.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from wakeful.kernel.config_files import (
    ConfigError,
    config_dir,
    credential_path,
    read_secret_file,
    set_config_dir,
)

__all__ = [
    "ConfigError",
    "Section",
    "config_dir",
    "credential_path",
    "read_secret_file",
    "reject_repeated_names",
    "set_config_dir",
]


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_default=True)


def reject_repeated_names(names: list[str], what: str) -> None:
    """For a list-of-tables section whose entries are named: each name once."""
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{what} names must be unique; {', '.join(repeated)} repeats")
