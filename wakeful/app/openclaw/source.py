"""Reading an OpenClaw directory: ``openclaw.json`` (JSON5) and the agent's workspace.

The shape read is OpenClaw's documented one (docs.openclaw.ai, 2026): the state
directory (``~/.openclaw``) holds ``openclaw.json``, managed skills in ``skills/``,
cron jobs in ``cron/``, credentials and session transcripts; the workspace
(``agents.defaults.workspace``, default ``<state dir>/workspace``) holds AGENTS.md,
SOUL.md, USER.md, IDENTITY.md, TOOLS.md, HEARTBEAT.md, MEMORY.md, ``memory/`` and
``skills/``. Nothing here writes.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import json5  # the `openclaw` extra; this package is imported by `wakeful import` only

CONFIG_FILE = "openclaw.json"
WORKSPACE_DIR = "workspace"
EXPECTED = (
    "expected an OpenClaw state directory (such as ~/.openclaw) holding openclaw.json "
    "or a workspace/ folder"
)
MAX_CONFIG_BYTES = 4 * 1024 * 1024  # a config is kilobytes; more is not one
_ENV_REF = re.compile(r"^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*_[A-Z0-9_]+$")  # OPENAI_API_KEY, not a key


class NotOpenClaw(Exception):
    """PATH cannot be imported; the message is one line saying what was expected."""


@dataclass(frozen=True)
class OpenClawDir:
    root: Path  # the state directory
    config: dict[str, Any]  # openclaw.json; {} when there is none
    workspace: Path | None  # None: no workspace folder found

    def defaults(self) -> dict[str, Any]:
        """``agents.defaults`` (the older ``agent`` key counts too)."""
        agents = self.config.get("agents")
        found = agents.get("defaults") if isinstance(agents, dict) else None
        if isinstance(found, dict):
            return found
        legacy = self.config.get("agent")
        return legacy if isinstance(legacy, dict) else {}

    def env_value(self, name: str) -> str | None:
        """A variable the config sets itself (``env: {NAME: ...}`` or ``env.vars``)."""
        env = self.config.get("env")
        if not isinstance(env, dict):
            return None
        for table in (env, env.get("vars")):
            if isinstance(table, dict) and isinstance(table.get(name), str) and table[name]:
                return str(table[name])
        return None

    def path(self, text: str) -> Path | None:
        """A path the config names: ``~/.openclaw/…`` read inside root (the import may run
        on a copy, on another machine), other ``~`` paths expanded, relative to root."""
        if not text or "\x00" in text or len(text) > 4096:
            return None  # not a path the system could open
        if text.rstrip("/") == "~/.openclaw":
            return self.root
        if text.startswith("~/.openclaw/"):
            return self.root / text.removeprefix("~/.openclaw/")
        path = Path(text).expanduser()
        return path if path.is_absolute() else self.root / path


def read_openclaw(path: Path) -> OpenClawDir:
    """The directory, or NotOpenClaw with one line saying what was expected."""
    root = path.expanduser().absolute()
    if root.name == CONFIG_FILE and root.is_file():
        root = root.parent  # the config file named instead of its directory
    if not root.is_dir():
        raise NotOpenClaw(f"{path} is not a directory: {EXPECTED}")
    config_file = root / CONFIG_FILE
    if not config_file.is_file() and not (root / WORKSPACE_DIR).is_dir():
        if (root / "AGENTS.md").is_file() or (root / "SOUL.md").is_file():
            raise NotOpenClaw(
                f"{path} looks like OpenClaw's workspace: give the directory above it that "
                f"holds {CONFIG_FILE} (such as ~/.openclaw)"
            )
        raise NotOpenClaw(f"{path} has neither {CONFIG_FILE} nor {WORKSPACE_DIR}/: {EXPECTED}")
    config = _read_config(config_file) if config_file.is_file() else {}
    partial = OpenClawDir(root, config, None)
    return OpenClawDir(root, config, _workspace(partial))


def _read_config(path: Path) -> dict[str, Any]:
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise NotOpenClaw(f"cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise NotOpenClaw(f"{path} is over {MAX_CONFIG_BYTES // 2**20} MiB: not a config file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise NotOpenClaw(
            f"{path} is not UTF-8 text (byte {exc.start}): expected OpenClaw's JSON5 config"
        ) from None
    try:
        data = json5.loads(text)
    except (ValueError, RecursionError) as exc:
        # The parser's message may quote the file; only where it failed is said.
        where = re.search(r"line (\d+)|column (\d+)", str(exc))
        at = f" ({where.group(0)})" if where else ""
        raise NotOpenClaw(f"{path} is not valid JSON5{at}: fix it or move it aside") from None
    if not isinstance(data, dict):
        raise NotOpenClaw(f"{path} holds no JSON5 object ({{ ... }}): {EXPECTED}")
    cleaned: dict[str, Any] = _whole_characters(data)
    return cleaned


def _whole_characters(value: Any) -> Any:
    """Strings as text that can be written: JSON5's \\uD83D\\uDE00 escapes become one
    character, a lone surrogate the replacement character."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_whole_characters(k): _whole_characters(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_characters(item) for item in value]
    return value


def _workspace(source: OpenClawDir) -> Path | None:
    configured = source.defaults().get("workspace")
    named = source.path(configured) if isinstance(configured, str) else None
    candidates = [named] if named is not None else []
    candidates.append(source.root / WORKSPACE_DIR)
    return next((c for c in candidates if c.is_dir()), None)


def read_text(path: Path) -> str | None:
    """A Markdown file's text; None when it is not UTF-8 (the caller reports it)."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


@dataclass(frozen=True)
class Secret:
    """Where a secret the config names is: its value (to write into a file of its own),
    a file already holding it, or an environment variable."""

    value: str | None = None
    file: Path | None = None
    env: str | None = None


def secret(source: OpenClawDir, raw: Any) -> Secret | None:
    """A value as OpenClaw takes secrets: a string, ``${VAR}``, or a SecretRef object
    (``{source: "env", id: "VAR"}``); None when absent or of a kind not read here."""
    if isinstance(raw, dict):
        if raw.get("source") == "env" and isinstance(raw.get("id"), str):
            return _from_env(source, raw["id"])
        if raw.get("source") == "file" and isinstance(raw.get("id"), str):
            path = source.path(raw["id"])
            return Secret(file=path) if path is not None else None
        return None
    if not isinstance(raw, str) or not raw.strip():
        return None
    reference = _ENV_REF.match(raw.strip())
    if reference:
        return _from_env(source, reference.group(1))
    return Secret(value=raw.strip())


def _from_env(source: OpenClawDir, name: str) -> Secret:
    # The config's own env table first: that is where OpenClaw itself would find it.
    value = source.env_value(name)
    return Secret(value=value) if value else Secret(env=name)


def looks_like_env_name(text: str) -> bool:
    return bool(_ENV_NAME.match(text))


def environment(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None
