"""A real ngircd (Debian's) for the IRC tests: a child process of the test on a
loopback port, in the foreground (-n), with its config, MOTD and pid file under
the test's tmp_path. Started as root (as in CI containers) it drops to nobody
itself (ServerUID), so the IRC server never runs privileged — and then cannot
write its pid file under root's private tmp_path (it says so in its log and runs
on; the test holds the process anyway)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path

from tests.daemon_process import free_port

NGIRCD = "/usr/sbin/ngircd"
NICK_LENGTH = 20  # ngircd's default is 9; the tests' nicks are longer (wakeful_, stranger)


class Ngircd:
    def __init__(
        self,
        directory: Path,
        port: int | None = None,
        *,
        tls: bool = False,
        password: str | None = None,
    ) -> None:
        self.directory = directory
        self.password = password  # the server password every client must PASS (none: open)
        self.port = port or free_port()
        self.tls_port = free_port() if tls else None
        self.certificate = directory / "cert.pem"  # self-signed, for 127.0.0.1 and localhost
        directory.mkdir(parents=True, exist_ok=True)
        if tls:
            self._make_certificate()
        (directory / "motd").write_text("wakeful test server\n")
        self.config = directory / "ngircd.conf"
        self.config.write_text(self._config())
        self.process: subprocess.Popen[bytes] | None = None
        self.log = directory / "ngircd.log"

    def _config(self) -> str:
        drop = "\tServerUID = 65534\n\tServerGID = 65534\n" if os.geteuid() == 0 else ""
        return (
            "[Global]\n"
            "\tName = irc.wakeful.test\n"
            "\tInfo = wakeful test server\n"
            f"\tListen = 127.0.0.1\n\tPorts = {self.port}\n"
            f"\tMotdFile = {self.directory / 'motd'}\n"
            f"\tPidFile = {self.directory / 'ngircd.pid'}\n"
            + (f"\tPassword = {self.password}\n" if self.password else "")
            + f"{drop}"
            "[Limits]\n"
            "\tMaxConnectionsIP = 0\n"
            f"\tMaxNickLength = {NICK_LENGTH}\n"
            "\tPingTimeout = 120\n\tPongTimeout = 20\n"
            "[Options]\n"
            "\tPAM = no\n\tIdent = no\n\tDNS = no\n"
        ) + (
            f"[SSL]\n\tCertFile = {self.certificate}\n\tKeyFile = {self.directory / 'key.pem'}\n"
            f"\tPorts = {self.tls_port}\n"
            if self.tls_port
            else ""
        )

    def _make_certificate(self) -> None:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
             "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
             "-keyout", str(self.directory / "key.pem"), "-out", str(self.certificate)],
            check=True, capture_output=True,
        )  # fmt: skip

    def start(self, timeout_s: float = 10.0) -> Ngircd:
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [NGIRCD, "--nodaemon", "--config", str(self.config)],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
            )
        deadline = time.monotonic() + timeout_s
        while True:  # no readiness signal in the foreground: its port answering is the signal
            if self.process.poll() is not None:
                raise RuntimeError(f"ngircd exited: {self.log.read_text()[-2000:]}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError as exc:
                if time.monotonic() > deadline:
                    log = self.log.read_text()[-2000:]
                    raise TimeoutError(f"ngircd did not listen: {log}") from exc
                time.sleep(0.05)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)
        self.process = None

    def __enter__(self) -> Ngircd:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
