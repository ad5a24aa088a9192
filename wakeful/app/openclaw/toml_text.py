"""TOML values for the written config: strings escaped so any text reads back as itself."""

from __future__ import annotations

from collections.abc import Sequence


def toml_string(text: str) -> str:
    """A TOML basic string whose value is ``text`` (control characters escaped)."""
    out = ['"']
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def toml_value(value: str | int | bool | Sequence[str] | Sequence[int]) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return toml_string(value)
    return "[" + ", ".join(toml_value(item) for item in value) + "]"


def key_line(
    key: str, value: str | int | bool | Sequence[str] | Sequence[int], note: str = ""
) -> str:
    line = f"{key} = {toml_value(value)}"
    return f"{line:<39} # {note}" if note else line
