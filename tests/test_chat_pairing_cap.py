"""Issue 22: pending chat pairing requests are bounded.

Through a chat channel in a running daemon (tests.chat_loopback, real SQLite
store): a stranger beyond the cap gets no code and no answer, with one warning;
the requests already waiting are kept; once one is decided, a new stranger is
answered again. Expired requests are deleted when requests are counted.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import pytest
import structlog.testing

from tests.chat_loopback import LoopbackChat
from tests.daemon_harness import daemon_settings
from tests.fakes.model_server import FakeModelServer
from wakeful.app.components import default_components
from wakeful.app.lifespan import running_daemon
from wakeful.channels.chat.inbound import PlatformMessage, Received
from wakeful.channels.chat.pairing import CODE_TTL_S, Pairing, code_key

pytestmark = pytest.mark.anyio
OWNER = "111"
# The shipped cap (wakeful.channels.chat.pairing.MAX_PENDING), as a literal so the
# test also runs (and fails) on code from before the cap existed.
MAX_PENDING = 100


def stranger(n: int) -> PlatformMessage:
    return PlatformMessage(f"m{n}", f"s{n}", f"stranger {n}", f"chat-s{n}", "let me in")


async def test_pending_pairing_requests_are_capped_and_the_new_one_refused(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    chat = LoopbackChat({OWNER})
    settings = daemon_settings(tmp_path / "data", model_server.base_url)
    async with running_daemon(settings, [*default_components(settings), chat]):
        assert chat.inbound is not None and chat.state is not None
        state = chat.state
        pairing = Pairing(state)
        for n in range(MAX_PENDING):
            assert await chat.inbound.receive(stranger(n)) is Received.PAIRING
        await chat.client.wait_sent(MAX_PENDING)
        with structlog.testing.capture_logs() as logged:
            for n in range(MAX_PENDING, MAX_PENDING + 5):
                assert await chat.inbound.receive(stranger(n)) is Received.IGNORED
        notices = [e for e in logged if "pairing requests are waiting" in e["event"]]
        assert len(notices) == 1 and notices[0]["log_level"] == "warning"
        assert len(chat.client.sent) == MAX_PENDING  # the refused got nothing
        waiting = await pairing.pending()
        assert [r.user_id for r in waiting] == [f"s{n}" for n in range(MAX_PENDING)]

        # One decided: there is room for the next stranger.
        assert await pairing.decide("telegram", waiting[0].code, approve=False) is not None
        assert await chat.inbound.receive(stranger(500)) is Received.PAIRING

        # An expired request does not count, and is deleted when requests are counted.
        old = replace(waiting[1], requested_at=time.time() - CODE_TTL_S - 1)
        await state.put_state(code_key("telegram", old.code), json.dumps(asdict(old)))
        assert await chat.inbound.receive(stranger(501)) is Received.PAIRING
        assert await state.get_state(code_key("telegram", old.code)) is None
        assert len(await pairing.pending()) == MAX_PENDING
