"""Where configuration and secrets are found: the config file, the data directory,
``*_file`` secrets, the listen address. Standard library only: the CLI's client
commands resolve the daemon's address and token with this and nothing heavier.
"""

from __future__ import annotations

import os
from pathlib import Path

from wakeful.kernel.atomic_file import write_atomic

ADMIN_TOKEN_FILENAME = "admin-token"


class ConfigError(Exception):
    """The configuration cannot be used; the message names the key and the fix."""


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


def write_private(path: Path, text: str) -> None:
    """Write ``text`` readable by this user only (its directory made if missing), whole:
    a reader sees the old file or the new one, never half of one or a wider mode."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, text, mode=0o600)


def default_data_dir() -> Path:
    """``$STATE_DIRECTORY`` (systemd), else the first that exists of
    ``$XDG_STATE_HOME/wakeful`` (~/.local/state/wakeful: the user unit's StateDirectory),
    /var/lib/wakeful (the system unit's, for root) and ~/.local/share/wakeful (made by
    earlier versions, so an upgrade loses nothing); else the first of those the daemon
    may create (/var/lib/wakeful for root).
    """
    # systemd may pass several colon-separated directories; ours is the first.
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    if state:
        return Path(state)
    xdg_state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    user_dir = Path(xdg_state) / "wakeful"
    system_dir = Path("/var/lib/wakeful")
    legacy = Path.home() / ".local" / "share" / "wakeful"
    is_root = os.geteuid() == 0
    candidates = [user_dir, *([system_dir] if is_root else []), legacy]
    found = next((path for path in candidates if (path / "wakeful.db").exists()), None)
    if found is not None:
        return found
    return system_dir if is_root else user_dir


def config_search_path() -> list[Path]:
    """Where a config file is looked for when neither ``-c`` nor ``$WAKEFUL_CONFIG`` names one."""
    xdg_config = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return [
        Path("wakeful.toml"),
        Path(xdg_config) / "wakeful" / "wakeful.toml",
        Path("/etc/wakeful/wakeful.toml"),
    ]


def find_config_file(given: str | None) -> Path | None:
    """``-c FILE``, else ``$WAKEFUL_CONFIG``, else the first of :func:`config_search_path`
    that exists; None: the embedded defaults. A named file that is missing is an error."""
    named = given or os.environ.get("WAKEFUL_CONFIG")
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            origin = "-c" if given else "$WAKEFUL_CONFIG"
            raise ConfigError(
                f"config file {path} ({origin}) does not exist; create one with "
                f"`wakeful init --path {path}`"
            )
        return path
    return next((path for path in config_search_path() if path.is_file()), None)


def split_bind(value: str) -> tuple[str, int]:
    host, sep, port_text = value.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ValueError("must be HOST:PORT with a port from 0 to 65535")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError("an IPv6 host must be written in brackets, e.g. '[::1]:8787'")
    return host, int(port_text)


# The one writer of TOML values: onboard, the OpenClaw import, the config reference and the
# config error's example all write config text with it, so each reads back as itself.
_SHORT_ESCAPES = {"\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}


def toml_string(text: str) -> str:
    """A TOML basic string whose value is ``text`` (quote, backslash and every control
    character escaped, as TOML requires; other characters as they are)."""
    out = ['"']
    for char in text:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[char])
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def toml_value(value: object) -> str:
    """``value`` as TOML text: a bool, int, float, string, list or tuple, or dict (an
    inline table); anything else (a Path, say) as the string of it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{toml_string(str(key))} = {toml_value(item)}" for key, item in value.items())
        return "{" + ", ".join(pairs) + "}"
    return toml_string(str(value))
