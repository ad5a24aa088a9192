"""SIGHUP: re-read the configuration, apply what can change live, say what cannot."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog
from pydantic import BaseModel

from wakeful.app.config import ConfigError, Settings, load_settings
from wakeful.core.components.context import Reloadable
from wakeful.kernel.logging import configure_logging

log = structlog.get_logger(__name__)

# Keys applied live by the daemon itself; the rest need components or a restart.
LIVE_KEYS = frozenset({"daemon.log_level"})


async def reload_settings(
    current: Settings, config_path: Path | None, reloadables: Sequence[Reloadable]
) -> Settings:
    """SIGHUP: the new settings when they load, else the current ones."""
    try:
        new = load_settings(config_path)
    except ConfigError as exc:
        log.error("reload failed; the running configuration stays", error=str(exc))
        return current
    changed = changed_keys(current, new)
    applied = [key for key in changed if key in LIVE_KEYS]
    if "daemon.log_level" in applied:
        configure_logging(new.daemon.log_level, secrets=new.secret_values())
    sections: set[str] = set()
    failures = []
    for reloadable in reloadables:
        try:
            sections.update(await reloadable.reload(new))
        except ValueError as exc:
            failures.append(f"{type(reloadable).__name__}: {exc}")
    handed = [key for key in changed if key.split(".")[0] in sections]
    restart = [key for key in changed if key not in applied and key not in handed]
    log.info(
        "configuration reloaded",
        applied=applied,
        reloaded_by_components=handed,
        not_reloaded=failures,
        needs_restart=restart,
    )
    if restart:
        log.warning("some changes take effect only after a restart", keys=restart)
    return new


def changed_keys(old: Settings, new: Settings) -> list[str]:
    """``section.key`` names whose values differ (secrets compared, never shown)."""
    before, after = _flat(old), _flat(new)
    return sorted(key for key in before.keys() | after.keys() if before.get(key) != after.get(key))


def _flat(settings: Settings) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for section in type(settings).model_fields:
        value = getattr(settings, section)
        if isinstance(value, BaseModel):
            for key in type(value).model_fields:
                flat[f"{section}.{key}"] = _comparable(getattr(value, key))
        else:
            flat[section] = _comparable(value)
    return flat


def _comparable(value: Any) -> Any:
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    if hasattr(value, "model_dump"):
        return repr(value.model_dump(mode="json")) + repr(_secrets_of(value))
    if hasattr(value, "get_secret_value"):
        return value.get_secret_value()
    return value


def _secrets_of(model: Any) -> list[str]:
    return [
        v.get_secret_value()
        for v in vars(model).values()
        if hasattr(v, "get_secret_value") and v is not None
    ]
