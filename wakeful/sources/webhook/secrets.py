"""A hook's secrets, from every source at once: inline, environment, file.

All of them are accepted together, which is how a secret rotates: add the
new one, let the sender switch, remove the old one. A secret file may hold
several secrets, one per line.
"""

from __future__ import annotations

import os
from pathlib import Path

from wakeful.kernel.config_base import ConfigError, credential_path
from wakeful.sources.webhook.config import HookConfig


def resolve_secrets(hook: HookConfig) -> list[str]:
    """Every secret configured for ``hook``; ConfigError names the key when one is unusable."""
    found = [s.get_secret_value() for s in (hook.secret, *hook.secrets) if s is not None]
    for name in hook.secret_env:
        value = os.environ.get(name, "").strip()
        if not value:
            raise ConfigError(
                f"hooks '{hook.name}'.secret_env: environment variable {name} is not set or "
                "empty; export it in the daemon's environment or remove it from secret_env"
            )
        found.append(value)
    if hook.secret_file is not None:
        found += _read_lines(hook.name, hook.secret_file)
    found = [secret.strip() for secret in found if secret.strip()]
    if not found:
        raise ConfigError(
            f"hooks '{hook.name}': no secret configured; set secret_file (one secret per line), "
            'secret_env = ["NAME"], secrets = ["..."] or secret = "..."'
        )
    return list(dict.fromkeys(found))


def _read_lines(hook_name: str, secret_file: Path) -> list[str]:
    path = credential_path(secret_file)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(
            f"hooks '{hook_name}'.secret_file: cannot read {path}: {reason}; "
            "make it readable by the daemon (one secret per line)"
        ) from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ConfigError(
            f"hooks '{hook_name}'.secret_file: {path} is empty; put the secret on its first line"
        )
    return lines
