"""A key's line of the written config: its TOML value (wakeful/kernel/config_files.py,
the one writer of TOML values), and its note as a trailing comment."""

from __future__ import annotations

from collections.abc import Sequence

from wakeful.kernel.config_files import toml_value


def key_line(
    key: str, value: str | int | bool | Sequence[str] | Sequence[int], note: str = ""
) -> str:
    line = f"{key} = {toml_value(value)}"
    return f"{line:<39} # {note}" if note else line
