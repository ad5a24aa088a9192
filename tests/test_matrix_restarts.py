"""SIGKILL `wakeful run` in the middle of a Matrix conversation, again and again
(tests/support/sigkill_rounds.py): killed at once (the message may not even have been
synced), while the model is asked, and right after the reply went out — without
waiting for each answer before the next message, so a reply may answer several.
Every message is answered exactly once — none lost, none twice."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.matrix_daemon import MatrixScene, matrix_scene, wait_until
from tests.support.sigkill_rounds import (
    ChatPlatform,
    SigkillRounds,
    Tags,
    after_the_answer,
    at_once,
    cycle,
    mid_stream,
    sigkill_rounds,
)
from tests.synapse_server import SynapseServer


class Matrix(ChatPlatform):
    answer_timeout_s = 60.0

    def __init__(self, scene: MatrixScene) -> None:
        self.scene = scene
        self.room = scene.room_with_bot()
        self.joined = False

    def say(self, text: str) -> None:
        self.scene.owner_client.send_text(self.room, text)

    def posted(self) -> list[str]:
        return [reply["content"]["body"] for reply in self.scene.bot_replies(self.room)]

    def wait_for(self, condition: Callable[[], object], timeout_s: float, what: str) -> None:
        wait_until(condition, what, timeout_s)

    def ready(self, daemon: DaemonProcess) -> None:
        if not self.joined:
            self.scene.wait_joined(self.room)
            self.joined = True


def explain(daemon: DaemonProcess) -> str:
    """What the daemon made of it all, for a failure's message."""
    with daemon.client() as api:
        events = api.get("/api/events", params={"limit": 100}).json()
        outbox = api.get("/api/sessions/main/outbox").json()
    return f"events: {json.dumps(events)}\noutbox: {json.dumps(outbox)}"


@pytest.fixture
def rounds(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> Iterator[SigkillRounds[Matrix]]:
    with matrix_scene(synapse, tmp_path, model_server.base_url) as scene:
        matrix = Matrix(scene)
        with sigkill_rounds(matrix, model_server, scene.config, scene.port, Tags()) as r:
            yield r


def converse_with_kills(r: SigkillRounds[Matrix], kills: int) -> None:
    try:
        r.run(cycle([at_once, mid_stream, after_the_answer], kills), wait_each_round=False)
    except TimeoutError as error:
        raise AssertionError(f"{error}; {explain(r.daemon)}") from None


def test_three_kills_mid_conversation_every_message_answered_once(
    rounds: SigkillRounds[Matrix],
) -> None:
    converse_with_kills(rounds, kills=3)


@pytest.mark.slow
def test_twenty_kills_mid_conversation_every_message_answered_once(
    rounds: SigkillRounds[Matrix],
) -> None:
    converse_with_kills(rounds, kills=20)
