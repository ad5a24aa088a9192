"""A real Matrix homeserver (Synapse, SQLite) on loopback for the Matrix tests.

Synapse lives in its own venv, ``.venv-synapse`` (scripts/install_synapse.sh), so its
pins never meet the project's. One server is started per test session (start-up takes
seconds, see ``SynapseServer.started_in_s``); each test registers its own users and
rooms, so tests never see each other's messages.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import secrets
import subprocess
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.daemon_process import free_port

REPO = Path(__file__).resolve().parent.parent
SYNAPSE_PYTHON = REPO / ".venv-synapse" / "bin" / "python"
SERVER_NAME = "wakeful.test"
# Generous limits: the tests send bursts a real deployment's limits would slow down.
_HIGH = {"per_second": 10000, "burst_count": 10000}


def _signing_key() -> str:
    """A Synapse signing key file's line: algorithm, key version, unpadded base64 seed."""
    seed = base64.b64encode(os.urandom(32)).decode().rstrip("=")
    return f"ed25519 a_test {seed}\n"


def _config(root: Path, port: int, shared_secret: str) -> str:
    # JSON is YAML: no YAML writer needed on our side.
    log_config = root / "log.yaml"
    log_config.write_text(
        json.dumps(
            {
                "version": 1,
                "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(message)s"}},
                "handlers": {
                    "file": {
                        "class": "logging.FileHandler",
                        "formatter": "plain",
                        "filename": str(root / "homeserver.log"),
                    }
                },
                "root": {"level": "WARNING", "handlers": ["file"]},
                "disable_existing_loggers": False,
            }
        )
    )
    (root / "signing.key").write_text(_signing_key())
    config: dict[str, Any] = {
        "server_name": SERVER_NAME,
        "pid_file": str(root / "homeserver.pid"),
        "listeners": [
            {
                "port": port,
                "bind_addresses": ["127.0.0.1"],
                "type": "http",
                "tls": False,
                "x_forwarded": False,
                "resources": [{"names": ["client"], "compress": False}],
            }
        ],
        "database": {"name": "sqlite3", "args": {"database": str(root / "homeserver.db")}},
        "log_config": str(log_config),
        "media_store_path": str(root / "media"),
        "signing_key_path": str(root / "signing.key"),
        "registration_shared_secret": shared_secret,
        "enable_registration": False,
        "report_stats": False,
        "macaroon_secret_key": secrets.token_hex(16),
        "form_secret": secrets.token_hex(16),
        "trusted_key_servers": [],
        "suppress_key_server_warning": True,
        "federation_domain_whitelist": [],
        "enable_metrics": False,
        "presence": {"enabled": False},
        "url_preview_enabled": False,
        "rc_message": _HIGH,
        "rc_registration": _HIGH,
        "rc_login": {"address": _HIGH, "account": _HIGH, "failed_attempts": _HIGH},
        "rc_joins": {"local": _HIGH, "remote": _HIGH},
        "rc_invites": {"per_room": _HIGH, "per_user": _HIGH, "per_issuer": _HIGH},
        "rc_admin_redaction": _HIGH,
    }
    return json.dumps(config, indent=1)


@dataclass(frozen=True)
class MatrixUser:
    user_id: str  # "@alice-1a2b:wakeful.test"
    password: str
    access_token: str


class SynapseServer:
    """Synapse as a child process, with a fresh SQLite database in ``root``."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()  # Synapse runs with it as its working directory
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.shared_secret = secrets.token_hex(16)
        self.proc: subprocess.Popen[bytes] | None = None
        self.started_in_s = 0.0

    def start(self, timeout_s: float = 90.0) -> SynapseServer:
        if not SYNAPSE_PYTHON.exists():
            raise RuntimeError(f"{SYNAPSE_PYTHON} is missing: run scripts/install_synapse.sh")
        self.root.mkdir(parents=True, exist_ok=True)
        config = self.root / "homeserver.yaml"
        config.write_text(_config(self.root, self.port, self.shared_secret))
        began = time.monotonic()
        with (self.root / "stdout.log").open("wb") as out:
            self.proc = subprocess.Popen(
                [str(SYNAPSE_PYTHON), "-m", "synapse.app.homeserver", "-c", str(config)],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=self.root,
            )
        self._wait_ready(began + timeout_s)
        self.started_in_s = time.monotonic() - began
        return self

    def _wait_ready(self, deadline: float) -> None:
        assert self.proc is not None
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"Synapse exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                if httpx.get(f"{self.url}/_matrix/client/versions", timeout=2).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"Synapse did not answer on {self.url}: {self.log_tail()}")
            time.sleep(0.1)  # nothing to wait on: the child says nothing when it is listening

    def log_tail(self) -> str:
        text = ""
        for name in ("stdout.log", "homeserver.log"):
            path = self.root / name
            if path.exists():
                text += path.read_text(errors="replace")[-3000:]
        return text

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)

    def register(self, localpart: str | None = None, *, admin: bool = False) -> MatrixUser:
        """A new user through the shared-secret admin registration API."""
        localpart = localpart or f"user-{uuid.uuid4().hex[:8]}"
        password = secrets.token_hex(12)
        endpoint = f"{self.url}/_synapse/admin/v1/register"
        nonce = httpx.get(endpoint, timeout=10).json()["nonce"]
        signed = (nonce, localpart, password, "admin" if admin else "notadmin")
        message = b"\x00".join(part.encode() for part in signed)
        digest = hmac.new(self.shared_secret.encode(), message, hashlib.sha1).hexdigest()
        body = {
            "nonce": nonce,
            "username": localpart,
            "password": password,
            "admin": admin,
            "mac": digest,
        }
        response = httpx.post(endpoint, json=body, timeout=30)
        assert response.status_code == 200, response.text
        data = response.json()
        return MatrixUser(data["user_id"], password, data["access_token"])

    def client(self, user: MatrixUser) -> MatrixTestClient:
        return MatrixTestClient(self.url, user)


class MatrixTestClient:
    """A person on the homeserver, as the tests drive them: plain client-server calls."""

    def __init__(self, url: str, user: MatrixUser) -> None:
        self.user = user
        self.http = httpx.Client(
            base_url=f"{url}/_matrix/client/v3",
            headers={"Authorization": f"Bearer {user.access_token}"},
            timeout=30,
        )

    def close(self) -> None:
        self.http.close()

    def __enter__(self) -> MatrixTestClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ok(self, response: httpx.Response) -> dict[str, Any]:
        assert response.status_code == 200, f"{response.request.url}: {response.text}"
        data: dict[str, Any] = response.json()
        return data

    def create_room(
        self, invite: list[str] | None = None, *, direct: bool = True, public: bool = False
    ) -> str:
        preset = "public_chat" if public else "private_chat"
        body: dict[str, Any] = {"preset": preset, "is_direct": direct}
        if invite:
            body["invite"] = invite
        room_id: str = self._ok(self.http.post("/createRoom", json=body))["room_id"]
        return room_id

    def join(self, room_id: str) -> None:
        self._ok(self.http.post(f"/join/{quote(room_id)}", json={}))

    def send_text(
        self, room_id: str, text: str, *, thread: str | None = None, msgtype: str = "m.text"
    ) -> str:
        """Post a message; ``thread``: in the thread rooted at that event, as Element does
        (m.thread with the reply fallback to the thread's root)."""
        content: dict[str, Any] = {"msgtype": msgtype, "body": text}
        if thread is not None:
            content["m.relates_to"] = {
                "rel_type": "m.thread",
                "event_id": thread,
                "is_falling_back": True,
                "m.in_reply_to": {"event_id": thread},
            }
        txn = uuid.uuid4().hex
        path = f"/rooms/{quote(room_id)}/send/m.room.message/{txn}"
        event_id: str = self._ok(self.http.put(path, json=content))["event_id"]
        return event_id

    def members(self, room_id: str) -> dict[str, str]:
        """user id → membership ("join", "invite", "leave", …)."""
        data = self._ok(self.http.get(f"/rooms/{quote(room_id)}/members"))
        return {e["state_key"]: e["content"]["membership"] for e in data["chunk"]}

    def messages(self, room_id: str) -> list[dict[str, Any]]:
        """Every m.room.message in the room, oldest first."""
        return [e for e in self.timeline(room_id) if e["type"] == "m.room.message"]

    def timeline(self, room_id: str) -> list[dict[str, Any]]:
        """Every event in the room as the homeserver holds it, oldest first."""
        events: list[dict[str, Any]] = []
        params: dict[str, Any] = {"dir": "f", "limit": 1000}
        while True:
            data = self._ok(self.http.get(f"/rooms/{quote(room_id)}/messages", params=params))
            events += data["chunk"]
            if not data.get("end") or not data["chunk"]:
                return events
            params["from"] = data["end"]

    def sync_token(self) -> str:
        token: str = self._ok(self.http.get("/sync", params={"timeout": "0"}))["next_batch"]
        return token

    def wait_typing(self, room_id: str, user_id: str, since: str, timeout_s: float = 15) -> bool:
        """Long-poll /sync until ``user_id`` shows as typing in the room (or time runs out)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            params = {"since": since, "timeout": "1000"}
            data = self._ok(self.http.get("/sync", params=params))
            since = data["next_batch"]
            room = data.get("rooms", {}).get("join", {}).get(room_id, {})
            for event in room.get("ephemeral", {}).get("events", []):
                if event["type"] == "m.typing" and user_id in event["content"]["user_ids"]:
                    return True
        return False

    def replies_from(self, room_id: str, sender: str) -> list[dict[str, Any]]:
        return [e for e in self.messages(room_id) if e["sender"] == sender]


@pytest.fixture(scope="session")
def synapse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SynapseServer]:
    """One homeserver for the whole test session; tests register their own users."""
    server = SynapseServer(tmp_path_factory.mktemp("synapse")).start()
    try:
        yield server
    finally:
        server.stop()
