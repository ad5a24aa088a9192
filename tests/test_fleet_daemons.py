"""Three real daemons on one Redis prefix behave as one wakeful.

Each daemon has its own fake model server, so a model request says which daemon
made it; each message carries its session's tag, so it says which session.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.daemon_harness import ADMIN_TOKEN
from tests.fakes.model_replies import Reply
from tests.fleet_daemons import Fleet, Member, overlapping_requests, running_fleet, send


def wait_until(check: object, timeout_s: float, what: str) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not within {timeout_s} s")
        time.sleep(0.05)  # polling another process's state: there is no event to await


def times_in(fleet: Fleet, session: str, text: str) -> int:
    return json.dumps(fleet.trajectory(session)).count(text)


def all_answered(fleet: Fleet, sent: dict[str, str]) -> bool:
    """Every sent text is in its session's trajectory (how often: checked after)."""
    by_session: dict[str, str] = {}
    for text, session in sent.items():
        if session not in by_session:
            by_session[session] = json.dumps(fleet.trajectory(session))
        if text not in by_session[session]:
            return False
    return True


def test_three_daemons_share_the_sessions(tmp_path: Path, redis_prefix: str) -> None:
    with running_fleet(tmp_path, redis_prefix) as fleet:
        sent: dict[str, str] = {}
        for i in range(12):
            session = f"s{i % 6}"
            text = f"[{session}] hello {uuid.uuid4().hex[:8]}"
            send(fleet.members[i % 3].url, session, text)  # any daemon takes any message
            sent[text] = session
        wait_until(lambda: all_answered(fleet, sent), 20, "every message answered")
        for text, session in sent.items():
            assert times_in(fleet, session, text) == 1, text
        status = fleet.status()["fleet"]
        owners = {
            session: name
            for name, row in status["daemons"].items()
            if row["alive"]
            for session in row["sessions"]
        }
        assert sorted(owners) == [f"s{i}" for i in range(6)]  # each session: one owner
        assert len(status["daemons"]) == 3
        assert status["dead"]["count"] == 0
        assert overlapping_requests(fleet, time.monotonic()) == []
        check_status_command(fleet.members[1])
        check_cancel_reaches_the_owner(fleet)
        check_stop_phrase_reaches_the_owner(fleet)


def check_status_command(member: Member) -> None:
    """`wakeful status` lists the fleet's daemons, one line each, and the stream."""
    shown = subprocess.run(
        [sys.executable, "-m", "wakeful", "-c", str(member.config), "status"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert shown.count(": alive, http://127.0.0.1:") == 3, shown
    assert "(this one)" in shown and "delivered and not yet consumed" in shown, shown


def check_cancel_reaches_the_owner(fleet: Fleet) -> None:
    """A "stop" sent to a daemon that does not own the session ends the owner's model
    call: the interrupt goes to the owner's control stream, which its read wakes on."""
    owner = owner_of(fleet, "s0")
    other = next(m for m in fleet.members if m is not owner)
    before = len(owner.model.requests)
    owner.model.push(Reply(text="a long answer", hang=True))
    send(other.url, "s0", "[s0] tell me everything")
    [*_, streaming] = owner.model.wait_for_requests(before + 1, timeout_s=10)
    started = time.monotonic()
    response = httpx.post(
        f"{other.url}/api/messages",
        json={"session": "s0", "text": "[s0] stop", "kind": "user.interrupt"},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
        timeout=5,
    )
    assert response.status_code == 202, response.text
    aborted = owner.model.wait_for_abort(streaming.index, timeout_s=10)
    assert aborted.aborted_at is not None
    print(f"cancel via another daemon: POST to stream closed {aborted.aborted_at - started:.3f} s")


def check_stop_phrase_reaches_the_owner(fleet: Fleet) -> None:
    """A plain "stop" (a ``user.input``, no kind saying it is urgent) sent to a daemon
    that does not own the session: that daemon's router reads the phrase, and the
    interrupt goes to the owner as for ``user.interrupt``; its model call ends."""
    owner = owner_of(fleet, "s1")
    other = next(m for m in fleet.members if m is not owner)
    before = len(owner.model.requests)
    owner.model.push(Reply(text="a long answer", hang=True))
    send(other.url, "s1", "[s1] tell me everything")
    [*_, streaming] = owner.model.wait_for_requests(before + 1, timeout_s=10)
    started = time.monotonic()
    send(other.url, "s1", "[s1] stop")
    aborted = owner.model.wait_for_abort(streaming.index, timeout_s=10)
    assert aborted.aborted_at is not None
    print(
        f"plain stop via another daemon: POST to stream closed {aborted.aborted_at - started:.3f} s"
    )
    # The owner asks the model again with the stop in the batch, from the same daemon.
    wait_until(lambda: "[s1] stop" in json.dumps(fleet.trajectory("s1")), 10, "the stop stored")
    [*_, after] = owner.model.wait_for_requests(streaming.index + 2, timeout_s=10)
    assert "[s1] stop" in json.dumps(after.body["messages"])


def signed_by(name: str) -> Callable[[dict[str, Any]], Reply]:
    """Replies that say which daemon's model wrote them."""
    return lambda _body: Reply(text=f"reply-{name}")


def owner_of(fleet: Fleet, session: str) -> Member:
    daemons = fleet.status()["fleet"]["daemons"]
    for member in fleet.members:
        pid = member.process.proc.pid if member.process.proc else None
        for row in daemons.values():
            if row["info"].get("pid") == pid and session in row["sessions"]:
                return member
    raise AssertionError(f"no daemon owns {session}: {daemons}")


def test_a_paused_daemon_is_fenced_when_it_resumes(tmp_path: Path, redis_prefix: str) -> None:
    with running_fleet(tmp_path, redis_prefix) as fleet:
        for member in fleet.members:
            member.model.responder = signed_by(member.name)
        send(fleet.members[0].url, "s1", "[s1] first")
        wait_until(lambda: times_in(fleet, "s1", "reply-") == 1, 15, "the first reply")
        paused = owner_of(fleet, "s1")
        others = [m for m in fleet.members if m is not paused]
        # The owner's next model call hangs past its lease; it is paused mid-call.
        paused.model.push(Reply(text="late-reply-of-the-paused-daemon", first_token_delay_s=4))
        send(others[0].url, "s1", "[s1] second")
        paused.model.wait_for_requests(2, timeout_s=10)
        assert paused.process.proc is not None
        os.kill(paused.process.proc.pid, signal.SIGSTOP)
        fleet.paused = paused
        try:
            send(others[1].url, "s1", "[s1] third")  # taken over once the lease lapsed
            wait_until(
                lambda: (
                    "third" in json.dumps(fleet.trajectory("s1"))
                    and times_in(fleet, "s1", "reply-d") >= 2
                ),
                20,
                "another daemon answering s1",
            )
        finally:
            os.kill(paused.process.proc.pid, signal.SIGCONT)
            fleet.paused = None
        # It notices, whichever comes first after SIGCONT: its heartbeat finds the lease
        # gone, or its write is refused by the fencing check (tests/test_fleet_store.py
        # shows the refusal itself).
        paused.process.wait_for_log("letting it go", timeout_s=15)
        trajectory = json.dumps(fleet.trajectory("s1"))
        assert "late-reply-of-the-paused-daemon" not in trajectory  # its write was refused
        for text in ("[s1] first", "[s1] second", "[s1] third"):
            assert trajectory.count(text) == 1, text
        assert owner_of(fleet, "s1") is not paused


class Load:
    """Messages to random live daemons, each retried on another until one takes it."""

    def __init__(self, fleet: Fleet, sessions: int) -> None:
        self.fleet = fleet
        self.sessions = sessions
        self.accepted: dict[str, str] = {}  # text -> session, for every 2xx
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self.stop.is_set():
            session = f"s{n % self.sessions}"
            text = f"[{session}] load {n} {uuid.uuid4().hex[:6]}"
            n += 1
            for _ in range(50):
                member = random.choice(self.fleet.members)
                try:
                    send(member.url, session, text, timeout_s=3)
                except httpx.HTTPError:
                    continue  # killed, restarting, 503: the client retries elsewhere
                self.accepted[text] = session
                break
            time.sleep(0.02)  # a steady trickle, not a flood: the machine is shared

    def __enter__(self) -> Load:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=30)


def kill_and_restart(fleet: Fleet, kills: int, every_s: float) -> None:
    for _ in range(kills):
        time.sleep(every_s)
        victim = random.choice(fleet.members)
        victim.process.kill()
        victim.restart()


def check_exactly_once(fleet: Fleet, accepted: dict[str, str], timeout_s: float) -> None:
    """Every accepted (2xx) text, mapped to its session, is in its trajectory once."""
    wait_until(lambda: all_answered(fleet, accepted), timeout_s, "every 2xx event handled")
    trajectories = {
        session: json.dumps(fleet.trajectory(session)) for session in set(accepted.values())
    }
    doubled = [t for t, s in accepted.items() if trajectories[s].count(t) != 1]
    assert doubled == []
    print(f"{len(accepted)} events accepted (2xx), each in its trajectory once")
    assert overlapping_requests(fleet, time.monotonic()) == []
    assert fleet.status()["fleet"]["dead"]["count"] == 0


def test_sigkill_under_load_loses_and_doubles_nothing(tmp_path: Path, redis_prefix: str) -> None:
    with running_fleet(tmp_path, redis_prefix) as fleet:
        for member in fleet.members:
            member.model.responder = lambda _body: Reply(text="ok", token_delay_s=0.02)
        with Load(fleet, sessions=6) as load:
            kill_and_restart(fleet, kills=2, every_s=3)
            time.sleep(1)
        assert len(load.accepted) > 20
        check_exactly_once(fleet, load.accepted, timeout_s=30)


def test_rolling_restart_hands_sessions_over(tmp_path: Path, redis_prefix: str) -> None:
    """SIGTERM one daemon at a time under load (as `systemctl restart` would): each
    hands its sessions over at a safe point; a client retrying elsewhere loses nothing."""
    with running_fleet(tmp_path, redis_prefix, lease_ms=30_000, claim_ms=30_000) as fleet:
        for member in fleet.members:
            member.model.responder = lambda _body: Reply(text="ok", token_delay_s=0.02)
        with Load(fleet, sessions=6) as load:
            for member in fleet.members:
                time.sleep(1.5)
                assert member.process.stop(timeout_s=30) == 0
                member.process.wait_for_log("handed the sessions over", timeout_s=5)
                member.restart()
            time.sleep(1)
        after_restart = owners_by_daemon(fleet)
        # The leases are 30 s: what was answered within less came by the hand-over.
        check_exactly_once(fleet, load.accepted, timeout_s=20)
        check_sessions_even_out(fleet, after_restart, sessions=6)


def owners_by_daemon(fleet: Fleet) -> dict[str, frozenset[str]]:
    daemons = fleet.status()["fleet"]["daemons"]
    return {name: frozenset(row["sessions"]) for name, row in daemons.items() if row["alive"]}


def check_sessions_even_out(
    fleet: Fleet, after_restart: dict[str, frozenset[str]], sessions: int
) -> None:
    """The daemon restarted first took most sessions (the others were stopping in turn);
    the owners above their share give resting ones up, one per heartbeat, and then the
    sessions stay where they are."""
    share = sessions // len(fleet.members)
    started = time.monotonic()

    def even() -> bool:
        owned = owners_by_daemon(fleet)
        return len(owned) == len(fleet.members) and {len(s) for s in owned.values()} == {share}

    wait_until(even, 20, f"{share} sessions on each daemon")
    spread = sorted(len(s) for s in after_restart.values())
    waited = time.monotonic() - started
    print(f"sessions per daemon after the restart {spread}; {share} each {waited:.1f} s later")
    settled = owners_by_daemon(fleet)
    time.sleep(3)  # three heartbeats: a session that bounced would show here
    assert owners_by_daemon(fleet) == settled
    assert overlapping_requests(fleet, time.monotonic()) == []


@pytest.mark.slow
def test_fifty_kills_lose_and_double_nothing(tmp_path: Path, redis_prefix: str) -> None:
    with running_fleet(tmp_path, redis_prefix) as fleet:
        for member in fleet.members:
            member.model.responder = lambda _body: Reply(text="ok", token_delay_s=0.02)
        with Load(fleet, sessions=9) as load:
            kill_and_restart(fleet, kills=50, every_s=2)
        check_exactly_once(fleet, load.accepted, timeout_s=90)
