"""Crash soak: SIGKILL `wakeful run` at random moments while events keep arriving.

    .venv/bin/python -m tests.soak --kills 100          # or --seconds 600

Chat messages and webhooks are posted from threads the whole time, a timer
from the config fires every second, and the fake model answers (sometimes by
running a short shell command, so kills land mid-stream and mid-tool). After
the last kill the daemon is started once more, allowed to drain, and stopped
with SIGTERM. Then: every event that got a 2xx is in a trajectory exactly
once, no event id is in a trajectory twice, and every trajectory passes the
strict validator. Exit status 0 when all hold.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import signal
import sqlite3
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from tests.daemon_harness import ADMIN_TOKEN
from tests.daemon_process import DaemonProcess, free_port, write_config
from tests.fakes.model_server import FakeModelServer, Reply, ToolCallSpec
from tests.trajectory_validator import TrajectoryError, validate_both

HOOK_TOKEN = "soak-hook-token-123456"


class Senders:
    """Threads posting chat messages and webhooks; they record what got a 2xx."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.accepted: set[str] = set()
        self.attempts = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._run, args=(kind,), daemon=True)
            for kind in ("chat", "chat", "hook")
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=15)

    def _run(self, kind: str) -> None:
        rng = random.Random()
        with httpx.Client(base_url=self.url, timeout=5) as client:
            while not self._stop.is_set():
                event_id = self._post(client, kind, f"{kind}-{rng.getrandbits(64):016x}")
                if event_id is not None:
                    with self._lock:
                        self.accepted.add(event_id)
                self._stop.wait(rng.uniform(0.02, 0.15))

    def _post(self, client: httpx.Client, kind: str, key: str) -> str | None:
        with self._lock:
            self.attempts += 1
        try:
            if kind == "hook":
                response = client.post(
                    "/hooks/soak",
                    json={"n": key},
                    headers={"Authorization": f"Bearer {HOOK_TOKEN}", "webhook-id": key},
                )
            else:
                response = client.post(
                    "/api/messages",
                    json={"text": f"note {key}", "session": "main", "id": key},
                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                )
        except httpx.HTTPError:
            return None  # the daemon is down (killed): a client would retry later
        if 200 <= response.status_code < 300:
            event_id: str = response.json()["event_id"]
            return event_id
        return None


def respond(body: dict[str, Any]) -> Reply:
    """Mostly short replies, sometimes a short shell command, always slow enough to hit."""
    messages = body.get("messages") or [{}, {}]
    if random.random() < 0.3 and messages[-2].get("role") != "tool":
        return Reply(tool_calls=[ToolCallSpec("shell_exec", {"command": "sleep 0.3; echo ok"})])
    return Reply(text="noted " * 8, token_delay_s=0.02)


def write_soak_config(data_dir: Path, model_url: str, port: int) -> Path:
    path = write_config(data_dir, model_url, port)
    extra = (
        f'[[hooks]]\nname = "soak"\nauth = "bearer"\nsecret = "{HOOK_TOKEN}"\nsession = "hooks"\n'
        '[[timers]]\nname = "tick"\ninterval = "1s"\nmessage = "tick"\nsession = "timers"\n'
    )
    path.write_text(path.read_text() + extra)
    return path


KEY = re.compile(r"(?:chat|hook)-[0-9a-f]{16}")


def check(data_dir: Path, accepted: set[str]) -> list[str]:
    """What is wrong with the store after the soak (empty: all good).

    Each posted event carries a unique key (its idempotency key) that its
    rendering in the trajectory shows once, so counting keys in the user
    messages counts how often each event reached a trajectory.
    """
    problems: list[str] = []
    in_trajectory: Counter[str] = Counter()
    with sqlite3.connect(data_dir / "wakeful.db") as conn:
        sessions = [s for (s,) in conn.execute("SELECT DISTINCT session FROM messages")]
        for session in sessions:
            rows = conn.execute(
                "SELECT body FROM messages WHERE session = ? ORDER BY seq", (session,)
            ).fetchall()
            messages = [json.loads(body) for (body,) in rows]
            try:
                validate_both(messages)
            except TrajectoryError as exc:
                problems.append(f"session {session}: invalid trajectory: {exc}")
            for message in messages:
                if message["role"] == "user":
                    in_trajectory.update(KEY.findall(str(message.get("content"))))
    keys = {KEY.search(event_id).group(0) for event_id in accepted}  # type: ignore[union-attr]
    twice = [key for key, n in in_trajectory.items() if n > 1]
    missing = sorted(keys - in_trajectory.keys())
    if twice:
        problems.append(f"{len(twice)} events are in a trajectory more than once: {twice[:5]}")
    if missing:
        problems.append(f"{len(missing)} accepted events are in no trajectory: {missing[:5]}")
    return problems


def soak(kills: int, seconds: float, data_dir: Path) -> int:
    port = free_port()
    deadline = time.monotonic() + seconds
    with FakeModelServer() as server:
        server.responder = respond
        config = write_soak_config(data_dir, server.base_url, port)
        senders = Senders(f"http://127.0.0.1:{port}")
        senders.start()
        done = 0
        while done < kills and time.monotonic() < deadline:
            with DaemonProcess(config, port) as daemon:
                time.sleep(random.uniform(0.05, 1.5))  # the random moment of the kill
                daemon.kill()
            done += 1
            if done % 10 == 0:
                print(f"{done} kills, {len(senders.accepted)} events accepted", flush=True)
        senders.stop()
        final_drain(config, port)
        # A request cut off mid-upload by the SIGKILL reaches the server truncated.
        truncated = {f"request {r.index}:" for r in server.requests if "unparsable" in r.body}
        violations = [v for v in server.violations if not v.startswith(tuple(truncated))]
    problems = check(data_dir, senders.accepted)
    problems += [f"the model was sent an invalid request: {v}" for v in violations[:5]]
    print(f"kills: {done}; posts: {senders.attempts}; accepted (2xx): {len(senders.accepted)}")
    print(f"model requests cut off mid-upload by a kill (not checked): {len(truncated)}")
    for problem in problems:
        print("PROBLEM:", problem)
    print("result:", "OK" if not problems else "FAILED")
    return 0 if not problems else 1


def final_drain(config: Path, port: int, timeout_s: float = 120.0) -> None:
    """Start once more and wait until no session has anything pending or running."""
    with DaemonProcess(config, port) as daemon, daemon.client() as client:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            sessions = client.get("/api/status").json()["sessions"].values()
            if all(s["pending"] == 0 and not s["busy"] for s in sessions):
                break
            time.sleep(0.2)  # polling status: the drain has no single event to await
        assert daemon.proc is not None
        daemon.proc.send_signal(signal.SIGTERM)
        if daemon.proc.wait(timeout=30) != 0:
            raise SystemExit("the final graceful stop did not exit 0")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=100, help="stop after this many kills")
    parser.add_argument("--seconds", type=float, default=3600, help="or after this long")
    parser.add_argument("--data-dir", type=Path, help="default: a fresh temporary directory")
    args = parser.parse_args()
    data_dir = args.data_dir or Path(tempfile.mkdtemp(prefix="wakeful-soak-"))
    print(f"soak in {data_dir}: up to {args.kills} kills or {args.seconds:.0f} s", flush=True)
    sys.exit(soak(args.kills, args.seconds, data_dir))


if __name__ == "__main__":
    main()
