"""Components in two phases: configure (declare), freeze, run (supervised)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import TaskStatus

from tests.daemon_harness import daemon_settings, harness
from tests.fakes.model_server import FakeModelServer, Reply
from wakeful.app.components import default_components
from wakeful.app.lifespan import running_daemon
from wakeful.core.components.context import Component, ComponentSetup
from wakeful.core.tool import ToolArgs, ToolContext, ToolOutput
from wakeful.kernel import metrics

pytestmark = pytest.mark.anyio

COMPONENT_TOOLS = {"start_shell", "monitor_shell", "set_timer", "cancel_timer", "list_timers"}


class _Echo:
    name = "late_echo"
    description = "Echo the text back."
    read_only = True
    timeout_s: float | None = 5.0

    class Args(ToolArgs):
        text: str

    async def run(self, a: Args, ctx: ToolContext) -> ToolOutput:
        return ToolOutput(a.text)


class LateToolComponent:
    """A buggy component: it registers its tool from run(), after the freeze."""

    name = "late"

    async def configure(self, setup: ComponentSetup) -> None:
        self.setup = setup

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self.setup.add_tool(_Echo())
        task_status.started()


class EagerSenderComponent:
    """A buggy component: it sends an event while the others are still configuring."""

    name = "eager"

    async def configure(self, setup: ComponentSetup) -> None:
        from wakeful.kernel.events import user_message

        await setup.submit(user_message("too early", session="main"))

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()


class FlakyComponent:
    """Fails its first run; the second run stays up until cancelled."""

    name = "flaky"

    def __init__(self) -> None:
        self.runs = 0
        self.second_run = anyio.Event()
        self.release = anyio.Event()  # the second run reports started only after this

    async def configure(self, setup: ComponentSetup) -> None:
        pass

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        self.runs += 1
        if self.runs == 1:
            raise OSError("the device went away")
        self.second_run.set()
        await self.release.wait()
        task_status.started()
        await anyio.sleep_forever()


def _leaf_messages(exc: BaseException) -> list[str]:
    if isinstance(exc, BaseExceptionGroup):
        return [m for inner in exc.exceptions for m in _leaf_messages(inner)]
    return [f"{type(exc).__name__}: {exc}"]


async def _start_fails(tmp_path: Path, model_server: FakeModelServer, extra: Component) -> str:
    settings = daemon_settings(tmp_path, model_server.base_url)
    components = [*default_components(settings), extra]
    with pytest.raises(BaseExceptionGroup) as failed:
        async with running_daemon(settings, components):
            pytest.fail("the daemon started with a component that broke the phases")
    (message,) = _leaf_messages(failed.value)
    return message


async def test_tool_registered_after_the_freeze_fails_start_up(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A tool declared from run() ends start-up with a message naming component and tool."""
    message = await _start_fails(tmp_path, model_server, LateToolComponent())
    assert message.startswith("LateRegistration: component 'late' registered tool 'late_echo'")
    assert "configure()" in message


async def test_event_sent_during_configure_is_refused(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """No event enters before every component is configured."""
    message = await _start_fails(tmp_path, model_server, EagerSenderComponent())
    assert "component 'eager' sent event" in message
    assert "before every component was configured" in message


async def test_first_request_after_restart_has_every_tool_byte_identical(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """An event waiting from before a restart is answered with every component's tools,
    and the tool block is byte-identical to the one before the restart."""
    settings = daemon_settings(tmp_path, model_server.base_url)
    model_server.push(Reply(text="first"))
    async with harness(settings) as h:
        await h.send("hello")
        await anyio.to_thread.run_sync(model_server.wait_for_requests, 1)
        await h.daemon.sessions.get("main").drain()
    before = json.dumps(model_server.requests[0].body["tools"], sort_keys=False)

    # Stored while no model is configured: the session will owe a reply at start.
    async with harness(daemon_settings(tmp_path, model_server.base_url, llm={"model": ""})) as h:
        await h.send("are you there?")

    model_server.push(Reply(text="second"))
    async with harness(settings) as h:
        await anyio.to_thread.run_sync(model_server.wait_for_requests, 2)
        await h.daemon.sessions.get("main").drain()
    first_after_restart: dict[str, Any] = model_server.requests[1].body
    names = {tool["function"]["name"] for tool in first_after_restart["tools"]}
    # Sent with schemas, or (deferred, the default) named in the system prompt.
    prompt = first_after_restart["messages"][0]["content"]
    assert {name for name in COMPONENT_TOOLS if name not in names and name not in prompt} == set()
    assert json.dumps(first_after_restart["tools"], sort_keys=False) == before
    assert prompt == model_server.requests[0].body["messages"][0]["content"]


async def test_a_failing_component_is_restarted_and_the_daemon_stays_up(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """run() raising is logged, counted and retried; the daemon keeps answering."""
    settings = daemon_settings(tmp_path, model_server.base_url)
    flaky = FlakyComponent()
    crashes_before = metrics.COMPONENT_CRASHES.value(component="flaky")
    async with running_daemon(settings, [*default_components(settings), flaky]) as running:
        health = running.registrations.health
        assert health["flaky:supervisor"].ok is False
        assert "OSError: the device went away" in health["flaky:supervisor"].detail
        with anyio.fail_after(10):
            await flaky.second_run.wait()
        async with harness_client(running) as client:
            assert (await client.get("/healthz")).status_code == 200
            status = (await client.get("/api/status")).json()
            assert status["components"]["flaky:supervisor"]["ok"] is False
        flaky.release.set()
        with anyio.fail_after(10):
            await anyio.wait_all_tasks_blocked()  # the supervisor has seen the restart
        assert "flaky:supervisor" not in health
    assert flaky.runs == 2
    assert metrics.COMPONENT_CRASHES.value(component="flaky") == crashes_before + 1


def harness_client(running: Any) -> Any:
    import httpx

    headers = {"Authorization": f"Bearer {running.admin_token}"}
    return httpx.AsyncClient(base_url=running.url, headers=headers)
