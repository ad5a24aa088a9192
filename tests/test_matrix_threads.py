"""Matrix threads and notices, on a real Synapse through a real `wakeful run`.

A message written in a thread is answered in that thread (every piece of a long
reply); one in the main timeline is answered there. What the bot sends is an
m.notice by default (the Matrix convention for programs: no bot answers a
notice), and a notice from someone else is never answered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.daemon_process import DaemonProcess
from tests.fakes.model_server import FakeModelServer, Reply
from tests.matrix_daemon import answer_tags, matrix_scene, wait_until
from tests.synapse_server import SynapseServer
from wakeful.channels.matrix.address import ReplyPlace, parse_address
from wakeful.channels.matrix.outgoing import MAX_CHARS
from wakeful.channels.matrix.sync_batch import parse_sync


def thread_of(event: dict[str, Any]) -> str | None:
    relation = event["content"].get("m.relates_to") or {}
    return relation.get("event_id") if relation.get("rel_type") == "m.thread" else None


def test_a_threaded_message_is_answered_in_its_thread_and_the_main_timeline_in_the_main(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    with (
        matrix_scene(synapse, tmp_path, model_server.base_url) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        room = scene.room_with_bot()
        scene.wait_joined(room)
        root = scene.owner_client.send_text(room, "a plain question, msg-1")
        [first] = scene.wait_replies(room, 1)
        assert thread_of(first) is None
        asked = scene.owner_client.send_text(room, "and in the thread, msg-2", thread=root)
        second = scene.wait_replies(room, 2)[1]
        assert second["content"]["body"] == "**got** msg-2"
        assert second["content"]["m.relates_to"] == {
            "rel_type": "m.thread",
            "event_id": root,
            "is_falling_back": True,
            "m.in_reply_to": {"event_id": asked},
        }
        # The default msgtype: a program's messages are notices.
        assert {first["content"]["msgtype"], second["content"]["msgtype"]} == {"m.notice"}
        assert daemon.stop() == 0


def test_every_piece_of_a_long_threaded_reply_stays_in_the_thread(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    long_reply = "\n\n".join(f"paragraph {n} " + "word " * 400 for n in range(8))
    assert len(long_reply) > 2 * MAX_CHARS  # three pieces at least
    answer_tags(model_server)
    model_server.push(Reply(text="**got** the root"), Reply(text=long_reply))
    with (
        matrix_scene(synapse, tmp_path, model_server.base_url) as scene,
        DaemonProcess(scene.config, scene.port) as daemon,
    ):
        room = scene.room_with_bot()
        scene.wait_joined(room)
        root = scene.owner_client.send_text(room, "start a thread")
        scene.wait_replies(room, 1)
        scene.owner_client.send_text(room, "tell me everything", thread=root)
        replies = wait_until(
            lambda: (
                (r := scene.bot_replies(room)) and "paragraph 7" in r[-1]["content"]["body"] and r
            ),
            "the long reply's last piece",
        )
        assert thread_of(replies[0]) is None  # the root's own answer: main timeline
        pieces = replies[1:]
        assert len(pieces) >= 3
        assert [thread_of(piece) for piece in pieces] == [root] * len(pieces)
        assert all(len(piece["content"]["body"]) <= MAX_CHARS for piece in pieces)
        assert daemon.stop() == 0


def test_msgtype_m_text_is_honoured_and_a_notice_from_another_user_is_never_answered(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    with matrix_scene(synapse, tmp_path, model_server.base_url) as scene:
        # Not the default: a test of the setting itself (its sibling above runs the default).
        scene.config.write_text(scene.config.read_text() + 'msgtype = "m.text"\n')
        with DaemonProcess(scene.config, scene.port) as daemon:
            room = scene.room_with_bot()
            scene.wait_joined(room)
            scene.owner_client.send_text(room, "an automated notice, msg-0", msgtype="m.notice")
            scene.owner_client.send_text(room, "a person's words, msg-1")
            [reply] = scene.wait_replies(room, 1)
            assert reply["content"] == {"msgtype": "m.text", "body": "**got** msg-1"} | {
                k: v for k, v in reply["content"].items() if k.startswith("format")
            }
            assert daemon.stop() == 0
        assert all("msg-0" not in str(request.body) for request in model_server.requests)


def test_a_restart_mid_thread_still_answers_in_the_thread(
    synapse: SynapseServer, model_server: FakeModelServer, tmp_path: Path
) -> None:
    answer_tags(model_server)
    with matrix_scene(synapse, tmp_path, model_server.base_url) as scene:
        with DaemonProcess(scene.config, scene.port) as daemon:
            room = scene.room_with_bot()
            scene.wait_joined(room)
            root = scene.owner_client.send_text(room, "first, msg-1")
            scene.wait_replies(room, 1)
            daemon.kill()
        # Written while the daemon is down: read at the next start from the sync token.
        scene.owner_client.send_text(room, "while you were away, msg-2", thread=root)
        with DaemonProcess(scene.config, scene.port) as daemon:
            second = scene.wait_replies(room, 2)[1]
            assert second["content"]["body"] == "**got** msg-2"
            assert thread_of(second) == root
            assert daemon.stop() == 0
        assert len(scene.bot_replies(room)) == 2


ids = st.text(
    alphabet=st.characters(blacklist_categories=("Zs", "Cc", "Cs")), min_size=1, max_size=40
)


@given(room=ids, root=st.none() | ids, answered=ids)
def test_a_reply_place_survives_its_address(room: str, root: str | None, answered: str) -> None:
    """Room and event ids have no white space, so the address always parses back."""
    place = ReplyPlace(room, root, answered if root is not None else None)
    assert parse_address(place.address) == place


def test_a_threaded_event_carries_its_root_and_a_plain_one_none() -> None:
    def event(eid: str, content: dict[str, Any]) -> dict[str, Any]:
        body = {"msgtype": "m.text", "body": "hi", **content}
        return {"type": "m.room.message", "event_id": eid, "sender": "@o:x", "content": body}

    threaded = {"m.relates_to": {"rel_type": "m.thread", "event_id": "$root"}}
    data = {
        "next_batch": "s1",
        "rooms": {
            "join": {"!r:x": {"timeline": {"events": [event("$1", {}), event("$2", threaded)]}}}
        },
    }
    batch = parse_sync(data, "@bot:x")
    assert [(m.event_id, m.thread_root) for m in batch.messages] == [("$1", None), ("$2", "$root")]
