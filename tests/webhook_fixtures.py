"""A daemon with several hooks, run in a portal thread so sync tests (hypothesis) can post."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio.from_thread
import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from tests.daemon_harness import Harness, daemon_settings, harness
from wakeful.app.service import event_loop_options
from wakeful.core.components.context import ComponentSetup

OLD_SECRET = "whsec_" + base64.b64encode(b"old-secret-32-bytes-long-abcdefg").decode()
NEW_SECRET = "whsec_" + base64.b64encode(b"new-secret-32-bytes-long-abcdefg").decode()
GITHUB_SECRET = "It's a Secret to Everybody"
BEARER_TOKEN = "hook-bearer-token-0123456789"
TOKEN_ENV = "WAKEFUL_TEST_WEBHOOK_TOKEN"
SMALL_CAP = 256


def hooks_config(secret_dir: Path) -> list[dict[str, Any]]:
    github_file = secret_dir / "github-secret"
    github_file.write_text(GITHUB_SECRET + "\n")
    return [
        {"name": "std", "secrets": [OLD_SECRET, NEW_SECRET], "session": "hooks",
         "template": "{type}: {data.name}"},
        {"name": "gh", "auth": "github", "secret_file": str(github_file), "preset": "github",
         "priority": "high"},
        {"name": "tok", "auth": "bearer", "secret_env": TOKEN_ENV},
        {"name": "small", "secret": NEW_SECRET, "max_body_bytes": SMALL_CAP},
        {"name": "prs", "auth": "github", "secret": GITHUB_SECRET, "preset": "github",
         "events": ["pull_request"], "filters": [{"field": "action", "equals": "opened"}]},
    ]  # fmt: skip


def sign_standard(secret: str, body: bytes, msg_id: str, at: float | None = None) -> dict[str, str]:
    """Standard Webhooks headers made by the independent reference package."""
    # Whole seconds first: datetime rounds to microseconds, so a time 0.9999996 s into a
    # second signed the next second while the header said this one (a 401 once in ~10^6).
    stamp = int(time.time() if at is None else at)
    signature = Webhook(secret).sign(msg_id, datetime.fromtimestamp(stamp, tz=UTC), body.decode())
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(stamp),
        "webhook-signature": signature,
        "content-type": "application/json",
    }


def sign_github(body: bytes, event: str, delivery: str | None = None) -> dict[str, str]:
    digest = hmac.new(GITHUB_SECRET.encode(), body, hashlib.sha256).hexdigest()
    return {
        "x-hub-signature-256": f"sha256={digest}",
        "x-github-event": event,
        "x-github-delivery": delivery or str(uuid.uuid4()),
        "content-type": "application/json",
    }


def dumps(payload: Any) -> bytes:
    return json.dumps(payload).encode()


@dataclass
class LiveDaemon:
    """The running daemon, a sync client, and a cursor over its event log."""

    portal: anyio.from_thread.BlockingPortal
    harness: Harness
    client: httpx.Client
    seen_seq: int = 0
    seen: list[dict[str, Any]] = field(default_factory=list)

    def post(self, hook: str, body: bytes, headers: dict[str, str]) -> httpx.Response:
        return self.client.post(f"/hooks/{hook}", content=body, headers=headers)

    def new_events(self) -> list[dict[str, Any]]:
        """Events stored since the last call, read from the daemon's own event log."""
        entries: list[dict[str, Any]] = self.portal.call(self._read)
        if entries:
            self.seen_seq = entries[-1]["seq"]
        return entries

    async def _read(self) -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = await self.harness.daemon.event_log(
            None, after_seq=self.seen_seq, limit=1000
        )
        return entries

    def set_stopping(self, stopping: bool) -> None:
        async def flip() -> None:
            self.harness.daemon.dispatcher.stopping = stopping

        self.portal.call(flip)


@contextmanager
def live_daemon(data_dir: Path, *, direct_lane: bool = True) -> Iterator[LiveDaemon]:
    """A daemon with :func:`hooks_config`'s hooks (no model: events are stored, not
    answered), on the daemon's own event loop; ``direct_lane=False``: every delivery
    goes the ASGI way (the webhook component registers no direct route), to compare
    the two."""
    os.environ[TOKEN_ENV] = BEARER_TOKEN
    settings = daemon_settings(
        data_dir, "http://127.0.0.1:9", hooks=hooks_config(data_dir), llm={"model": ""}
    )
    try:
        with (
            pytest.MonkeyPatch.context() as patch,
            # The event loop `wakeful run` uses (uvloop): the direct lane lives in the
            # server's protocol, on the loop's own transports.
            anyio.from_thread.start_blocking_portal(backend_options=event_loop_options()) as portal,
        ):
            if not direct_lane:
                patch.setattr(ComponentSetup, "add_direct_route", lambda self, route: None)
            with (
                portal.wrap_async_context_manager(harness(settings)) as h,
                httpx.Client(base_url=h.running.url, timeout=10) as client,
            ):
                patch.undo()  # only the start needed it
                live = LiveDaemon(portal, h, client)
                live.new_events()
                yield live
    finally:
        os.environ.pop(TOKEN_ENV, None)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveDaemon]:
    """One daemon (no model: events are stored, not answered) for the module's tests."""
    with live_daemon(tmp_path_factory.mktemp("webhook-daemon")) as daemon:
        yield daemon
