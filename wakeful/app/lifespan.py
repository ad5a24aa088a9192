"""The daemon's one lifespan: open everything in order, tear down in reverse.

:func:`running_daemon` owns the store, the model provider, the session
loops, the components and the HTTP server inside one task group. What the
process does around it (signals, systemd, exit) is :mod:`wakeful.app.service`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog

from wakeful.app.api_backend import ApiBackend
from wakeful.app.components import default_components
from wakeful.app.config import Settings
from wakeful.app.http.serve import QuietServer
from wakeful.app.startup.armour import SandboxProbe, arm
from wakeful.app.startup.core import start_core
from wakeful.app.startup.resources import Opened, open_resources
from wakeful.app.startup.serving import log_listening, serve_http_app
from wakeful.core.components.context import Component, Registrations, Reloadable
from wakeful.core.components.gate import EventGate
from wakeful.core.components.supervision import configure_all, run_all
from wakeful.core.feed import Feed
from wakeful.core.feed_sse import StreamRegistry
from wakeful.kernel.data_dir_lock import hold_data_dir_lock
from wakeful.kernel.data_dir_perms import secure_data_dir
from wakeful.safety.assembly import Safety
from wakeful.safety.sandbox import Sandbox
from wakeful.telemetry.lifecycle import tracing_installed

if TYPE_CHECKING:
    from wakeful.app.fleet.member import FleetMember

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RunningDaemon:
    daemon: ApiBackend
    url: str  # e.g. http://127.0.0.1:8787
    admin_token: str
    data_dir: Path
    streams: StreamRegistry
    registrations: Registrations  # what the components declared
    reloadables: list[Reloadable]  # the components that take SIGHUP
    safety: Safety  # taint, approvals, the breaker
    fleet: FleetMember | None = None  # [store] fleet: this daemon's part in it


@asynccontextmanager
async def running_daemon(
    settings: Settings, components: Sequence[Component] | None = None
) -> AsyncIterator[RunningDaemon]:
    """The daemon, serving; ``components`` replaces the registry's list (tests, tools).

    Five steps, each given what the ones before it made: open the resources, arm the
    safety layer and the tools, configure the components, start the core, serve HTTP.
    Everything is torn down in reverse on one exit stack; the task group that owns every
    task (sessions writing their placeholders, components' runs) ends before anything
    it uses is closed."""
    data_dir = settings.daemon.resolved_data_dir()
    secure_data_dir(data_dir)  # umask 077; a loud warning if others can read it
    with hold_data_dir_lock(data_dir):  # before anything reads or writes data_dir
        async with AsyncExitStack() as stack:
            opened = await open_resources(settings, data_dir, stack)
            # Tracing outlives every task: their last spans are exported at its end.
            await stack.enter_async_context(tracing_installed(settings.telemetry))
            resources = await stack.enter_async_context(AsyncExitStack())
            async with anyio.create_task_group() as group:
                probe = SandboxProbe(settings, data_dir)
                await probe.start(group)
                if components is None:
                    components = default_components(settings)  # imports, while it probes
                running, server = await _start(
                    settings, opened, group, resources, components, await probe.sandbox()
                )
                try:
                    yield running
                finally:
                    await _stop(running, server, group)
            if running.fleet is not None:
                # No loop of this daemon runs any more: the safest point to hand over.
                await running.fleet.hand_over()


async def _start(
    settings: Settings,
    opened: Opened,
    group: anyio.abc.TaskGroup,
    resources: AsyncExitStack,
    components: Sequence[Component],
    sandbox: Sandbox,
) -> tuple[RunningDaemon, QuietServer]:
    feed = Feed()
    gate = EventGate()  # what components and approvals reach the core through
    armed = arm(settings, opened, gate, sandbox)
    # Step 3: every component declares its tools, routes and views; then they freeze.
    await configure_all(
        components,
        settings=settings,
        data_dir=opened.data_dir,
        store=opened.store,
        feed=feed,
        registrations=armed.registrations,
        gate=gate,
        resources=resources,
        approvals=armed.safety.approvals,
    )
    core = await start_core(settings, opened, armed, feed, group)
    gate.open(core.services)
    await group.start(armed.safety.approvals.run)
    # Components run (each supervised); sessions resume once all have started.
    await run_all(components, group, armed.registrations)
    await core.daemon.start()
    server = await serve_http_app(settings, opened, armed, core, group)
    if core.fleet is not None:
        await group.start(core.fleet.run)
    log_listening(opened)
    reloadables: list[Reloadable] = [c for c in components if isinstance(c, Reloadable)]
    running = RunningDaemon(
        core.daemon,
        opened.url,
        opened.admin_token,
        opened.data_dir,
        server.streams,
        armed.registrations,
        reloadables,
        armed.safety,
        fleet=core.fleet,
    )
    return running, server.quiet


async def _stop(running: RunningDaemon, server: QuietServer, group: anyio.abc.TaskGroup) -> None:
    running.daemon.dispatcher.stopping = True
    running.streams.close_all()  # open SSE responses would hold uvicorn's shutdown
    server.request_exit()
    group.cancel_scope.cancel()
