"""SIGKILL `wakeful run` in the middle of a Matrix conversation, again and again:
every message is answered exactly once — none lost, none twice."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer
from tests.matrix_daemon import TAG, MatrixScene, answer_tags, matrix_scene, wait_until
from tests.synapse_server import SynapseServer


def answered_tags(scene: MatrixScene, room: str) -> Counter[str]:
    return Counter(
        tag for r in scene.bot_replies(room) for tag in TAG.findall(r["content"]["body"])
    )


def explain(daemon: DaemonProcess) -> str:
    """What the daemon made of it all, for a failure's message."""
    with daemon.client() as api:
        events = api.get("/api/events", params={"limit": 100}).json()
        outbox = api.get("/api/sessions/main/outbox").json()
    return f"events: {json.dumps(events)}\noutbox: {json.dumps(outbox)}"


def converse_with_kills(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path, kills: int
) -> None:
    answer_tags(model_server, token_delay_s=0.01)
    with matrix_scene(synapse, tmp_path, model_server.base_url) as scene:
        room = scene.room_with_bot()
        daemon = DaemonProcess(scene.config, scene.port).start()
        try:
            scene.wait_joined(room)
            for number in range(kills):
                asked = len(model_server.requests)
                scene.owner_client.send_text(room, f"question msg-{number}")
                moment = number % 3
                if moment == 1:  # the model was asked: the run is under way
                    model_server.wait_for_requests(asked + 1, timeout_s=20)
                elif moment == 2:  # the reply went out: is it sent again after the restart?
                    wait_until(lambda n=number: answered_tags(scene, room)[f"msg-{n}"], "reply")
                # moment 0: at once — the message may not even have been synced yet
                daemon.kill()
                daemon = DaemonProcess(scene.config, scene.port).start()
            everything = {f"msg-{n}" for n in range(kills)}
            try:
                wait_until(lambda: everything <= set(answered_tags(scene, room)), "answers", 60)
            except TimeoutError:
                missing = sorted(everything - set(answered_tags(scene, room)))
                raise AssertionError(f"never answered: {missing}; {explain(daemon)}") from None
            assert daemon.stop() == 0
        finally:
            daemon.__exit__(None, None, None)
        tags = answered_tags(scene, room)
        assert tags == Counter(everything), f"answered other than once: {tags}"


def test_three_kills_mid_conversation_every_message_answered_once(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    converse_with_kills(synapse, model_server, tmp_path, kills=3)


@pytest.mark.slow
def test_twenty_kills_mid_conversation_every_message_answered_once(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    converse_with_kills(synapse, model_server, tmp_path, kills=20)
