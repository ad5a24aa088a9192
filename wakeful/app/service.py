"""What ``wakeful run`` does between start and exit: tell systemd, obey signals.

- READY=1 once :func:`~wakeful.app.lifespan.running_daemon` has opened the
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
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import structlog

from wakeful.app.config import ConfigError, Settings
from wakeful.app.lifespan import RunningDaemon, running_daemon
from wakeful.app.reload import reload_settings
from wakeful.app.systemd import Notifier, ping_watchdog, watchdog_interval
from wakeful.core.components.context import LateRegistration
from wakeful.kernel.data_dir_lock import DataDirLocked
from wakeful.kernel.exception_groups import leaves
from wakeful.kernel.logging import configure_logging
from wakeful.store.base import StoreUnavailable

log = structlog.get_logger(__name__)

# How long forced sessions get to write their placeholders once interrupted.
CLEANUP_S = 2.0
# Time after draining for the lifespan to close HTTP, components and the store.
TEARDOWN_S = 5.0


async def serve_until_signalled(settings: Settings, config_path: Path | None) -> None:
    """The body of ``wakeful run``: returns after a graceful stop."""
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
    if running.fleet is not None:
        running.fleet.begin_stop()  # take no more sessions; they are handed over once idle
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


def run_daemon(
    settings: Settings, config_path: Path | None = None, *, exit_process: bool = False
) -> int:
    """``wakeful run``: serve until SIGTERM or SIGINT, then stop cleanly.

    The systemd side (READY, watchdog, draining, SIGHUP) is in
    :mod:`wakeful.app.service`; ``config_path`` is what SIGHUP re-reads.
    ``exit_process`` (the CLI) ends the process as soon as everything is closed.
    """
    configure_logging(settings.daemon.log_level, secrets=settings.secret_values())
    failures: list[str] = []
    code = 0
    try:
        anyio.run(
            serve_until_signalled,
            settings,
            config_path,
            backend_options=event_loop_options(),
        )
    # Raised from inside the lifespan's task groups (or, for the lock, before them);
    # each is one line that names the fix.
    except* ConfigError as group:  # a secret file missing, a hook without a secret, ...
        failures, code = [str(exc) for exc in leaves(group)], 2
    except* (OSError, StoreUnavailable, LateRegistration, DataDirLocked) as group:
        failures, code = [str(exc) for exc in leaves(group)], 1
    if failures:
        message = "; ".join(failures)
        log.error("cannot start", error=message)
        print(f"wakeful: cannot start: {message}", file=sys.stderr)
        return code
    if exit_process:
        exit_now(0)
    return 0


def event_loop_options() -> dict[str, bool]:
    """anyio's options for the daemon's event loop: uvloop where it is installed (a
    dependency on every platform but Windows). Benches that run the daemon in their
    own process use the same, so that they time the loop the product runs on."""
    return {"use_uvloop": _has_uvloop()}


def _has_uvloop() -> bool:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return False
    return True
