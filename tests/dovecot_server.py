"""A real Dovecot (Debian's dovecot-imapd) on loopback for one test.

Everything lives under the server's own temporary root: the config, the run and
state directories, the passwd-file and the maildir. Dovecot runs in the
foreground (``dovecot -F -c conf``) as the current user. Run as root, Dovecot
refuses root for its login process and for mail users, so those run as the
package's unprivileged ``dovenull`` user. The root is made with ``mkdtemp`` in
the system temp directory rather than pytest's ``tmp_path`` because that one is
private to root (mode 0700) and Dovecot's unix sockets need a short path.
"""

from __future__ import annotations

import grp
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from imapclient import IMAPClient

from tests.mail_servers import free_port, imap_account, wait_for_port

USER = "alice@example.test"
PASSWORD = "dovecot-secret-42"


class DovecotServer:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="wakeful-dovecot-"))
        self.port = free_port()
        self._proc: subprocess.Popen[bytes] | None = None

    def _config(self) -> Path:
        root = self.root
        me = pwd.getpwuid(os.geteuid())
        unprivileged = pwd.getpwnam("dovenull") if os.geteuid() == 0 else me
        os.chmod(root, 0o755)  # the unprivileged mail user reaches its maildir
        (root / "mail").mkdir()
        os.chown(root / "mail", unprivileged.pw_uid, unprivileged.pw_gid)
        (root / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}::::::\n")
        conf = root / "dovecot.conf"
        conf.write_text(
            f"""\
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
instance_name = wakeful-test-{self.port}
protocols = imap
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
default_internal_user = {me.pw_name}
default_internal_group = {grp.getgrgid(os.getegid()).gr_name}
default_login_user = {unprivileged.pw_name}
mail_location = maildir:{root}/mail/%n
first_valid_uid = {unprivileged.pw_uid}
first_valid_gid = {unprivileged.pw_gid}
passdb {{
  driver = passwd-file
  args = scheme=PLAIN {root}/passwd
}}
userdb {{
  driver = passwd-file
  args = {root}/passwd
  default_fields = uid={unprivileged.pw_uid} gid={unprivileged.pw_gid}
}}
service imap-login {{
  chroot =
  inet_listener imap {{
    address = 127.0.0.1
    port = {self.port}
  }}
  inet_listener imaps {{
    port = 0
  }}
}}
service anvil {{
  chroot =
}}
service pop3-login {{
  chroot =
}}
"""
        )
        return conf

    def start(self) -> DovecotServer:
        conf = self._config()
        self._proc = subprocess.Popen(
            ["dovecot", "-F", "-c", str(conf)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port)
        return self

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()  # Dovecot's master stops its children on SIGTERM
            self._proc.wait(timeout=15)
            self._proc = None
        shutil.rmtree(self.root, ignore_errors=True)

    def client(self) -> IMAPClient:
        client = IMAPClient("127.0.0.1", self.port, ssl=False, timeout=30)
        client.login(USER, PASSWORD)
        return client

    def account(self, name: str = "work", **extra: Any) -> dict[str, Any]:
        return imap_account(self.port, USER, name, **extra)


@pytest.fixture
def dovecot() -> Iterator[DovecotServer]:
    server = DovecotServer().start()
    try:
        yield server
    finally:
        server.stop()
