"""What ``wakeful run`` does between start and exit: tell systemd, obey signals.

- READY=1 once :func:`~wakeful.daemon.app.running_daemon` has opened the
  store, run its migrations and bound the HTTP listener.
- WATCHDOG=1 from a task on the event loop for the whole life of the process.
- SIGTERM/SIGINT: STOPPING=1, refuse new events (503 + Retry-After), let each
  session reach a safe point within ``[daemon] stop_timeout_s``, then
  interrupt what is left (placeholders are written), and leave the lifespan,
  which flushes and closes the store.
- SIGHUP: re-read the configuration, apply what can change live and log
  what needs a restart.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import structlog
from pydantic import BaseModel

from wakeful.daemon.config import ConfigError, Settings, load_settings
from wakeful.daemon.logging import configure_logging
from wakeful.daemon.services import Reloadable
from wakeful.daemon.systemd import Notifier, ping_watchdog, watchdog_interval

if TYPE_CHECKING:
    from wakeful.daemon.app import RunningDaemon

log = structlog.get_logger(__name__)

# How long forced sessions get to write their placeholders once interrupted.
CLEANUP_S = 2.0
# Time after draining for the lifespan to close HTTP, components and the store.
TEARDOWN_S = 5.0
# Keys applied live by the daemon itself; the rest need components or a restart.
LIVE_KEYS = frozenset({"daemon.log_level"})


async def serve_until_signalled(settings: Settings, config_path: Path | None) -> None:
    """The body of ``wakeful run``: returns after a graceful stop."""
    from wakeful.daemon.app import running_daemon  # app imports this module

    notifier = Notifier.from_env()
    try:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async with anyio.create_task_group() as pinger:
                interval = watchdog_interval()
                if interval is not None and notifier.enabled:
                    pinger.start_soon(ping_watchdog, notifier, interval, name="watchdog")
                notifier.status("starting: opening the store and recovering sessions")
                async with running_daemon(settings) as running:
                    sessions = len(running.daemon.sessions.all())
                    notifier.ready(f"ready: {running.url}, {sessions} sessions")
                    await _obey_signals(signals, running, settings, config_path, notifier)
                    notifier.status("stopping: closing HTTP, components and the store")
                pinger.cancel_scope.cancel()
    finally:
        notifier.close()


async def _obey_signals(
    signals: AsyncIterator[int],
    running: RunningDaemon,
    settings: Settings,
    config_path: Path | None,
    notifier: Notifier,
) -> None:
    async for signum in signals:
        if signum == signal.SIGHUP:
            settings = await reload_settings(settings, config_path, running.reloadables)
            continue
        log.info("stopping", signal=signal.Signals(signum).name)
        await drain(running, settings.daemon.stop_timeout_s, notifier)
        return


async def drain(running: RunningDaemon, bound_s: float, notifier: Notifier) -> None:
    """Refuse new events and bring every session to a safe point within ``bound_s``."""
    notifier.stopping(
        "stopping: refusing new events, letting sessions reach a safe point",
        extend_s=bound_s + CLEANUP_S + TEARDOWN_S,
    )
    running.daemon.dispatcher.stopping = True
    busy = [loop.session for loop in running.daemon.sessions.all() if loop.busy]
    if busy:
        log.info("waiting for sessions to reach a safe point", sessions=busy, bound_s=bound_s)
    with anyio.CancelScope(shield=True):
        forced = await running.daemon.sessions.drain(bound_s, CLEANUP_S)
    if forced:
        log.warning(
            "interrupted sessions that did not reach a safe point in time",
            sessions=forced,
            bound_s=bound_s,
        )


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


def exit_now(code: int) -> None:
    """End the process without the interpreter's teardown.

    Called once the lifespan has closed the store, HTTP and every task: what
    is left is garbage collection of the imported libraries, which takes
    seconds on a loaded machine and would eat into ``TimeoutStopSec``.
    """
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
