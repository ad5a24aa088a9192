"""A real Prosody (Debian's ``prosody``) on loopback for the XMPP tests.

Its own config, data directory, self-signed certificate and port; accounts made
with ``prosodyctl register``; the default modules plus the archive (mod_mam) and
stream management (mod_smacks), s2s off. Nothing of the machine's
/etc/prosody or /var/lib/prosody is read or written (``--config`` points at the
test's file, whose ``data_path`` is the test's directory).

It runs unprivileged: as the current user, or as the package's ``prosody`` user
when the tests run as root. That user cannot reach pytest's ``tmp_path`` (private
to root, mode 0700), so as root the server's root is a ``mkdtemp`` directory in
the system's temporary directory, removed at the end (as tests/dovecot_server.py
does for Dovecot).
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.daemon_process import free_port
from tests.mail_servers import wait_for_port

DOMAIN = "localhost"  # the certificate's name and every account's domain
MODULES = (
    # Prosody's own default set (its example config's modules_enabled) ...
    "roster", "saslauth", "tls", "dialback", "disco", "carbons", "pep", "private",
    "blocklist", "vcard4", "vcard_legacy", "limits", "version", "uptime", "time", "ping",
    "register",
    # ... plus the archive the channel reads, and stream management (built in since 0.12).
    "mam", "smacks",
)  # fmt: skip


class ProsodyServer:
    def __init__(self, tmp_path: Path, *, tls: bool = True) -> None:
        self.as_root = os.geteuid() == 0
        if self.as_root:
            self.root = Path(tempfile.mkdtemp(prefix="wakeful-prosody-"))
        else:
            self.root = tmp_path / "prosody"
            self.root.mkdir()
        self.port = free_port()
        self.tls = tls  # False: a server that offers no TLS at all (mod_tls not loaded)
        self.cert = self.root / "localhost.crt"
        self.config = self.root / "prosody.cfg.lua"
        self.log = self.root / "prosody.log"
        self._proc: subprocess.Popen[bytes] | None = None
        self._write()

    def _write(self) -> None:
        root = self.root
        (root / "data").mkdir()
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", f"/CN={DOMAIN}", "-addext", f"subjectAltName=DNS:{DOMAIN}",
             "-keyout", str(root / "localhost.key"), "-out", str(self.cert)],
            check=True, capture_output=True,
        )  # fmt: skip
        modules = ", ".join(f'"{m}"' for m in MODULES if self.tls or m != "tls")
        encryption = "true" if self.tls else "false"
        self.config.write_text(
            f"""\
pidfile = "{root}/prosody.pid"
data_path = "{root}/data"
plugin_paths = {{}}
daemonize = false
log = {{ {{ levels = {{ min = "info" }}, to = "file", filename = "{self.log}" }} }}
modules_enabled = {{ {modules} }}
modules_disabled = {{ "s2s" }}
c2s_ports = {{ {self.port} }}
c2s_direct_tls_ports = {{}}
legacy_ssl_ports = {{}}
interfaces = {{ "127.0.0.1" }}
allow_registration = false
c2s_require_encryption = {encryption}
authentication = "internal_hashed"
storage = "internal"
archive_expires_after = "1w"
-- generous: the tests send bursts (mod_limits would slow a real deployment's clients)
limits = {{ c2s = {{ rate = "10mb/s" }} }}
certificates = "{root}"
ssl = {{ certificate = "{self.cert}", key = "{root}/localhost.key" }}
VirtualHost "{DOMAIN}"
"""
        )
        if self.as_root:
            user = pwd.getpwnam("prosody")
            os.chmod(root, 0o755)
            for path in [root, *root.rglob("*")]:
                os.chown(path, user.pw_uid, user.pw_gid)

    def _run_as(self) -> dict[str, object]:
        return {"user": "prosody", "group": "prosody", "extra_groups": []} if self.as_root else {}

    def register(self, user: str, password: str) -> str:
        """A new account; its bare JID."""
        subprocess.run(
            ["prosodyctl", "--config", str(self.config), "register", user, DOMAIN, password],
            check=True,
            capture_output=True,
            **self._run_as(),  # type: ignore[call-overload]
        )
        return f"{user}@{DOMAIN}"

    def start(self) -> ProsodyServer:
        self._proc = subprocess.Popen(
            ["prosody", "--config", str(self.config), "-F"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            **self._run_as(),  # type: ignore[call-overload]
        )
        try:
            wait_for_port(self.port)
        except Exception:
            self.stop()
            raise RuntimeError(f"prosody did not start: {self.log.read_text()[-2000:]}") from None
        return self

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        self._proc = None

    def close(self) -> None:
        self.stop()
        if self.as_root:
            shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def prosody(tmp_path: Path) -> Iterator[ProsodyServer]:
    server = ProsodyServer(tmp_path)
    try:
        yield server.start()
    finally:
        server.close()
