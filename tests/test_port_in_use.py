"""A port in use fails the start at once, in one line, before any data is written.

The composition root reserves the HTTP socket first (bound, not yet listening): the
daemon learns its own address for the fleet's registry, and an occupied port costs
no store, no model client and no component start.
"""

from __future__ import annotations

import socket
from pathlib import Path

from tests.daemon_process import run_to_exit, write_config
from wakeful.app.http.serve import reserve_port


def test_a_port_in_use_is_one_line_and_nothing_is_opened(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        data_dir = tmp_path / "data"
        result = run_to_exit(write_config(data_dir, None, port))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith(f"wakeful: cannot start: cannot listen on 127.0.0.1:{port}")
    assert "Change [server] bind" in lines[-1]
    assert "Traceback" not in result.stderr
    assert not (data_dir / "wakeful.db").exists()  # the store was never opened


def test_a_client_before_serving_is_refused_not_left_waiting() -> None:
    """What reserving the port early must not change: until the server serves, a client
    is refused at once (no listen backlog holds its connection)."""
    sock = reserve_port("127.0.0.1", 0)
    try:
        port = sock.getsockname()[1]
        with socket.socket() as client:
            client.settimeout(5)
            assert client.connect_ex(("127.0.0.1", port)) != 0
    finally:
        sock.close()
