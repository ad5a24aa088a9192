"""Unprompted replies: a timer fires and a shell task ends while no client is connected;
the replies wait in the outbox; the next `wakeful chat` (a real process on a pty) shows
them at once and acknowledges them; the chat after that does not show them again; a
SIGKILL of the daemon in between loses none and shows none twice."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pexpect

from tests.chat_terminal import on_screen, spawn_chat, transcript
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_replies import Reply, ToolCallSpec
from tests.fakes.model_server import FakeModelServer

PHRASES = ("ON-IT", "BUILD-DONE", "STANDUP-NOW")


def agent(body: dict[str, Any]) -> Reply:
    """Answers what is new since its last turn (batched events get one combined reply)."""
    messages = body["messages"][:-1]  # the last one is the status bar
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    new = messages[last + 1 :]
    text = "\n".join(str(m.get("content") or "") for m in new)
    if last == -1:
        return Reply(
            tool_calls=(
                ToolCallSpec("start_shell", {"command": "echo built-ok"}),
                ToolCallSpec("set_timer", {"after": "2s", "message": "stand-up meeting"}),
            )
        )
    said = [
        phrase
        for phrase, seen in zip(
            PHRASES,
            (
                any(m["role"] == "tool" for m in new),
                " exited" in text,
                "Timer fired" in text,
            ),
            strict=True,
        )
        if seen
    ]
    return Reply(text=" ".join(said) or "nothing new")


def wait_until(probe: Callable[[], bool], timeout_s: float = 30.0) -> None:
    # The daemon is another process: no event crosses over, so its HTTP state is polled.
    deadline = time.monotonic() + timeout_s
    while not probe():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def outbox(daemon: DaemonProcess, **params: Any) -> list[dict[str, Any]]:
    with daemon.client() as client:
        response = client.get("/api/sessions/main/outbox", params=params)
    assert response.status_code == 200, response.text
    messages: list[dict[str, Any]] = response.json()["messages"]
    return messages


def said(messages: list[dict[str, Any]]) -> str:
    return " ".join(m["text"] for m in messages)


def chat(config: Path, *args: str) -> pexpect.spawn:
    return spawn_chat(config, config.parent / "state", *args)


def until_prompt_then_quit(child: pexpect.spawn) -> str:
    """Everything the chat printed before its first prompt; then Ctrl-D."""
    child.expect("you>")
    shown = on_screen(child)
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    return shown


def test_replies_made_while_nobody_listens_are_shown_once(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.responder = agent
    port = free_port()
    config = write_config(tmp_path, model_server.base_url, port)
    with DaemonProcess(config, port) as daemon:
        daemon.send("build it, and remind me of the stand-up")
        wait_until(lambda: all(p in said(outbox(daemon, unread=1)) for p in PHRASES))
        made = outbox(daemon)
        daemon.kill()  # a restart between the replies and the next chat
    assert all(m["state"] == "sent" and m["acked_at"] is None for m in made)
    assert {m["channel"] for m in made} == {"chat:web"}
    answers = {m["answers"] for m in made}
    assert len(answers) >= 2  # the timer's and the shell's events were answered too

    with DaemonProcess(config, port) as daemon:
        first = until_prompt_then_quit(chat(config))
        for phrase in PHRASES:
            assert first.count(phrase) == 1, first  # shown at once, unasked, once each
        assert outbox(daemon, unread=1) == []  # acknowledged
        daemon.kill()

    with DaemonProcess(config, port) as daemon:
        second = until_prompt_then_quit(chat(config))
        assert not any(phrase in second for phrase in PHRASES), second
        history = until_prompt_then_quit(chat(config, "--history"))
        assert all(history.count(phrase) == 1 for phrase in PHRASES), history
        assert [m["id"] for m in outbox(daemon)] == [m["id"] for m in made]  # none lost
        assert daemon.stop() == 0


def test_an_open_chat_shows_replies_that_arrive_between_prompts(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    """The shell's and the timer's replies come after the run that set them up went
    idle: the chat prints them as they arrive, unasked, and acknowledges them."""
    model_server.responder = agent
    port = free_port()
    config = write_config(tmp_path, model_server.base_url, port)
    with DaemonProcess(config, port) as daemon:
        child = chat(config)
        child.expect("you>")
        child.sendline("build it, and remind me of the stand-up")
        child.expect("STANDUP-NOW", timeout=30)  # the timer fires ~2 s after the run ended
        until_prompt_then_quit(child)
        assert outbox(daemon, unread=1) == []
        assert daemon.stop() == 0
    shown = on_screen(child)
    assert all(shown.count(phrase) == 1 for phrase in PHRASES), shown
    # The prompt was back (the run was over) before the timer's reply was printed.
    raw = transcript(child)  # the prompt's redraws, which the screen no longer shows
    assert raw.find("you>", raw.index("ON-IT")) < raw.index("STANDUP-NOW"), raw
