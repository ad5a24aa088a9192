"""A `wakeful run` config with one chat platform's table appended."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.daemon_process import free_port, write_config


def toml_table(name: str, entry: dict[str, Any]) -> str:
    """One ``[[name]]`` table; JSON's strings, numbers and lists are valid TOML values."""
    lines = [f"[[{name}]]", *(f"{key} = {json.dumps(value)}" for key, value in entry.items())]
    return "\n".join(lines) + "\n"


def chat_config(
    tmp_path: Path, model_url: str, section: str | Callable[[int], str]
) -> tuple[Path, int]:
    """A daemon config in ``tmp_path/data`` on a free port, with ``section`` appended (or
    what it makes of the port: a webhook's public URL names it)."""
    port = free_port()
    config = write_config(tmp_path / "data", model_url, port)
    with config.open("a") as toml:
        toml.write(section if isinstance(section, str) else section(port))
    return config, port
