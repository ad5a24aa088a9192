"""connect_channel end to end: the model subscribes, the source fires, the model is woken.

Each kind through an in-process daemon and the fake model, across a restart
over the same data directory; a delivery the filter rejects never reaches
the model; disconnect_channel stops the source.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from tests.daemon_harness import Harness, daemon_settings, harness, last_user_text, watch_feed
from tests.fakes.loopback_http import LoopbackHttpServer
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.mail_servers import ImapServer, make_message
from wakeful.app.config import Settings
from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.core.tool import ToolContext, ToolOutput

pytestmark = pytest.mark.anyio


async def call_tool(h: Harness, name: str, args: dict[str, Any]) -> ToolOutput:
    """A tool call as the session loop makes it, through the registry and its policy chain."""

    async def reply(_: str) -> None:
        return None

    data_dir = h.running.data_dir
    workspace = data_dir / "workspace"
    ctx = ToolContext("main", "call_test", workspace, data_dir, CombinedTaskView([]), reply)  # type: ignore[arg-type]
    return await h.running.registrations.tools.execute(name, json.dumps(args), ctx)


def settings_for(tmp_path: Path, model: FakeModelServer, **sections: dict[str, Any]) -> Settings:
    overrides: dict[str, dict[str, Any]] = {
        "safety": {"sandbox": "none", **sections.pop("safety", {})},
        "subscriptions": {"debounce_ms": 100, "min_http_interval_s": 1, **sections.pop("subs", {})},
        **sections,
    }
    return daemon_settings(tmp_path / "data", model.base_url, hooks=None, **overrides)


async def subscribe(h: Harness, model: FakeModelServer, args: dict[str, Any]) -> str:
    """The model calls connect_channel; returns the subscription id it was given."""
    before = len(model.requests)
    model.push(Reply(tool_calls=[ToolCallSpec("connect_channel", args)]), Reply(text="Subscribed."))
    async with watch_feed(h) as feed:
        await h.send("please watch that for me")
        await feed.wait_for(lambda i: i.get("text") == "Subscribed.")
    result = tool_result(model.requests[before + 1].body)
    assert result.startswith("subscribed: sub-"), result
    return str(result.split()[1])


async def woken_by(h: Harness, model: FakeModelServer, kind: str, act: Any) -> dict[str, Any]:
    """Do ``act``; the model is called with the subscription's event; returns that event."""
    before = len(model.requests)
    model.push(Reply(text="Noted."))
    async with watch_feed(h) as feed:
        await act()
        item = await feed.wait_for(lambda i: i.get("kind") == kind, timeout_s=10)
        await feed.wait_for(lambda i: i.get("text") == "Noted.")
    assert len(model.requests) == before + 1  # one wake-up: nothing the filter refused
    stored = await h.daemon.store.event_log(None, 0, 1000)
    event = next(s.event for s in stored if s.event.id == item["event_id"])
    dumped: dict[str, Any] = event.model_dump(mode="json")
    return dumped


def tool_result(body: dict[str, Any]) -> str:
    return str(next(m for m in reversed(body["messages"]) if m["role"] == "tool")["content"])


def data_of(event: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = event["content"]["data"]
    return data


async def subscriptions(h: Harness) -> list[dict[str, Any]]:
    status = (await h.client.get("/api/status")).json()
    found: list[dict[str, Any]] = status["subscriptions"]["subscriptions"]
    return found


async def test_file_subscription_fires_filters_and_survives_a_restart(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    settings = settings_for(tmp_path, model_server)
    inbox = tmp_path / "data" / "workspace" / "inbox"
    inbox.mkdir(parents=True)
    async with harness(settings) as h:
        sub = await subscribe(h, model_server, {"kind": "file", "path": "inbox", "glob": "*.csv"})

        async def write_two() -> None:
            (inbox / "notes.txt").write_text("not a csv")  # the glob refuses it
            (inbox / "a.csv").write_text("1,2")

        event = await woken_by(h, model_server, "file.changed", write_two)
        assert data_of(event)["subscription"] == sub
        assert [c["path"] for c in data_of(event)["changes"]] == [str(inbox / "a.csv")]
        # File names are anyone's words, in the workspace too (wakeful/kernel/trust.py).
        assert event["source"]["trusted"] is False
        woke = last_user_text(model_server.requests[-1].body)
        assert sub in woke and "a.csv" in woke
    async with harness(settings) as h:  # re-armed at start
        event = await woken_by(
            h, model_server, "file.changed", lambda: _write(inbox / "b.csv", "3,4")
        )
        assert data_of(event)["subscription"] == sub
        [shown] = await subscriptions(h)
        assert shown["subscription_id"] == sub and shown["fired"] == 2
        out = await call_tool(h, "disconnect_channel", {"subscription_id": sub})
        assert not out.is_error, out.text
        assert await subscriptions(h) == []


async def _write(path: Path, text: str) -> None:
    await anyio.Path(path).write_text(text)


async def test_webhook_subscription_token_conditions_and_restart(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    settings = settings_for(tmp_path, model_server)
    condition = {"field": "build.status", "equals": "failed"}
    async with harness(settings) as h:
        sub = await subscribe(h, model_server, {"kind": "webhook", "conditions": [condition]})
        told = tool_result(model_server.requests[-1].body)
        token = told.split("Bearer ")[1].split("'")[0]
        route = f"/hooks/subscriptions/{sub}"
        record = await h.daemon.store.get_state(f"subscriptions:{sub}")
        assert token not in record and "_token_sha256" in record  # kept as its hash only
        wrong = await h.client.post(route, json={}, headers={"Authorization": "Bearer nope"})
        assert wrong.status_code == 401
        auth = {"Authorization": f"Bearer {token}"}
        passed = await h.client.post(route, json={"build": {"status": "ok"}}, headers=auth)
        assert passed.json()["filtered"] is True

        async def post_failure() -> None:
            response = await h.client.post(
                route, json={"build": {"status": "failed", "id": 7}}, headers=auth
            )
            assert response.status_code == 202, response.text

        event = await woken_by(h, model_server, "webhook.received", post_failure)
        assert data_of(event)["subscription"] == sub
        assert data_of(event)["payload"]["build"]["id"] == 7
        assert event["source"]["trusted"] is False  # whoever holds the token is a third party
    async with harness(settings) as h:

        async def post_again() -> None:
            body = {"build": {"status": "failed", "id": 8}}
            response = await h.client.post(route, json=body, headers=auth)
            assert response.status_code == 202, response.text

        event = await woken_by(h, model_server, "webhook.received", post_again)
        assert data_of(event)["payload"]["build"]["id"] == 8
        out = await call_tool(h, "disconnect_channel", {"subscription_id": sub})
        assert not out.is_error, out.text
        gone = await h.client.post(route, json={"build": {"status": "failed"}}, headers=auth)
        assert gone.status_code == 404


class StatusSite:
    """One page whose status the test sets."""

    def __init__(self) -> None:
        self.status = 200
        self.hits = 0
        self._http = LoopbackHttpServer(Starlette(routes=[Route("/health", self._health)]), "site")
        self.url = f"http://127.0.0.1:{self._http.port}/health"
        self.allow = f"127.0.0.1:{self._http.port}"

    async def _health(self, request: Request) -> Response:
        self.hits += 1
        return PlainTextResponse(f"status {self.status}", status_code=self.status)


async def test_http_check_fires_on_a_status_change_and_resumes_after_restart(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    site = StatusSite()
    site._http.start()
    try:
        settings = settings_for(tmp_path, model_server, safety={"http_allow": [site.allow]})
        async with harness(settings) as h:
            args = {"kind": "http_check", "url": site.url, "interval_s": 1, "on": "status"}
            sub = await subscribe(h, model_server, args)

            async def go_down() -> None:
                site.status = 503

            event = await woken_by(h, model_server, "http.changed", go_down)
            assert data_of(event)["subscription"] == sub
            assert "from 200 to 503" in data_of(event)["change"]
            assert event["source"]["trusted"] is False
        async with harness(settings) as h:

            async def come_back() -> None:
                site.status = 200

            event = await woken_by(h, model_server, "http.changed", come_back)
            assert "from 503 to 200" in data_of(event)["change"]  # the last status was kept
    finally:
        site._http.close()


async def test_http_check_refuses_a_short_interval_and_a_private_host(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    settings = settings_for(tmp_path, model_server, subs={"min_http_interval_s": 60})
    async with harness(settings) as h:
        short = await call_tool(
            h,
            "connect_channel",
            {"kind": "http_check", "url": "http://127.0.0.1:9/", "interval_s": 5},
        )
        assert short.is_error and short.text.startswith("connect_channel: interval_s:")
        private = await call_tool(
            h,
            "connect_channel",
            {"kind": "http_check", "url": "http://127.0.0.1:9/", "interval_s": 60},
        )
        assert private.is_error and "url: refused" in private.text and "http_allow" in private.text
        foreign = await call_tool(h, "connect_channel", {"kind": "file", "path": ".", "url": "x"})
        assert foreign.is_error and "url: not used by kind 'file'" in foreign.text
        outside = await call_tool(h, "connect_channel", {"kind": "file", "path": "/etc"})
        assert outside.is_error and outside.text.startswith("connect_channel: path:")
        assert await subscriptions(h) == []


async def test_shell_output_subscription_wakes_on_its_pattern_and_ends_with_the_task(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    settings = settings_for(tmp_path, model_server)
    workspace = tmp_path / "data" / "workspace"
    async with harness(settings) as h:
        command = "while [ ! -f go ]; do sleep 0.05; done; echo fine; echo 'ERROR: disk'; sleep 60"
        started = await call_tool(h, "start_shell", {"command": command})
        task_id = started.data["task_id"]
        args = {"kind": "shell_output", "task_id": task_id, "pattern": "ERROR"}
        sub = await subscribe(h, model_server, args)
        event = await woken_by(
            h, model_server, "shell.output", lambda: _write(workspace / "go", "")
        )
        assert data_of(event)["subscription"] == sub
        assert data_of(event)["line"] == "ERROR: disk"
    async with harness(settings) as h:  # the task did not survive the restart: nor does it
        [shown] = await subscriptions(h)
        assert shown["state"] == "ended" and task_id in shown["ended_reason"]


async def test_mailbox_subscription_filters_by_sender_and_survives_a_restart(
    tmp_path: Path, model_server: FakeModelServer, imap_server: ImapServer
) -> None:
    # The account's own watcher lets nothing through: only the subscription wakes the agent.
    account = imap_server.account(only_senders=["nobody@nowhere.test"])
    settings = settings_for(tmp_path, model_server, email={"accounts": [account]})
    async with harness(settings) as h:
        sub = await subscribe(h, model_server, {"kind": "mailbox", "sender": "*@ci.example.test"})

        async def two_mails() -> None:
            imap_server.append(make_message("bob@example.test", "lunch?", "not for the filter"))
            imap_server.append(make_message("bot@ci.example.test", "build 41 failed", "red"))

        event = await woken_by(h, model_server, "email.received", two_mails)
        assert data_of(event)["subscription"] == sub
        assert event["content"]["subject"] == "build 41 failed"
        assert event["source"]["trusted"] is False  # a stranger's mail stays untrusted
        [shown] = await subscriptions(h)
        assert shown["detail"] == "watching work/INBOX" and shown["fired"] == 1
    async with harness(settings) as h:

        async def one_more() -> None:
            imap_server.append(make_message("bot@ci.example.test", "build 42 failed", "red"))

        event = await woken_by(h, model_server, "email.received", one_more)
        assert event["content"]["subject"] == "build 42 failed"


async def test_status_lists_subscriptions_without_secrets(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    async with harness(settings_for(tmp_path, model_server)) as h:
        out = await call_tool(h, "connect_channel", {"kind": "webhook", "note": "ci"})
        assert not out.is_error, out.text
        listed = await call_tool(h, "list_channels", {})
        assert out.data["subscription_id"] in listed.text
        async with httpx.AsyncClient(base_url=h.running.url) as anonymous:
            status = (await h.client.get("/api/status")).json()
            shown = json.dumps(status["subscriptions"])
            assert out.data["token"] not in shown and "_token_sha256" not in shown
            assert (await anonymous.get("/api/status")).status_code == 401
