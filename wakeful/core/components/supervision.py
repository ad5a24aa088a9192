"""The two phases for every component: configure all, freeze, then run each supervised.

A component's ``run`` that raises is logged, counted, marked unhealthy and
started again after a backoff; the daemon stays up. A
:class:`~wakeful.core.components.context.LateRegistration` is a programming
error, not a transient one: it ends start-up with its one-line message.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AsyncExitStack
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from wakeful.core.approvals import Approvals
from wakeful.core.components.context import (
    Component,
    ComponentHealth,
    ComponentSetup,
    LateRegistration,
    Registrations,
)
from wakeful.core.components.gate import EventGate
from wakeful.core.feed import Feed
from wakeful.kernel import metrics
from wakeful.kernel.exception_groups import describe_failure, holds
from wakeful.store.base import Store

if TYPE_CHECKING:  # the composed config lives in the app; its type only
    from wakeful.app.config import Settings

log = structlog.get_logger(__name__)

BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 60.0


async def configure_all(
    components: Sequence[Component],
    *,
    settings: Settings,
    data_dir: Path,
    store: Store,
    feed: Feed,
    registrations: Registrations,
    gate: EventGate,
    resources: AsyncExitStack,
    approvals: Approvals,
) -> None:
    """Phase 1 for every component, in order; then nothing more may be declared."""
    for component in components:
        setup = ComponentSetup(
            name=component.name,
            settings=settings,
            data_dir=data_dir,
            store=store,
            feed=feed,
            registrations=registrations,
            resources=resources,
            submit=gate.for_component(component.name),
            send_message=gate.sender_for(component.name),
            deliver_message=gate.deliverer_for(component.name),
            approvals=approvals,
            sessions=gate.sessions_for(component.name),
            notify_owner=gate.notifier_for(component.name),
        )
        await component.configure(setup)
    registrations.frozen = True
    registrations.tools.freeze()


async def run_all(
    components: Sequence[Component], group: TaskGroup, registrations: Registrations
) -> None:
    """Phase 2: each component's ``run`` in its own supervised task, owned by ``group``.

    Returns once every component has started (or failed its first start), so the
    sessions that resume next can call every tool.
    """
    for component in components:
        await group.start(supervise, component, registrations, name=f"component {component.name}")


async def supervise(
    component: Component,
    registrations: Registrations,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run ``component`` until cancelled, restarting it with backoff when it fails."""
    backoff = BACKOFF_FIRST_S
    started = False
    health_key = f"{component.name}:supervisor"
    while True:
        try:
            async with anyio.create_task_group() as own:
                await own.start(_run_once, component)
                registrations.health.pop(health_key, None)  # running (again)
                if not started:
                    started = True
                    task_status.started()
            return  # finished its work (or had none)
        except Exception as exc:
            if holds(exc, LateRegistration):
                raise
            metrics.COMPONENT_CRASHES.inc(component=component.name)
            log.exception("component failed; restarting it", component=component.name)
            registrations.health[health_key] = ComponentHealth(
                False, f"failed ({describe_failure(exc)}); restarting in {backoff:.0f} s"
            )
            _tell_listeners(registrations, component.name, describe_failure(exc))
        if not started:  # start-up goes on without it; it keeps being retried
            started = True
            task_status.started()
        await anyio.sleep(backoff)
        backoff = min(backoff * 2, BACKOFF_MAX_S)


def _tell_listeners(registrations: Registrations, name: str, failure: str) -> None:
    for listener in registrations.failure_listeners:
        try:
            listener(name, failure)
        except Exception:  # a listener's bug must not stop the restart
            log.exception("component failure listener failed", component=name)


async def _run_once(
    component: Component, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    await component.run(task_status=task_status)
