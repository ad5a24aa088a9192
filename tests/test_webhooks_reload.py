"""SIGHUP reload of webhooks: the new hook set applies without a restart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.daemon_harness import daemon_settings, harness
from tests.fakes.model_server import FakeModelServer
from tests.webhook_fixtures import NEW_SECRET, sign_standard
from wakeful.sources.webhook.component import WebhookComponent

pytestmark = pytest.mark.anyio


async def test_reload_swaps_the_hooks(tmp_path: Path, model_server: FakeModelServer) -> None:
    """After reload a removed hook answers 404 and an added one accepts signed deliveries."""
    before = [{"name": "old", "secret": NEW_SECRET}]
    after = [{"name": "new", "secret": NEW_SECRET}]
    body = json.dumps({"hello": "world"}).encode()
    async with harness(daemon_settings(tmp_path, model_server.base_url, hooks=before)) as h:
        (reloader,) = [r for r in h.running.reloadables if isinstance(r, WebhookComponent)]
        sections = await reloader.reload(
            daemon_settings(tmp_path, model_server.base_url, hooks=after)
        )
        headers = sign_standard(NEW_SECRET, body, "msg-reload-1")
        gone = await h.client.post("/hooks/old", content=body, headers=headers)
        added = await h.client.post("/hooks/new", content=body, headers=headers)
    assert sections == ["hooks"]
    assert gone.status_code == 404
    assert added.status_code == 202, added.text


async def test_bad_reload_keeps_the_running_hooks(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """A config whose hook cannot be built is refused and the running hooks stay."""
    hooks = [{"name": "keep", "secret": NEW_SECRET}]
    body = b"{}"
    async with harness(daemon_settings(tmp_path, model_server.base_url, hooks=hooks)) as h:
        (reloader,) = [r for r in h.running.reloadables if isinstance(r, WebhookComponent)]
        broken = daemon_settings(
            tmp_path,
            model_server.base_url,
            hooks=[{"name": "keep", "secret_file": str(tmp_path / "missing")}],
        )
        with pytest.raises(ValueError, match="keep"):
            await reloader.reload(broken)
        response = await h.client.post(
            "/hooks/keep", content=body, headers=sign_standard(NEW_SECRET, body, "msg-keep-1")
        )
    assert response.status_code == 202, response.text
