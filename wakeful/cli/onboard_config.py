"""What `wakeful onboard` writes: ``wakeful init``'s commented starter config with the
answers put into its lines, and each secret in its own mode-0600 file beside it.

The starter template stays the one source of the file's comments: a line it no longer
has is an error here (a test renders every answer), not a silently missing setting.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wakeful.app.config_starter import STARTER_CONFIG
from wakeful.kernel.config_files import toml_value as _toml
from wakeful.kernel.config_files import write_private

COMMENT_COLUMN = 40  # where the template's trailing comments start
# The last line of the template's commented chat examples: the real entries go after it.
CHAT_ANCHOR = '# allowed_users = ["@me:example.org"]\n'


@dataclass
class ChatAccount:
    """One ``[[chat.<platform>]]`` entry: plain keys, and secrets by their ``*_file`` key."""

    platform: str  # "telegram" | "slack" | "matrix" | "discord"
    name: str
    keys: dict[str, Any] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # "bot_token_file" → the token
    checked: str = ""  # what the live check said (the bot's name), for the comment


@dataclass
class Answers:
    base_url: str
    model: str
    api_key: str | None  # None: the config keeps api_key_env (a server without keys)
    data_dir: Path
    bind: str
    chats: list[ChatAccount] = field(default_factory=list)


def secret_path(config: Path, name: str) -> Path:
    """Where a secret is kept: beside the config, named for what it is."""
    return config.resolve().parent / name


def secret_files(config: Path, answers: Answers) -> dict[Path, str]:
    files: dict[Path, str] = {}
    if answers.api_key is not None:
        files[secret_path(config, "model-api-key")] = answers.api_key
    for chat in answers.chats:
        for key, value in chat.secrets.items():
            stem = key.removesuffix("_file").replace("_", "-")
            files[secret_path(config, f"{chat.platform}-{chat.name}-{stem}")] = value
    return files


def render(config: Path, answers: Answers) -> str:
    """The starter config with the answers in place; secrets only as file names."""
    text = STARTER_CONFIG
    text = _set(text, "data_dir", _toml(str(answers.data_dir)))
    text = _set(text, "bind", _toml(answers.bind))
    text = _set(text, "base_url", _toml(answers.base_url))
    text = _set(text, "model", _toml(answers.model))
    if answers.api_key is not None:
        key_file = secret_path(config, "model-api-key")
        text = _set(text, "api_key_env", _toml(str(key_file)), key="api_key_file",
                    comment="# the key, mode 0600 (written by wakeful onboard)")  # fmt: skip
    if answers.chats:
        if text.count(CHAT_ANCHOR) != 1:
            raise AssertionError(f"the starter config lost its line {CHAT_ANCHOR.strip()!r}")
        text = text.replace(CHAT_ANCHOR, CHAT_ANCHOR + _chat_entries(config, answers.chats))
    header = "# Written by `wakeful onboard`; run it again, or edit this file by hand.\n"
    return header + text


def _chat_entries(config: Path, chats: list[ChatAccount]) -> str:
    lines = [""]
    for chat in chats:
        head = f"[[chat.{chat.platform}]]"
        if chat.checked:
            head = head.ljust(COMMENT_COLUMN - 1) + f" # checked: {chat.checked}"
        lines += [head, f"name = {_toml(chat.name)}"]
        for key, value in chat.keys.items():
            lines.append(f"{key} = {_toml(value)}")
        for key in chat.secrets:
            stem = key.removesuffix("_file").replace("_", "-")
            path = secret_path(config, f"{chat.platform}-{chat.name}-{stem}")
            lines.append(f"{key} = {_toml(str(path))}")
        lines.append("")
    return "\n".join(lines)


def _set(text: str, name: str, value: str, *, key: str = "", comment: str = "") -> str:
    """Give the template's line for ``name`` (commented out or not) this value, keeping
    its trailing comment (or putting ``comment`` there) at the template's column."""
    pattern = re.compile(rf"^(?:# )?{re.escape(name)} = [^#\n]*?(?:[ \t]+(#.*))?$", re.MULTILINE)
    found = pattern.findall(text)
    if len(found) != 1:
        raise AssertionError(f"the starter config has {len(found)} lines for {name}, not one")
    line = f"{key or name} = {value}"
    trailing = comment or found[0]
    if trailing:
        line = line.ljust(COMMENT_COLUMN - 1) + " " + trailing
    return pattern.sub(lambda _match: line, text, count=1)


def write_all(config: Path, answers: Answers) -> list[Path]:
    """The secrets first, then the config naming them; the secret files written."""
    files = secret_files(config, answers)
    for path, secret in files.items():
        write_private(path, secret + "\n")
    write_private(config, render(config, answers))
    return list(files)
