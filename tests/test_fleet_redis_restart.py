"""Redis itself restarted under load (``appendonly yes``): the fleet's daemons ride it out.

The test runs its own redis-server (tests/redis_server.py OwnRedisServer), never the
machine's shared one: it is stopped with SIGTERM and started again on the same port and
directory, twice, while two daemons take messages. A client that gets a 503 (or no
answer) retries the same message, with the same idempotency key, on either daemon.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from pathlib import Path

import httpx

from tests.fakes.model_replies import Reply
from tests.fleet_daemons import Fleet, running_fleet, send
from tests.redis_server import OwnRedisServer
from tests.test_fleet_daemons import check_exactly_once, wait_until


class RetryingLoad:
    """Messages to either daemon; each one retried until a daemon answers 2xx, however
    long Redis is away: what a client that honours 503 does."""

    def __init__(self, fleet: Fleet, sessions: int) -> None:
        self.fleet = fleet
        self.sessions = sessions
        self.accepted: dict[str, str] = {}  # text -> session, for every 2xx
        self.refused = 0  # 503s and errors seen (then retried)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self.stop.is_set():
            session = f"s{n % self.sessions}"
            text = f"[{session}] load {n} {uuid.uuid4().hex[:6]}"
            n += 1
            while True:  # until taken; the outer loop stops only between messages
                member = random.choice(self.fleet.members)
                try:
                    send(member.url, session, text, timeout_s=3)
                except httpx.HTTPError:
                    self.refused += 1
                    time.sleep(0.1)  # back off a little, as a client would
                    continue
                self.accepted[text] = session
                break
            time.sleep(0.03)  # a steady trickle: the machine is shared

    def __enter__(self) -> RetryingLoad:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=60)


def ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_redis_restarted_under_load_loses_and_doubles_nothing(tmp_path: Path) -> None:
    with (
        OwnRedisServer(tmp_path / "redis") as server,
        running_fleet(tmp_path, "wakeful-restart:", n=2, redis_url=server.url) as fleet,
    ):
        for member in fleet.members:
            member.model.responder = lambda _body: Reply(text="ok", token_delay_s=0.02)
        with RetryingLoad(fleet, sessions=4) as load:
            for _ in range(2):
                time.sleep(2)
                server.stop()
                time.sleep(1)  # Redis away for a while: the daemons must notice
                server.start()
                for member in fleet.members:
                    wait_until(lambda m=member: ready(m.url), 30, f"{member.name} ready again")
            time.sleep(2)
        assert all(m.alive() for m in fleet.members)
        assert len(load.accepted) > 20
        assert load.refused > 0  # the outages were seen by the clients
        print(f"{load.refused} refused sends retried")
        check_exactly_once(fleet, load.accepted, timeout_s=45)
