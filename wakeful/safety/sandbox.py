"""How a command the agent runs is confined: bubblewrap, an unprivileged user, limits.

Approvals and the reviewer decide *whether* a command runs; this decides what it
can reach once it does. With bubblewrap the command sees the machine read-only,
the workspace writable (but not AGENTS.md or the skills), a private /tmp and /run,
no network (unless configured) and none of the host's Unix sockets, and not at all
the daemon's data directory, credentials, /root or /home. Resource limits
(CPU seconds, address space, processes, file size) are set by ``prlimit`` inside
the sandbox, just before ``/bin/sh``: anyio cannot run a ``preexec_fn``, and an
exec of a small C program costs about a millisecond, against ~20 ms for a Python
shim.

The kernel never applies the process limit to uid 0. So when the daemon runs as
root, bubblewrap is started without a user namespace and ``setpriv`` drops the
command to nobody (65534): the workspace is given to that user at start-up.

The :class:`Sandbox` is built once at start-up (one probe run) and is a plain
value afterwards: :meth:`Sandbox.argv` only assembles a list.

It fails closed: with ``sandbox = "auto"`` and no working bubblewrap the sandbox is
*off* (kind ``"off"``), the tools that run programs are left out and answer with the
reason, and :meth:`Sandbox.argv` refuses. Only ``sandbox = "none"``, written by the
operator, runs commands unconfined.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import signal
import stat
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import structlog
from pydantic import BaseModel

from wakeful.kernel.config_base import ConfigError, config_dir, credential_path
from wakeful.safety.config import SafetySection

if TYPE_CHECKING:
    from wakeful.app.config import Settings

log = structlog.get_logger(__name__)

NOBODY = 65534
SHELL = "/bin/sh"
PROBE_TIMEOUT_S = 10.0
# Always hidden when present: systemd's credentials and the usual places for
# wakeful's own (the config may hold tokens), and everybody's home.
HIDDEN_ALWAYS = ("/root", "/home", "/etc/wakeful", "/run/credentials")
_MIB = 1024 * 1024
CPU_GRACE_S = 5


@dataclass(frozen=True)
class Limits:
    cpu_s: int = 600
    memory_mb: int = 2048
    processes: int = 256
    file_mb: int = 1024

    def prlimit_args(self) -> list[str]:
        # One value sets the soft and the hard limit: the command cannot raise them.
        # CPU: SIGXCPU at the soft limit (a status we can name), SIGKILL a little later
        # for a command that ignores it.
        return [
            f"--cpu={self.cpu_s}:{self.cpu_s + CPU_GRACE_S}",
            f"--as={self.memory_mb * _MIB}",
            f"--nproc={self.processes}",
            f"--fsize={self.file_mb * _MIB}",
        ]


@dataclass(frozen=True)
class Sandbox:
    """The argv prefix every agent command gets, and how to read its failures."""

    kind: Literal["bubblewrap", "none", "off"] = "none"
    limits: Limits | None = None
    network: bool = True
    run_as: int | None = None  # the uid (and gid) commands run as, when not the daemon's
    # bwrap and its mount options, up to (not including) the --chdir.
    bwrap: tuple[str, ...] = ()
    # setpriv and prlimit, between bwrap and /bin/sh.
    inner: tuple[str, ...] = ()
    hidden: tuple[Path, ...] = field(default=(), compare=False)
    # Directories already empty inside (tmpfs) or the agent's own (the workspace):
    # a listening Unix socket below one of them needs no hiding of its own.
    socket_roots: tuple[Path, ...] = field(default=(), compare=False)
    # The standing instructions and skills inside the workspace: read-only, and
    # covered even while they do not exist, so a command cannot create them.
    read_only: tuple[Path, ...] = field(default=(), compare=False)
    # Kind "off": the one line saying why no command may run (log, status, tool result).
    off_because: str | None = field(default=None, compare=False)

    @property
    def off(self) -> bool:
        return self.kind == "off"

    def status(self) -> dict[str, object]:
        """For ``/api/status``: what confines the agent's commands."""
        info: dict[str, object] = {"kind": self.kind}
        if self.off:
            info["shell_tools"] = f"off: {self.off_because}"
            return info
        info["network"] = self.network
        if self.limits is not None:
            info["limits"] = dataclasses.asdict(self.limits)
        if self.run_as is not None:
            info["run_as"] = self.run_as
        return info

    def argv(self, command: str, *, cwd: Path | None = None) -> list[str]:
        """The process's argv for ``command`` (a ``/bin/sh -c`` line) run in ``cwd``."""
        if self.off:
            # The tools are left out when the sandbox is off; this is the last line.
            raise SandboxOff(self.off_because or "the sandbox is off")
        outer = list(self.bwrap)
        if outer:
            # Listening sockets are read at each start: a database started after the
            # daemon is hidden too.
            outer += _socket_mounts(self.socket_roots)
            outer += _read_only_mounts(self.read_only)
            if cwd:
                outer += ["--chdir", str(cwd)]
        return [*outer, *self.inner, SHELL, "-c", command]

    def describe(self) -> str:
        """One sentence for the model: what a command can and cannot do."""
        parts = []
        if self.kind == "bubblewrap":
            parts.append(
                "Commands run in a sandbox: only the workspace is writable (/tmp is private "
                "to each command), the daemon's data, credentials and home directories are "
                "not visible" + ("" if self.network else ", and there is no network access") + "."
            )
        if self.limits is not None:
            lim = self.limits
            parts.append(
                f"Limits per command: {lim.cpu_s} CPU seconds, {lim.memory_mb} MiB of address "
                f"space per process, {lim.processes} processes, files up to {lim.file_mb} MiB."
            )
        return " ".join(parts)

    def diagnose(self, exit_code: int | None, output: str) -> str | None:
        """Which limit a failed command most likely hit, in one line; None if none."""
        if exit_code in (None, 0) or self.limits is None:
            return None
        lim = self.limits
        sig = -exit_code if exit_code < 0 else exit_code - 128 if exit_code > 128 else None
        if sig == signal.SIGXCPU or _CPU_TEXT.search(output):
            return f"stopped: it hit the sandbox's CPU time limit ({lim.cpu_s} s)"
        if sig == signal.SIGXFSZ or _FSIZE_TEXT.search(output):
            return f"stopped: it hit the sandbox's file size limit ({lim.file_mb} MiB)"
        if _NPROC_TEXT.search(output):
            return (
                f"stopped: it hit the sandbox's process limit ({lim.processes} at once); "
                "run fewer processes in parallel"
            )
        if _MEMORY_TEXT.search(output):
            return (
                f"stopped: it hit the sandbox's memory limit ({lim.memory_mb} MiB of address "
                "space per process); use less memory or ask the operator to raise "
                "safety.limit_memory_mb"
            )
        return None


NO_SANDBOX = Sandbox()


class SandboxOff(RuntimeError):
    """A command was about to run although no sandbox works here."""


# The tools that run a program for the agent: off together when the sandbox is.
PROCESS_TOOLS = ("shell_exec", "start_shell", "monitor_shell")


def off_result_text(tool: str, reason: str) -> str:
    """What the model gets when it calls a process tool while the sandbox is off."""
    return (
        f"{tool} is off on this daemon: {reason}. No command can run; do the task "
        "with the other tools or tell the user."
    )


_NPROC_TEXT = re.compile(
    r"Resource temporarily unavailable|[Cc]an(?:no|')t fork|fork: retry|fork failed"
)
_MEMORY_TEXT = re.compile(r"MemoryError|Cannot allocate memory|out of memory|bad_alloc")
_FSIZE_TEXT = re.compile(r"File too large|File size limit exceeded")
_CPU_TEXT = re.compile(r"CPU time limit exceeded")


_built: dict[tuple[str, Path, Path, tuple[Path, ...], tuple[Path, ...]], Sandbox] = {}


def daemon_sandbox(settings: Settings, data_dir: Path) -> Sandbox:
    """The daemon's one sandbox: shell_exec and start_shell both ask, one probe runs.

    Besides the data directory, it hides every secret file the settings name
    (``*_file`` keys) and the config file's directory (the config may hold tokens).
    """
    hide = [*_secret_files(settings)]
    if (directory := config_dir()) is not None:
        hide.append(directory)
    workspace = settings.safety.workspace_path(data_dir)
    skills = tuple(settings.skills.skill_roots(data_dir))
    key = (settings.safety.model_dump_json(), data_dir, workspace, tuple(hide), skills)
    if key not in _built:
        workspace.mkdir(parents=True, exist_ok=True)  # the probe's command starts in it
        built = _built[key] = sandbox_from_settings(
            settings.safety, data_dir=data_dir, workspace=workspace, hide=hide, protect=skills
        )
        _log_choice(built)
    return _built[key]


def _log_choice(sandbox: Sandbox) -> None:
    """The daemon's log says once how its shell commands run. Said here, not by the
    probe: `wakeful doctor` probes too, and its report is findings, not log lines."""
    if sandbox.kind == "bubblewrap":
        log.info("shell commands run in bubblewrap", run_as=sandbox.run_as)
    elif sandbox.kind == "off":
        log.error("shell tools are off", reason=sandbox.off_because,
                  tools=", ".join(PROCESS_TOOLS))  # fmt: skip


def _secret_files(model: BaseModel) -> list[Path]:
    found: list[Path] = []
    for name, value in model:
        if isinstance(value, BaseModel):
            found += _secret_files(value)
        elif isinstance(value, list | dict):
            items = value.values() if isinstance(value, dict) else value
            found += [
                p for item in items if isinstance(item, BaseModel) for p in _secret_files(item)
            ]
        elif name.endswith("_file") and isinstance(value, Path):
            found.append(credential_path(value))
    return found


def sandbox_from_settings(
    safety: SafetySection,
    *,
    data_dir: Path,
    workspace: Path,
    hide: Sequence[Path] = (),
    bwrap: str | None = "bwrap",
    protect: Sequence[Path] = (),
    give_workspace: bool = True,
) -> Sandbox:
    """The daemon's sandbox from ``[safety]``; probes bubblewrap once.

    ``hide``: more paths the command must not see (e.g. an admin token file).
    ``protect``: more paths it may read but never write or create (the skill roots;
    AGENTS.md always).
    ``bwrap``: the program to look up on PATH (tests pass one that is missing).
    ``give_workspace``: False only asks whether bubblewrap works (`wakeful doctor`),
    leaving the workspace's owner as it is.
    """
    limits = _working_limits(
        Limits(
            cpu_s=safety.limit_cpu_s,
            memory_mb=safety.limit_memory_mb,
            processes=safety.limit_processes,
            file_mb=safety.limit_file_mb,
        )
    )
    if safety.sandbox == "none":
        return _unconfined(limits)
    found = shutil.which(bwrap) if bwrap else None
    reason: str | None
    if found is None:
        reason = f"{bwrap or 'bwrap'} is not on PATH"
    else:
        candidate = _bubblewrap(
            found,
            limits,
            data_dir,
            workspace,
            hide,
            network=safety.sandbox_network,
            protect=protect,
        )
        reason = _probe(candidate, workspace)
        if reason is None:
            if candidate.run_as is not None and give_workspace:
                _give_workspace(workspace, candidate.run_as)
            return candidate
    if safety.sandbox == "bubblewrap":
        raise ConfigError(
            f'safety.sandbox = "bubblewrap" but bubblewrap does not work here: {reason}; '
            'install it (apt-get install bubblewrap) or set sandbox = "none"'
        )
    # Fail closed: "auto" never means "unconfined" (as root that would be the whole
    # machine); only an explicit sandbox = "none" does.
    line = (
        f"no sandbox: {reason}; apt-get install bubblewrap, or set [safety] "
        'sandbox = "none" to run commands unconfined'
    )
    return Sandbox(kind="off", limits=limits, network=False, off_because=line)


def _unconfined(limits: Limits | None) -> Sandbox:
    inner = ("prlimit", *limits.prlimit_args(), "--") if limits else ()
    return Sandbox(kind="none", limits=limits, network=True, inner=inner)


def _working_limits(limits: Limits) -> Limits | None:
    """``limits`` if prlimit can set them here (a seccomp filter may forbid it)."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        log.warning(
            "shell commands run without resource limits: prlimit is not on PATH",
            fix="apt-get install util-linux",
        )
        return None
    argv = [prlimit, *limits.prlimit_args(), "--", "true"]
    failure = _run_probe(argv, None)
    if failure is not None:
        log.warning("shell commands run without resource limits", reason=failure)
        return None
    return limits


def _bubblewrap(
    bwrap: str,
    limits: Limits | None,
    data_dir: Path,
    workspace: Path,
    hide: Sequence[Path],
    *,
    network: bool,
    protect: Sequence[Path] = (),
) -> Sandbox:
    run_as = NOBODY if os.geteuid() == 0 else None
    hidden = _hidden_paths(data_dir, hide)
    if run_as is not None:
        blocked = _first_blocked_ancestor(workspace, run_as, hidden)
        if blocked is not None:
            hidden.append(blocked)  # nobody could not see inside it anyway
    # Shallow mounts first, so deeper ones land on top; at equal depth hiding comes
    # before binding, so the workspace (often <data_dir>/workspace) is bound back last.
    mounts: list[tuple[int, int, list[str]]] = [
        (len(p.parts), 0, ["--tmpfs", str(p)] if p.is_dir() else ["--ro-bind", "/dev/null", str(p)])
        for p in hidden
    ]
    # /tmp and /run (= /var/run) hold the host's Unix sockets (PostgreSQL, MySQL,
    # D-Bus, ...): a socket connects even on a read-only mount, and a network
    # namespace does not cover path sockets. Each gets an empty tmpfs; sockets
    # elsewhere are covered one by one in argv.
    private = _private_dirs()
    for directory in private:
        mounts.append((len(directory.parts), 0, ["--tmpfs", str(directory)]))
    resolv = Path(os.path.realpath("/etc/resolv.conf"))
    if resolv.is_file() and any(resolv.is_relative_to(d) for d in private):
        # systemd-resolved keeps the resolver file under /run; DNS still needs it.
        mounts.append((len(resolv.parts), 2, ["--ro-bind", str(resolv), str(resolv)]))
    mounts.append((len(workspace.parts), 1, ["--bind", str(workspace), str(workspace)]))
    # The owner's standing instructions (AGENTS.md) and skills stay readable but not
    # writable: what a command is told must not become every session's system prompt.
    # Mounted in argv (after the workspace): whether each exists is known only then.
    inside = workspace.resolve()
    read_only = [
        path
        for path in (inside / "AGENTS.md", *(Path(os.path.realpath(p)) for p in protect))
        if path.is_relative_to(inside) and path != inside
    ]
    mounts.sort(key=lambda m: (m[0], m[1]))
    # Only the namespaces that confine: processes, network, mounts (always, with
    # bwrap) and, unprivileged, users. IPC, UTS and cgroup namespaces would add
    # nothing an unprivileged command could abuse, and each one the systemd unit
    # allows (RestrictNamespaces=) weakens the daemon's own hardening.
    namespaces = ["--unshare-pid"]
    if run_as is None:
        # Unprivileged: the user namespace is what lets bwrap build the others.
        namespaces.append("--unshare-user")
    else:
        # Root: no user namespace (uid 0 inside would still be root to the process
        # limit); setpriv needs these two capabilities to become nobody, then has none.
        namespaces += ["--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    if not network:
        namespaces.append("--unshare-net")
    # No --new-session: the caller already made the command a session and group
    # leader, and killing that group must reach everything inside.
    prefix = [bwrap, "--die-with-parent", *namespaces, "--ro-bind", "/", "/"]
    prefix += ["--dev", "/dev", "--proc", "/proc"]
    for _, _, args in mounts:
        prefix += args
    inner: list[str] = []
    if run_as is not None:
        inner += ["setpriv", f"--reuid={run_as}", f"--regid={run_as}", "--clear-groups"]
        inner += ["--inh-caps=-all", "--bounding-set=-all", "--"]
    if limits is not None:
        inner += ["prlimit", *limits.prlimit_args(), "--"]
    return Sandbox(
        kind="bubblewrap",
        limits=limits,
        network=network,
        run_as=run_as,
        bwrap=tuple(prefix),
        inner=tuple(inner),
        hidden=tuple(hidden),
        # /dev and /proc are the sandbox's own (--dev, --proc).
        socket_roots=(*hidden, *private, workspace.resolve(), Path("/dev"), Path("/proc")),
        read_only=tuple(dict.fromkeys(read_only)),
    )


def _read_only_mounts(paths: Sequence[Path]) -> list[str]:
    """bwrap options making each path read-only inside, existing or not.

    A missing one is covered all the same, or a command could create it: an empty
    file for a file name (AGENTS.md), an empty read-only directory for a skill root.
    bwrap leaves an empty mount point behind in the workspace then, which reads as
    nothing: an empty AGENTS.md is no instructions, an empty directory no skills.
    """
    args: list[str] = []
    for path in paths:
        if path.exists():
            args += ["--ro-bind", str(path), str(path)]
        elif path.suffix:  # a file name (AGENTS.md)
            args += ["--ro-bind", "/dev/null", str(path)]
        else:
            args += ["--tmpfs", str(path), "--remount-ro", str(path)]
    return args


# /dev/shm needs no entry: bwrap's own --dev brings an empty one.
PRIVATE_DIRS = ("/tmp", "/run", "/var/run")
PROC_NET_UNIX = Path("/proc/net/unix")


def _private_dirs() -> list[Path]:
    found: list[Path] = []
    for name in PRIVATE_DIRS:
        path = Path(os.path.realpath(name))
        # /var/run is usually a link to /run: one tmpfs then.
        if path.is_dir() and path not in found:
            found.append(path)
    return found


def _socket_mounts(roots: Sequence[Path]) -> list[str]:
    """bwrap options putting /dev/null over each listening Unix socket of the host.

    Those under ``roots`` are left alone (hidden already, or the workspace's own).
    """
    try:
        table = PROC_NET_UNIX.read_text()
    except OSError:
        return []
    args: list[str] = []
    seen: set[Path] = set()
    for line in table.splitlines()[1:]:
        # The path is the last field and may hold spaces.
        fields = line.split(maxsplit=7)
        # Path sockets only: an abstract one (@name) lives in the network namespace,
        # which the sandbox has its own of unless sandbox_network = true.
        if len(fields) < 8 or not fields[7].startswith("/"):
            continue
        path = Path(os.path.realpath(fields[7]))
        if path in seen or any(path.is_relative_to(root) for root in roots):
            continue
        seen.add(path)
        try:
            is_socket = stat.S_ISSOCK(os.lstat(path).st_mode)
        except OSError:
            continue  # gone (or never had a name on this file system)
        if is_socket:
            args += ["--ro-bind", "/dev/null", str(path)]
    return args


def _hidden_paths(data_dir: Path, hide: Sequence[Path]) -> list[Path]:
    names: list[str | Path] = [*HIDDEN_ALWAYS, data_dir, *hide]
    if os.environ.get("CREDENTIALS_DIRECTORY"):
        names.append(os.environ["CREDENTIALS_DIRECTORY"])
    paths: list[Path] = []
    for name in names:
        path = Path(os.path.realpath(name))
        # A path that does not exist needs no hiding (and bwrap could not mount on it).
        if path != Path("/") and path.exists() and path not in paths:
            paths.append(path)
    return paths


def _first_blocked_ancestor(workspace: Path, uid: int, hidden: Sequence[Path]) -> Path | None:
    """The highest directory above the workspace that ``uid`` cannot enter.

    Inside the sandbox it becomes an empty tmpfs (which anyone may enter) holding
    only the path to the workspace, or the workspace's own path would not resolve.
    """
    for ancestor in reversed(workspace.resolve().parents):
        if any(ancestor == h or ancestor.is_relative_to(h) for h in hidden):
            return None  # a tmpfs from here down: enterable
        info = ancestor.stat()
        if info.st_uid == uid:
            bit = stat.S_IXUSR
        elif info.st_gid == uid:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return ancestor
    return None


def _give_workspace(workspace: Path, uid: int) -> None:
    """Make the workspace the sandbox user's, so commands can write in it.

    Walked once, while the workspace itself is not yet the user's: afterwards the
    file tools keep that ownership for what they write (``file_access``), so a
    large workspace is not walked at every start.
    """
    if os.lstat(workspace).st_uid == uid:
        return
    changed = 0
    for root, dirs, files in os.walk(workspace):
        for name in [root, *(os.path.join(root, n) for n in (*dirs, *files))]:
            if os.lstat(name).st_uid != uid:
                os.lchown(name, uid, uid)
                changed += 1
    if changed:
        log.info("workspace given to the sandbox user", uid=uid, paths=changed)


def _probe(sandbox: Sandbox, workspace: Path) -> str | None:
    """Why the sandbox cannot run ``true`` here, or None when it can."""
    return _run_probe(sandbox.argv("true", cwd=workspace), workspace)


def _run_probe(argv: list[str], cwd: Path | None) -> str | None:
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{argv[0]}: {exc}"
    if done.returncode == 0:
        return None
    said = done.stderr.decode(errors="replace").strip().splitlines()
    return f"{Path(argv[0]).name} exited {done.returncode}" + (f": {said[-1]}" if said else "")
