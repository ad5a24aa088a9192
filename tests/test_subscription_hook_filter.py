"""connect_channel kind webhook with ``hook``: a filter on a configured [[hooks]] route.

Deliveries to /hooks/<name> that pass the subscription's conditions carry its
id and still go where the hook sends them; others arrive as before; a
subscriber in another session gets its own copy; an unknown hook is refused
naming the configured ones; the filter survives a restart.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.daemon_harness import Harness, watch_feed
from tests.daemon_harness import harness as harness_for
from tests.fakes.model_server import FakeModelServer, Reply
from tests.test_subscriptions import (
    data_of,
    settings_for,
    subscribe,
    subscriptions,
    tool_result,
    woken_by,
)
from tests.webhook_fixtures import GITHUB_SECRET, dumps, sign_github
from wakeful.core.loop.task_views import CombinedTaskView
from wakeful.core.tool import ToolContext, ToolOutput
from wakeful.sources.webhook.config import HookConfig

pytestmark = pytest.mark.anyio

HOOK = HookConfig.model_validate({"name": "github", "auth": "github", "secret": GITHUB_SECRET})
OPENED = {"field": "action", "equals": "opened"}


async def call_as(h: Harness, session: str, name: str, args: dict[str, Any]) -> ToolOutput:
    async def reply(_: str) -> None:
        return None

    data_dir = h.running.data_dir
    workspace = data_dir / "workspace"
    tasks = CombinedTaskView([])
    ctx = ToolContext(session, "call_test", workspace, data_dir, tasks, reply)  # type: ignore[arg-type]
    return await h.running.registrations.tools.execute(name, json.dumps(args), ctx)


async def post_pr(h: Harness, action: str, number: int) -> dict[str, Any]:
    body = dumps({"action": action, "number": number, "pull_request": {"title": "t"}})
    response = await h.client.post(
        "/hooks/github", content=body, headers=sign_github(body, "pull_request")
    )
    assert response.status_code == 202, response.text
    found: dict[str, Any] = response.json()
    return found


async def stored(h: Harness, event_id: str) -> dict[str, Any]:
    events = await h.daemon.store.event_log(None, 0, 1000)
    dumped: dict[str, Any] = next(s.event for s in events if s.event.id == event_id).model_dump(
        mode="json"
    )
    return dumped


async def test_a_filter_on_a_configured_hook_tags_matching_deliveries(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    settings = settings_for(tmp_path, model_server).model_copy(update={"hooks": [HOOK]})
    async with harness_for(settings) as h:
        refused = await call_as(h, "main", "connect_channel", {"kind": "webhook", "hook": "gitlab"})
        assert refused.is_error and "hook:" in refused.text and "'github'" in refused.text
        sub = await subscribe(
            h, model_server, {"kind": "webhook", "hook": "github", "conditions": [OPENED]}
        )
        told = tool_result(model_server.requests[-1].body)
        assert "/hooks/github" in told and "Bearer" not in told  # no route or token of its own

        async def post_closed() -> None:
            await post_pr(h, "closed", 1)

        event = await woken_by(h, model_server, "webhook.received", post_closed)
        assert "subscription" not in data_of(event)  # as before the subscription
        assert event["session"] == "main" and event["id"].startswith("wh:github:")

        async def post_opened() -> None:
            await post_pr(h, "opened", 2)

        event = await woken_by(h, model_server, "webhook.received", post_opened)
        assert data_of(event)["subscription"] == sub
        assert data_of(event)["subscriptions"] == [sub]
        assert event["session"] == "main" and event["id"].startswith("wh:github:")
        [shown] = await subscriptions(h)
        assert shown["fired"] == 1 and shown["filter"]["hook"] == "github"
        assert shown["detail"] == "filtering deliveries to POST /hooks/github"
        # The subscription's route is not a door for this kind.
        gone = await h.client.post(f"/hooks/subscriptions/{sub}", json={"action": "opened"})
        assert gone.status_code == 404

        # A subscriber in another session: the hook's event still goes to main, and a
        # copy under the subscription's own id to the subscriber.
        other = await call_as(
            h,
            "other",
            "connect_channel",
            {"kind": "webhook", "hook": "github", "conditions": [OPENED]},
        )
        assert not other.is_error, other.text
        other_sub = str(other.data["subscription_id"])
        model_server.push(Reply(text="Main noted."), Reply(text="Other noted."))
        async with watch_feed(h, "other") as feed:
            answer = await post_pr(h, "opened", 3)
            await feed.wait_for(lambda i: i.get("text") in ("Main noted.", "Other noted."))
        main_event = await stored(h, answer["event_id"])
        assert sorted(data_of(main_event)["subscriptions"]) == sorted([sub, other_sub])
        copy = await stored(h, f"sub:{other_sub}:{answer['event_id']}")
        assert copy["session"] == "other" and data_of(copy)["subscription"] == other_sub
        out = await call_as(h, "other", "disconnect_channel", {"subscription_id": other_sub})
        assert not out.is_error, out.text

    async with harness_for(settings) as h:  # the filter is re-armed at start

        async def post_opened_again() -> None:
            await post_pr(h, "opened", 4)

        event = await woken_by(h, model_server, "webhook.received", post_opened_again)
        assert data_of(event)["subscriptions"] == [sub]
