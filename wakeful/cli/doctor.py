"""`wakeful doctor [--fix]`: each part of a set-up checked the way the daemon would use
it, one line per finding with its fix; ``--fix`` applies the safe ones (permissions).

The checks: the config loads; the data directory exists, is writable and private; a
daemon holds it (and says it is ready) or none does; the store's databases pass
SQLite's quick check; the model endpoint answers, with the key (one GET of its model
list: no tokens spent); the shell sandbox works here; the clock agrees with the model
server's; each configured chat account's credential is accepted (the calls of
wakeful/cli/chat_checks.py: Telegram getMe, Slack auth.test, Matrix whoami, Discord
/users/@me, WhatsApp's phone number, signal-cli's version, an XMPP log-in, an IRC
registration). Exit 0 when nothing failed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wakeful.cli.endpoint import base_url
from wakeful.kernel.config_files import split_bind
from wakeful.kernel.data_dir_lock import DataDirLocked, hold_data_dir_lock

# httpx, sqlite3 and the data_dir check (it logs: structlog) are imported by the checks
# that use them: every client command (`wakeful status`) imports this module for its
# argparse lines, and those imports alone took longer than a status request.
if TYPE_CHECKING:
    from wakeful.app.config import Settings

CLOCK_SKEW_S = 60.0
TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Finding:
    ok: bool
    part: str
    text: str
    fix: str = ""
    repair: Callable[[], None] | None = None  # a safe fix --fix may apply

    def line(self) -> str:
        fix = f"; fix: {self.fix}" if self.fix and not self.ok else ""
        return f"{'ok  ' if self.ok else 'FAIL'} {self.part}: {self.text}{fix}"


def add_arguments(sub: Any, add: Any) -> None:
    doctor = add(
        sub,
        "doctor",
        "check the config, data_dir, store, model, sandbox, clock and chat credentials",
    )
    doctor.add_argument("--fix", action="store_true", help="apply the safe fixes (permissions)")


def run(args: argparse.Namespace, config_path: Path | None) -> int:
    from wakeful.app.config import load_settings
    from wakeful.kernel.config_files import ConfigError

    try:
        settings = load_settings(config_path)
    except ConfigError as exc:
        print(Finding(False, "config", str(exc), "edit the file as the message says").line())
        return 1
    findings = [Finding(True, "config", str(config_path or "the embedded defaults"))]
    findings += check_setup(settings)
    failed = 0
    for finding in findings:
        if not finding.ok and args.fix and finding.repair is not None:
            finding.repair()
            print(f"fixed {finding.part}: {finding.text} ({finding.fix})")
            continue
        print(finding.line())
        failed += not finding.ok
    return 1 if failed else 0


def check_setup(settings: Settings) -> list[Finding]:
    data_dir = settings.daemon.data_dir_path()
    findings = list(data_dir_findings(data_dir))
    if not data_dir.is_dir():
        return [*findings, model_finding(settings)[0]]
    findings.append(_daemon(settings, data_dir))
    findings += _store(settings, data_dir)
    model, skew = model_finding(settings)
    findings.append(model)
    findings.append(_sandbox(settings, data_dir))
    if skew is not None:
        findings.append(_clock(skew))
    findings += chat_findings(settings)
    return findings


def data_dir_findings(data_dir: Path) -> Iterator[Finding]:
    if not data_dir.exists():
        yield Finding(
            False,
            "data_dir",
            f"{data_dir} does not exist",
            "`wakeful run` creates it; or set [daemon] data_dir",
        )
        return
    if not os.access(data_dir, os.W_OK | os.X_OK):
        yield Finding(
            False,
            "data_dir",
            f"{data_dir} is not writable by this user",
            "chown it to the daemon's user, or set [daemon] data_dir to a writable one",
        )
        return
    from wakeful.kernel.data_dir_perms import exposed_paths  # it logs: structlog

    # What the daemon warns of at start-up; the fix is the same `chmod -R`.
    exposed = exposed_paths(data_dir)
    if exposed:
        yield Finding(
            False,
            "data_dir",
            f"{len(exposed)} paths in {data_dir} are open to other users (it holds"
            " trajectories and the admin token)",
            f"chmod -R go-rwx {data_dir}",
            repair=lambda: _make_private(data_dir),
        )
    else:
        yield Finding(True, "data_dir", f"{data_dir}: writable, private")


def _make_private(data_dir: Path) -> None:
    """``chmod -R go-rwx data_dir`` (links are left alone: their targets are elsewhere)."""
    paths = [data_dir]
    for folder, dirs, names in os.walk(data_dir):
        paths += [Path(folder) / name for name in dirs + names]
    for path in paths:
        if not path.is_symlink():
            mode = path.lstat().st_mode
            os.chmod(path, stat.S_IMODE(mode) & ~(stat.S_IRWXG | stat.S_IRWXO))


def _daemon(settings: Settings, data_dir: Path) -> Finding:
    try:
        with hold_data_dir_lock(data_dir):
            pass
    except DataDirLocked:
        return _readiness(settings)
    except OSError as exc:
        return Finding(False, "daemon", f"cannot open the lock in {data_dir}: {exc}", "")
    return Finding(True, "daemon", "none runs on this data_dir (start it: wakeful run)")


def _readiness(settings: Settings) -> Finding:
    import httpx

    url = f"{base_url(split_bind(settings.server.bind))}/readyz"  # as every client reaches it
    try:
        answer = httpx.get(url, timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        return Finding(
            False,
            "daemon",
            f"one holds the data_dir but {url} does not answer ({type(exc).__name__})",
            "see its log (journalctl --user -u wakeful)",
        )
    if answer.status_code == 200:
        return Finding(True, "daemon", f"running and ready ({url})")
    return Finding(
        False, "daemon", f"running, not ready: {answer.text.strip()[:200]}", "see /readyz"
    )


def _store(settings: Settings, data_dir: Path) -> list[Finding]:
    if settings.store.backend == "redis":
        return [_redis(settings)]
    import sqlite3

    found = []
    for path in sorted(data_dir.glob("*.db")) + sorted(data_dir.glob("*.sqlite")):
        try:
            db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=TIMEOUT_S)
            try:
                result = [str(row[0]) for row in db.execute("PRAGMA quick_check")]
            finally:
                db.close()
        except sqlite3.Error as exc:
            result = [str(exc)]
        if result == ["ok"]:
            found.append(Finding(True, "store", f"{path.name}: quick check ok"))
        else:
            found.append(
                Finding(
                    False,
                    "store",
                    f"{path.name}: {'; '.join(result)[:200]}",
                    "stop the daemon and restore a backup (wakeful restore FILE)",
                )
            )
    return found or [Finding(True, "store", "no database yet (the daemon makes one)")]


def _redis(settings: Settings) -> Finding:
    import redis

    url = settings.store.redis_url
    try:
        redis.Redis.from_url(url, socket_timeout=TIMEOUT_S).ping()
    except redis.RedisError as exc:
        return Finding(False, "store", f"Redis at {url}: {exc}", "start Redis or fix [store]")
    return Finding(True, "store", f"Redis at {url} answers")


def model_finding(settings: Settings) -> tuple[Finding, float | None]:
    llm = settings.llm
    if not llm.model:
        return Finding(False, "model", "none configured", "set [llm] model (and base_url)"), None
    key = llm.resolve_api_key()
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    if llm.provider == "anthropic":
        headers = {"x-api-key": key or "", "anthropic-version": "2023-06-01"}
    url = f"{llm.base_url}/models"
    import httpx

    try:
        answer = httpx.get(url, headers=headers, timeout=TIMEOUT_S)
    except httpx.HTTPError as exc:
        text = f"cannot reach {llm.base_url} ({type(exc).__name__})"
        return Finding(False, "model", text, "start the server or fix [llm] base_url"), None
    skew = _skew(answer.headers.get("date"))
    where = f"{llm.model!r} at {llm.base_url}"
    if answer.status_code in (401, 403):
        fix = "set the key ([llm] api_key_env, e.g. OPENAI_API_KEY, or api_key_file)"
        text = f"{where}: the key was refused (HTTP {answer.status_code})"
        return Finding(False, "model", text, fix), skew
    return Finding(True, "model", f"{where} answers (HTTP {answer.status_code})"), skew


def _skew(date: str | None) -> float | None:
    import email.utils

    if not date:
        return None
    try:
        return email.utils.parsedate_to_datetime(date).timestamp() - time.time()
    except (TypeError, ValueError):
        return None


def _clock(skew: float) -> Finding:
    if abs(skew) <= CLOCK_SKEW_S:
        return Finding(True, "clock", f"agrees with the model server's ({skew:+.0f} s)")
    return Finding(
        False,
        "clock",
        f"{skew:+.0f} s from the model server's (timers and daily caps go by it)",
        "enable time sync (timedatectl set-ntp true)",
    )


def _sandbox(settings: Settings, data_dir: Path) -> Finding:
    from wakeful.kernel.config_files import ConfigError
    from wakeful.safety.sandbox import sandbox_from_settings

    safety = settings.safety
    workspace = safety.workspace_path(data_dir)
    try:
        with contextlib.ExitStack() as scratch:
            if not workspace.is_dir():
                # The daemon makes it at its first start, and the probe's command starts
                # in it; whether bubblewrap works here does not depend on which one.
                workspace = Path(scratch.enter_context(tempfile.TemporaryDirectory()))
            sandbox = sandbox_from_settings(
                safety, data_dir=data_dir, workspace=workspace, give_workspace=False
            )
    except ConfigError as exc:
        return Finding(False, "sandbox", str(exc), "")
    if sandbox.kind == "off":
        return Finding(False, "sandbox", f"shell tools are off: {sandbox.off_because}", "")
    if sandbox.kind == "none":
        return Finding(
            True, "sandbox", 'none: shell commands run unconfined ([safety] sandbox = "none")'
        )
    return Finding(True, "sandbox", "shell commands run in bubblewrap")


def chat_findings(settings: Settings) -> list[Finding]:
    """Each configured chat account's credential, asked of its platform once (one line
    each, by wakeful/cli/chat_checks.py's table); a platform with no account says nothing."""
    from wakeful.cli.chat_checks import CHAT_CHECKS

    findings = []
    for platform, how in CHAT_CHECKS.items():
        for account in getattr(settings.chat, platform):
            where = f"chat.{platform} '{account.name}'"
            check = how.configured(account, where)
            if check is not None:
                findings.append(_proved(where, how.fix(account), check))
    return findings


def _proved(where: str, fix: str, check: Callable[[], str]) -> Finding:
    """``check`` run: ok with what it found, or FAIL with the fix."""
    from wakeful.cli.chat_checks import CheckFailed
    from wakeful.kernel.config_files import ConfigError

    try:
        return Finding(True, where, f"the credential is accepted ({check()})")
    except CheckFailed as exc:
        return Finding(False, where, str(exc), fix)
    except ConfigError as exc:  # a secret file is missing or unreadable
        return Finding(False, where, str(exc), "write the credential to that file")
