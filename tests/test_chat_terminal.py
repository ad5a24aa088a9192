"""`wakeful chat` as a person meets it: a real `wakeful run`, the fake streaming model,
and the chat on a real pty (pexpect): the reply streams, `!stop` and Ctrl-C interrupt
a run (the model stream is closed) and the chat stays, a line typed during a run is sent
at once, Ctrl-C twice or Ctrl-D quits,
an unprompted reply leaves the half-typed line intact, arrow keys edit and recall."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from tests.chat_terminal import (
    COLUMNS,
    on_screen,
    screen_until,
    spawn_chat,
    transcript,
)
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_replies import Reply, ToolCallSpec
from tests.fakes.model_server import FakeModelServer

WORDS = " ".join(f"w{i:02d}" for i in range(25))  # 25 tokens (one screen line): 5 s at 0.2 s
LEFT, UP = "\x1b[D", "\x1b[A"


@pytest.fixture
def daemon(tmp_path: Path, model_server: FakeModelServer) -> Iterator[DaemonProcess]:
    port = free_port()
    with DaemonProcess(write_config(tmp_path / "data", model_server.base_url, port), port) as d:
        yield d


def chat(daemon: DaemonProcess, state_home: Path, columns: int = COLUMNS) -> pexpect.spawn:
    child = spawn_chat(daemon.config, state_home, columns=columns)
    child.expect("you>")
    return child


def quit_with_ctrl_d(child: pexpect.spawn) -> None:
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, transcript(child)


def user_texts(model_server: FakeModelServer) -> list[str]:
    """What the user said, in the last request the model received."""
    messages = model_server.requests[-1].body["messages"][:-1]  # the last: the status bar
    return [str(m.get("content")) for m in messages if m["role"] == "user"]


def test_the_reply_streams_and_is_printed_once(
    daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    model_server.push(Reply(text=WORDS, token_delay_s=0.1))  # 2.5 s in all
    child = chat(daemon, tmp_path)
    child.sendline("tell me")
    child.expect("w03")
    assert not model_server.requests[0].completed  # on screen while still streaming
    model_server.wait_for_completion(0, timeout_s=10)
    child.expect("w24")
    with daemon.client() as client:
        unread = client.get("/api/sessions/main/outbox", params={"unread": 1}).json()
    assert unread["messages"] == []  # the reply record was acknowledged
    quit_with_ctrl_d(child)
    assert on_screen(child).count(WORDS) == 1, on_screen(child)  # not printed twice


# 150 words of 5 cells: nine rows or more at the widths people's terminals have.
LONG = " ".join(f"x{i:03d}" for i in range(150))


def finished(lines: list[str], last_word: str) -> bool:
    """The reply's last row is on the screen and the prompt is the last line under it."""
    filled = [line for line in lines if line.strip()]
    return any(line.endswith(last_word) for line in filled) and filled[-1].startswith("you>")


@pytest.mark.parametrize("columns", [80, 100])
def test_a_long_reply_streams_row_by_row_and_wraps_at_words(
    columns: int, daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    model_server.push(Reply(text=LONG, token_delay_s=0.04))  # one paragraph, 6 s in all
    child = chat(daemon, tmp_path, columns)
    child.sendline("tell me at length")
    child.expect("x060")  # past the first rows: the reply did not stop at one row
    assert not model_server.requests[0].completed, "shown only once the paragraph ended"
    model_server.wait_for_completion(0, timeout_s=15)
    child.expect("x149")
    # The last row is drawn for good once the reply ends; the prompt redraws between.
    screen = screen_until(child, lambda lines: finished(lines, "x149"))
    rows = [row for row in screen if row.startswith("x")]
    assert all(len(row) < columns for row in rows), rows
    shown = " ".join(rows).split(" ")
    assert shown == LONG.split(" "), rows  # every word once, none cut across rows
    quit_with_ctrl_d(child)


def test_ctrl_c_interrupts_the_run_that_answers_an_interrupt(
    daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    # The interrupt is itself answered: the run goes on with a second model call.
    model_server.push(Reply(text=WORDS, token_delay_s=0.2), Reply(text=WORDS, token_delay_s=0.2))
    child = chat(daemon, tmp_path)
    child.sendline("tell me a long one")
    child.expect("w01")
    child.sendintr()
    model_server.wait_for_abort(0, timeout_s=10)
    model_server.wait_for_requests(2, timeout_s=10)
    child.sendintr()  # during the second call: it must stop too, not arm "quit"
    model_server.wait_for_abort(1, timeout_s=10)
    assert "Ctrl-C again to quit" not in on_screen(child)
    assert child.isalive()
    quit_with_ctrl_d(child)


@pytest.mark.parametrize("how", ["!stop", "ctrl-c"])
def test_an_interrupt_during_a_stream_closes_it_and_the_chat_stays(
    how: str, daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    model_server.push(Reply(text=WORDS, token_delay_s=0.2))
    child = chat(daemon, tmp_path)
    child.sendline("tell me a long one")
    child.expect("w01")
    if how == "ctrl-c":
        child.sendintr()
    else:
        child.sendline("!stop")
    model_server.wait_for_abort(0, timeout_s=10)  # the daemon closed the model stream
    child.expect("partial answer dropped")
    assert on_screen(child).count("w00") == 1  # what streamed stays, once, above the note
    model_server.push(Reply(text="STILL-HERE"))
    child.expect("you>")
    child.sendline("are you there?")
    child.expect("STILL-HERE")
    assert child.isalive()
    quit_with_ctrl_d(child)


def test_a_line_typed_during_a_run_is_sent_at_once(
    daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    model_server.push(Reply(text=WORDS, token_delay_s=0.2))
    child = chat(daemon, tmp_path)
    child.sendline("tell me a long one")
    child.expect("w01")
    assert not model_server.requests[0].completed  # typed while the run still streams
    child.sendline("and one more thing")

    def stored() -> bool:
        with daemon.client() as client:
            events = client.get("/api/sessions/main/events", params={"after": 0}).json()
        return "and one more thing" in json.dumps(events)

    while not stored():  # the daemon is another process: its log is polled
        assert not (model_server.requests[0].completed or model_server.requests[0].aborted)
        time.sleep(0.05)
    quit_with_ctrl_d(child)


def test_ctrl_c_twice_quits_and_once_does_not(daemon: DaemonProcess, tmp_path: Path) -> None:
    child = chat(daemon, tmp_path)
    child.sendintr()
    child.expect("Ctrl-C again to quit")
    assert child.isalive()
    child.sendintr()
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, transcript(child)


def test_an_unprompted_reply_leaves_the_half_typed_line_intact(
    daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    child = chat(daemon, tmp_path)
    child.send("half-typed")
    child.expect("half-typed")
    model_server.push(Reply(text="FROM-ELSEWHERE"))
    daemon.send("a message from another client")  # as `wakeful send` would
    child.expect("FROM-ELSEWHERE")
    child.expect("half-typed")  # the line being edited is drawn again below it
    model_server.push(Reply(text="GOT-IT"))
    child.send(" line\r")
    child.expect("GOT-IT")
    assert "half-typed line" in user_texts(model_server)[-1]
    quit_with_ctrl_d(child)


def test_ctrl_d_quits_at_once_after_showing_a_reply_that_waited_unread(
    daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    model_server.push(Reply(text="WAITED-FOR-YOU"))
    daemon.send("said while no chat was open")

    def unread() -> list[object]:
        with daemon.client() as client:
            answer = client.get("/api/sessions/main/outbox", params={"unread": 1}).json()
        return list(answer["messages"])

    while not unread():  # the daemon is another process: its outbox is polled
        time.sleep(0.05)
    child = chat(daemon, tmp_path)
    assert "WAITED-FOR-YOU" in on_screen(child)  # shown before the first prompt
    child.sendcontrol("d")
    child.expect(pexpect.EOF, timeout=3)  # not after a 5 s join of the follower
    child.close()
    assert child.exitstatus == 0, transcript(child)


def test_arrow_keys_edit_and_up_recalls(
    daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    child = chat(daemon, tmp_path)
    child.send(f"helo{LEFT}l\r")
    model_server.wait_for_requests(1, timeout_s=10)
    child.expect("ok")
    assert "hello" in user_texts(model_server)[-1]
    assert "helo" not in " ".join(user_texts(model_server))
    child.send(f"{UP}\r")  # the previous line, sent again
    model_server.wait_for_requests(2, timeout_s=10)
    assert sum("hello" in text for text in user_texts(model_server)) == 2
    child.expect("ok")
    child.expect("you>")
    quit_with_ctrl_d(child)
    assert "hello" in (tmp_path / "wakeful-chat" / "history").read_text()


def test_ctrl_d_typed_while_a_line_is_being_sent_quits_once_it_is_sent(
    daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    """The chat posts a line between two prompts; a ^D typed then is a key for the next
    prompt, not the terminal's end-of-file (which the line discipline takes and loses
    when the terminal is out of raw mode: the chat then never quit). The daemon is
    stopped (SIGSTOP) so the post is still waiting when the ^D is typed."""
    child = chat(daemon, tmp_path)
    assert daemon.proc is not None
    port = int(daemon.url.rpartition(":")[2])
    daemon.proc.send_signal(signal.SIGSTOP)
    try:
        child.send("hello\r")
        deadline = time.monotonic() + 10
        while not _unread_bytes_at(port):  # the daemon is another process: polled
            assert time.monotonic() < deadline, "the chat never posted the line"
            time.sleep(0.02)
        child.sendcontrol("d")
    finally:
        daemon.proc.send_signal(signal.SIGCONT)
    child.expect(pexpect.EOF, timeout=10)
    child.close()
    assert child.exitstatus == 0, transcript(child)
    model_server.wait_for_requests(1, timeout_s=10)
    assert "hello" in user_texts(model_server)[-1]  # the line itself was sent


def _unread_bytes_at(port: int) -> bool:
    """Whether a connection to 127.0.0.1:``port`` holds bytes its server has not read: a
    request sent to the stopped daemon (the chat is waiting for its answer)."""
    with open("/proc/net/tcp") as table:
        next(table)  # the header
        for row in table:
            local, state, queues = row.split()[1], row.split()[3], row.split()[4]
            listening_side = int(local.rpartition(":")[2], 16) == port
            if listening_side and state == "01" and int(queues.partition(":")[2], 16) > 0:
                return True
    return False


def test_tool_activity_is_one_line_each_and_history_may_be_unwritable(
    daemon: DaemonProcess, model_server: FakeModelServer, tmp_path: Path
) -> None:
    blocked = tmp_path / "a-file"
    blocked.write_text("")  # XDG_STATE_HOME is a file: no history directory can be made
    model_server.push(
        Reply(tool_calls=(ToolCallSpec("shell_exec", {"command": "echo hi"}),)),
        Reply(text="ALL-DONE"),
    )
    child = chat(daemon, blocked)
    child.sendline("run it")
    child.expect(r"shell_exec started")
    child.expect(r"shell_exec finished in \d+\.\d s")
    child.expect("ALL-DONE")
    quit_with_ctrl_d(child)
    assert "no saved history" in transcript(child)


def test_a_pipe_gets_a_plain_line_mode(
    daemon: DaemonProcess, model_server: FakeModelServer
) -> None:
    model_server.push(Reply(text="FIRST-ANSWER"), Reply(text="SECOND-ANSWER"))
    done = subprocess.run(
        [sys.executable, "-m", "wakeful", "-c", str(daemon.config), "chat"],
        input="one\ntwo\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.index("FIRST-ANSWER") < done.stdout.index("SECOND-ANSWER"), done.stdout
    assert "\x1b" not in done.stdout


def test_a_daemon_killed_mid_answer_leaves_one_whole_answer_after_the_restart(
    model_server: FakeModelServer, tmp_path: Path
) -> None:
    """SIGKILL while a reply streams, then a restart on the same port: the chat says
    once that it lost the daemon and once that it is back, and the answer the new run
    gives is on the screen whole, once (not glued to the half shown before the kill)."""
    port = free_port()
    config = write_config(tmp_path / "data", model_server.base_url, port)
    after = " ".join(f"a{i:02d}" for i in range(25))
    # Before the kill: slow, so the kill lands mid-stream. After: streamed while the chat
    # may still be reconnecting, so it can join the new run's stream part-way through.
    model_server.push(Reply(text=WORDS, token_delay_s=0.2), Reply(text=after, token_delay_s=0.05))
    first = DaemonProcess(config, port).start()
    try:
        child = chat(first, tmp_path)
        child.sendline("tell me")
        child.expect("w03")
    finally:
        first.kill()
    child.expect("lost mid-answer")
    with DaemonProcess(config, port):
        child.expect(r"\[reconnected\]", timeout=30)
        child.expect("a24", timeout=30)
        screen = screen_until(child, lambda lines: finished(lines, "a24"))
        quit_with_ctrl_d(child)
    text = on_screen(child)
    assert text.count("[reconnecting") == 1, text
    assert text.count("[reconnected]") == 1, text
    shown_after = text.split("lost mid-answer", 1)[1]
    assert " ".join(shown_after.split()).count(after) == 1, screen
