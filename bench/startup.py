"""Start-up and footprint on the embedded defaults: what a person waits for and pays.

Rows, each the median (and best) wall time of ``--runs`` runs, and the median CPU
time (user + system) of the process measured (for READY: the daemon's until then; on a
machine shared with other work the wall time waits for a core, the CPU time less):

- start → READY: ``wakeful -c EMPTY run`` with ``NOTIFY_SOCKET`` pointing at a
  datagram socket this script binds (it plays systemd); READY=1 is sent once
  the store is open and the listener bound.
- idle RSS: the daemon's resident memory (its process tree) two seconds after
  READY, nothing configured, nothing happening.
- ``wakeful status``: the client command end to end against that daemon.
- modules: how many modules ``import wakeful.cli.main`` and the daemon load.
- import steps: ``python -c "import X"`` for the CLI, the config (pydantic and every
  section's model) and the daemon's lifespan, each alone: start → READY less the
  lifespan's import is the work the daemon does once imported (and its components'
  imports).
- SIGTERM → exit 0.

Baselines in the same run: the bare interpreter (``python -c pass``) and the
interpreter importing pydantic (what any config-validating client pays).

Bytecode: an installed wakeful has its ``.pyc`` files (pip compiles them), a checkout
run with ``PYTHONDONTWRITEBYTECODE`` (as these sessions' shells set it) compiles every
module from source at every start (a fifth or more of the daemon's import time). Each tree
gets a bytecode cache of its own (``PYTHONPYCACHEPREFIX``, a temporary directory, so
nothing is written into the tree), filled by one warm-up run that is not counted.

Only the standard library is used, so the same file measures another tree:
``python -m bench.startup --tree /path/to/other/checkout`` (its modules are
put first on ``PYTHONPATH``; entry modules are looked up under both layouts), and
``--python /path/to/venv/bin/python`` runs it with another install's packages.
``--compare PATH`` measures a second checkout in the same run, each run of every row
taken for both trees in turn (before/after on a machine whose load drifts: the drift
falls on both alike); one table each.
A row fails the bench when what it times did not happen: READY not sent,
status not answering, exit not 0.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import NamedTuple

REPO_ROOT = Path(__file__).resolve().parent.parent
# The interpreter that runs the measured commands (--python): by default this one. A
# venv with only `pip install .` measures what a user's install loads; the dev venv also
# holds test-only packages that some libraries import when present (rich, trio).
PYTHON = [sys.executable]
# Entry modules in today's layout, then in the layout before issue 23.
CLI_MODULES = ("wakeful.cli.main", "wakeful.daemon.cli")
CONFIG_MODULES = ("wakeful.app.config", "wakeful.daemon.config")
DAEMON_MODULES = ("wakeful.app.lifespan", "wakeful.daemon.lifespan")


class Timing(NamedTuple):
    """Wall time, and the CPU time the measured process spent (user + system): on a
    machine shared with other work the wall time waits for a core, the CPU time less."""

    wall: float
    cpu: float


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_cpu(pid: int) -> float:
    """CPU seconds a running process has used so far (/proc/PID/stat utime + stime)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Systemd:
    """The NOTIFY_SOCKET end: waits for one KEY=value datagram."""

    def __init__(self) -> None:
        self.address = f"@wakeful-bench-{uuid.uuid4().hex}"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind("\0" + self.address[1:])

    def wait_for(self, key: str, timeout_s: float = 60.0) -> float:
        self.sock.settimeout(timeout_s)
        while True:
            data = self.sock.recv(4096).decode()
            if any(line.startswith(f"{key}=") for line in data.splitlines()):
                return time.monotonic()


def tree_rss_mib(pid: int) -> float:
    """Resident memory of a process and its descendants (what systemd's unit holds)."""
    total_kib = 0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            status = Path(f"/proc/{current}/status").read_text()
            children = Path(f"/proc/{current}/task/{current}/children").read_text().split()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                total_kib += int(line.split()[1])
        pending += [int(child) for child in children]
    return total_kib / 1024


class Tree:
    """One checkout to measure: its interpreter environment and entry modules."""

    def __init__(self, root: Path, pycache: Path) -> None:
        self.root = root
        self.env = {**os.environ, "PYTHONPATH": str(root), "PYTHONPYCACHEPREFIX": str(pycache)}
        self.env.pop("PYTHONDONTWRITEBYTECODE", None)  # the cache is written once, then read
        self.cli = self._first(CLI_MODULES)
        self.config = self._first(CONFIG_MODULES)
        self.daemon = self._first(DAEMON_MODULES)

    def _first(self, names: tuple[str, ...]) -> str:
        for name in names:
            if (self.root / (name.replace(".", "/") + ".py")).exists():
                return name
        raise SystemExit(f"--tree {self.root}: none of {', '.join(names)} exists there")

    def run(self, *args: str, env: dict[str, str] | None = None) -> Timing:
        """Run one command to its end; only one child is reaped meanwhile (its CPU)."""
        started, cpu = time.monotonic(), children_cpu()
        subprocess.run(
            [PYTHON[0], *args],
            check=True,
            cwd=tempfile.gettempdir(),  # never the repo: "" on sys.path would shadow --tree
            env=env or self.env,
            stdout=subprocess.DEVNULL,
        )
        return Timing(time.monotonic() - started, children_cpu() - cpu)

    def module_count(self, module: str) -> int:
        out = subprocess.run(
            [PYTHON[0], "-c", f"import sys, {module}; print(len(sys.modules))"],
            check=True,
            capture_output=True,
            text=True,
            cwd=tempfile.gettempdir(),
            env=self.env,
        ).stdout
        return int(out)


def one_daemon(tree: Tree, work: Path) -> dict[str, Timing]:
    """Start on the embedded defaults, measure, ask status, stop; one run's figures."""
    config = work / "wakeful.toml"
    config.write_text("")  # the embedded defaults: nothing configured
    port = free_port()
    notify = Systemd()
    env = {
        **tree.env,
        "NOTIFY_SOCKET": notify.address,
        "WAKEFUL_DAEMON__DATA_DIR": str(work / "data"),
        "WAKEFUL_SERVER__BIND": f"127.0.0.1:{port}",
    }
    started = time.monotonic()
    proc = subprocess.Popen(
        [PYTHON[0], "-m", "wakeful", "-c", str(config), "run"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=tempfile.gettempdir(),
    )
    try:
        try:
            ready = Timing(notify.wait_for("READY") - started, process_cpu(proc.pid))
        except TimeoutError:
            raise SystemExit("start → READY: no READY=1 within 60 s") from None
        finally:
            notify.sock.close()
        time.sleep(2.0)  # idle: what the daemon holds once start-up work has settled
        rss = tree_rss_mib(proc.pid)
        client_env = {k: v for k, v in env.items() if k != "NOTIFY_SOCKET"}
        try:
            status = tree.run("-m", "wakeful", "-c", str(config), "status", env=client_env)
        except subprocess.CalledProcessError as exc:
            raise SystemExit(f"wakeful status exited {exc.returncode}") from None
        stopping = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
        if code != 0:
            raise SystemExit(f"SIGTERM → exit: wakeful exited {code}")
        exited = time.monotonic() - stopping
        return {
            "ready": ready,
            "rss": Timing(rss, 0.0),
            "status": status,
            "exit": Timing(exited, 0.0),
        }
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per row (default 5)")
    parser.add_argument("--tree", type=Path, default=REPO_ROOT, help="checkout to measure")
    parser.add_argument(
        "--compare",
        type=Path,
        help="a second checkout, measured in the same run with its runs interleaved with "
        "--tree's (what else the machine does then falls on both alike)",
    )
    parser.add_argument(
        "--python", default=sys.executable, help="interpreter to run it with (default: this one)"
    )
    args = parser.parse_args()
    PYTHON[0] = args.python
    roots = [args.tree] if args.compare is None else [args.tree, args.compare]
    with contextlib.ExitStack() as stack:
        trees = [Tree(root.resolve(), Path(stack.enter_context(_pycache()))) for root in roots]
        for tree in trees:
            with tempfile.TemporaryDirectory(prefix="wakeful-startup-") as work:
                one_daemon(tree, Path(work))  # warm-up, not counted: fills the bytecode cache
        measured = [Measured() for _ in trees]
        for index in range(args.runs):
            # Each run measures every tree, in turn; the first one alternates.
            order = list(zip(trees, measured, strict=True))
            for tree, figures in order if index % 2 == 0 else reversed(order):
                figures.measure_once(tree)
        for tree, figures in zip(trees, measured, strict=True):
            report(args, tree, figures)


def _pycache() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix="wakeful-startup-pyc-")


class Measured:
    """One tree's runs of every row, added one run at a time."""

    def __init__(self) -> None:
        self.bare: list[Timing] = []
        self.pydantic: list[Timing] = []
        self.steps: dict[str, list[Timing]] = {}
        self.runs: list[dict[str, Timing]] = []

    def measure_once(self, tree: Tree) -> None:
        self.bare.append(tree.run("-c", "pass"))
        self.pydantic.append(tree.run("-c", "import pydantic_settings"))
        for module in (tree.cli, tree.config, tree.daemon):
            self.steps.setdefault(module, []).append(tree.run("-c", f"import {module}"))
        with tempfile.TemporaryDirectory(prefix="wakeful-startup-") as work:
            self.runs.append(one_daemon(tree, Path(work)))


def report(args: argparse.Namespace, tree: Tree, measured: Measured) -> None:
    """One table: each row the median and best of its runs, and the median CPU time."""
    bare, pydantic, steps, runs = measured.bare, measured.pydantic, measured.steps, measured.runs

    def row(name: str, values: list[Timing], unit: str, scale: float = 1000.0) -> None:
        median = statistics.median(v.wall for v in values) * scale
        best = min(v.wall for v in values) * scale
        cpu = statistics.median(v.cpu for v in values) * scale
        cpu_text = f"{cpu:>9.1f}" if cpu else f"{'':>9}"
        print(f"{name:<34} {median:>9.1f} {best:>9.1f} {cpu_text}  {unit}")

    print(f"tree: {tree.root}  python: {args.python}")
    print(f"runs: {args.runs}; load average at the end: {os.getloadavg()[0]:.2f}")
    print(f"{'':<34} {'median':>9} {'best':>9} {'cpu':>9}")
    row("baseline: python -c pass", bare, "ms")
    row("baseline: import pydantic_settings", pydantic, "ms")
    for module, times in steps.items():
        row(f"import {module}", times, "ms")
    for key, name in (
        ("ready", "start → READY (defaults)"),
        ("status", "wakeful status (end to end)"),
        ("exit", "SIGTERM → exit 0 (idle)"),
    ):
        row(name, [r[key] for r in runs], "ms")
    row("idle RSS (process tree)", [r["rss"] for r in runs], "MiB", scale=1.0)
    print(f"{'modules: import ' + tree.cli:<34} {tree.module_count(tree.cli):>9}")
    print(f"{'modules: import ' + tree.daemon:<34} {tree.module_count(tree.daemon):>9}")


if __name__ == "__main__":
    main()
