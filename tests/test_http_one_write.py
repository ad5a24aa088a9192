"""A response's head leaves with its body in one write; alone, at the end of the turn."""

from __future__ import annotations

import asyncio

import pytest

from wakeful.app.http.one_write import HeadWithBody


class Recording(asyncio.Transport):
    """What reached the connection, write by write."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def close(self) -> None:
        self.closed = True

    def is_closing(self) -> bool:
        return self.closed


@pytest.mark.anyio
async def test_head_and_body_go_out_in_one_write() -> None:
    real = Recording()
    view = HeadWithBody(real, asyncio.get_running_loop())
    view.write(b"HTTP/1.1 202 Accepted\r\n\r\n")
    assert real.writes == []
    view.write(b'{"ok":true}')
    view.write(b"more")  # after the head, writes go straight through
    assert real.writes == [b'HTTP/1.1 202 Accepted\r\n\r\n{"ok":true}', b"more"]
    await asyncio.sleep(0)
    assert len(real.writes) == 2  # nothing held is sent twice


@pytest.mark.anyio
async def test_a_head_alone_leaves_at_the_end_of_the_turn() -> None:
    """A stream whose app awaits after its head: the head does not wait for the body."""
    real = Recording()
    view = HeadWithBody(real, asyncio.get_running_loop())
    view.write(b"HTTP/1.1 200 OK\r\n\r\n")
    await asyncio.sleep(0)
    assert real.writes == [b"HTTP/1.1 200 OK\r\n\r\n"]
    view.write(b"chunk")
    assert real.writes[-1] == b"chunk"


@pytest.mark.anyio
async def test_close_sends_the_held_head_first_and_a_closed_connection_gets_nothing() -> None:
    real = Recording()
    view = HeadWithBody(real, asyncio.get_running_loop())
    view.write(b"HTTP/1.1 204 No Content\r\n\r\n")
    view.close()
    assert real.writes == [b"HTTP/1.1 204 No Content\r\n\r\n"] and real.closed
    gone = Recording()
    view = HeadWithBody(gone, asyncio.get_running_loop())
    view.write(b"HTTP/1.1 200 OK\r\n\r\n")
    gone.closed = True  # the client went away before the turn ended
    await asyncio.sleep(0)
    assert gone.writes == []
