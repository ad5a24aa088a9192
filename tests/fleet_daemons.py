"""Real `wakeful run` daemons of one fleet (one Redis prefix), each with its own fake model.

A model server per daemon tells which daemon made a model request; every message the
tests send carries its session as ``[sN]`` so a request says which session it was for.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.daemon_harness import ADMIN_TOKEN
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, RecordedRequest
from tests.redis_server import REDIS_URL

SESSION_TAG = re.compile(r"\[(s\d+)\]")


def fleet_config(
    data_dir: Path,
    model_url: str,
    port: int,
    prefix: str,
    *,
    lease_ms: int,
    claim_ms: int,
    redis_url: str = REDIS_URL,
) -> Path:
    path = write_config(data_dir, model_url, port)
    store = [
        "[store]",
        'backend = "redis"',
        f'redis_url = "{redis_url}"',
        f'redis_prefix = "{prefix}"',
        "fleet = true",
        f"session_lease_ms = {lease_ms}",
        f"claim_idle_ms = {claim_ms}",
    ]
    path.write_text(path.read_text() + "\n".join(store) + "\n")
    return path


@dataclass
class Member:
    name: str
    model: FakeModelServer
    config: Path
    port: int
    process: DaemonProcess = field(init=False)

    def __post_init__(self) -> None:
        self.process = DaemonProcess(self.config, self.port)

    @property
    def url(self) -> str:
        return self.process.url

    def alive(self) -> bool:
        proc = self.process.proc
        return proc is not None and proc.poll() is None

    def restart(self) -> None:
        """A new process on the same port, config and data dir (a new fleet member)."""
        self.process = DaemonProcess(self.config, self.port).start(timeout_s=60)


@dataclass
class Fleet:
    members: list[Member]
    paused: Member | None = None  # SIGSTOP'd: not asked anything meanwhile

    def answering(self) -> Member:
        return next(m for m in self.members if m.alive() and m is not self.paused)

    def status(self, member: Member | None = None) -> dict[str, Any]:
        target = member or self.answering()
        with target.process.client() as client:
            response = client.get("/api/status")
        response.raise_for_status()
        status: dict[str, Any] = response.json()
        return status

    def trajectory(self, session: str) -> list[dict[str, Any]]:
        return self.answering().process.trajectory(session)

    def requests(self) -> list[tuple[str, RecordedRequest]]:
        """Every model request so far, with the daemon that made it."""
        return [(m.name, r) for m in self.members for r in list(m.model.requests)]


def send(url: str, session: str, text: str, timeout_s: float = 5.0) -> str:
    """POST one message; its event id (raises on anything but 202). The text is the
    idempotency key: a client retrying on another daemon (the first one was killed
    after storing it, before answering) sends the same event, not a second one."""
    key = hashlib.sha256(text.encode()).hexdigest()[:32]
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Idempotency-Key": key}
    response = httpx.post(
        f"{url}/api/messages",
        json={"session": session, "text": text},
        headers=headers,
        timeout=timeout_s,
    )
    response.raise_for_status()
    event_id: str = response.json()["event_id"]
    return event_id


def session_of(request: RecordedRequest) -> str | None:
    """The session a model request was for: the tag its messages carry."""
    found = SESSION_TAG.search(json.dumps(request.body.get("messages", [])))
    return found.group(1) if found else None


def overlapping_requests(fleet: Fleet, now: float) -> list[str]:
    """Model requests of one session from two daemons open at the same time."""
    spans: dict[str, list[tuple[float, float, str]]] = {}
    for name, request in fleet.requests():
        session = session_of(request)
        if session is not None:
            end = request.ended_at if request.ended_at is not None else now
            spans.setdefault(session, []).append((request.received_at, end, name))
    found = []
    for session, intervals in spans.items():
        intervals.sort()
        for (_start_a, end_a, a), (start_b, _end_b, b) in itertools.pairwise(intervals):
            if a != b and start_b < end_a:
                found.append(f"{session}: {a} until {end_a:.3f}, {b} from {start_b:.3f}")
    return found


def _end(member: Member) -> None:
    member.process.__exit__(None, None, None)  # SIGKILL if still running


@contextmanager
def running_fleet(
    tmp_path: Path,
    prefix: str,
    n: int = 3,
    *,
    lease_ms: int = 1500,
    claim_ms: int = 1500,
    redis_url: str = REDIS_URL,
) -> Iterator[Fleet]:
    with ExitStack() as stack:
        members = []
        for i in range(n):
            model = stack.enter_context(FakeModelServer())
            port = free_port()
            config = fleet_config(
                tmp_path / f"d{i}", model.base_url, port, prefix, lease_ms=lease_ms,
                claim_ms=claim_ms, redis_url=redis_url,
            )  # fmt: skip
            members.append(Member(f"d{i}", model, config, port))
        for member in members:
            member.process.start(timeout_s=60)
            stack.callback(_end, member)
        yield Fleet(members)
