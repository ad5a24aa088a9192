"""What starting costs in imports: a client command imports only the client, and the
daemon on the embedded defaults imports no optional part (bench/startup.py measures
the time; these keep the imports that time was won by from coming back)."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

# Libraries a client command (`wakeful status`, `send`, `events` …) must not import: the
# daemon's config (pydantic), its HTTP stack, its logging (structlog, and rich where it is
# installed), and what only one other command uses (doctor's httpx, backup's tarfile
# and sqlite3, `--version`'s importlib.metadata).
NOT_FOR_A_CLIENT = (
    "pydantic",
    "pydantic_settings",
    "httpx",
    "httpcore",
    "structlog",
    "rich",
    "anyio",
    "starlette",
    "uvicorn",
    "sqlite3",
    "tarfile",
    "importlib.metadata",
    "wakeful.app",
    "wakeful.core",
    "wakeful.store",
    "wakeful.kernel.config_base",
    "wakeful.kernel.logging",
)

# Optional parts, imported only when the config asks for them: model SDKs, MCP, the
# embeddings' numpy, tracing, chat platforms' and e-mail's libraries, Redis.
OPTIONAL = (
    "openai",
    "anthropic",
    "mcp",
    "numpy",
    "opentelemetry",
    "markdown_it",
    "slixmpp",
    "nio",
    "websockets.asyncio",  # the Discord Gateway's client
    "json5",
    "redis",
    "imapclient",
    "aiosmtplib",
    "icalendar",
    "httpx",
    "prompt_toolkit",
    "wakeful.mcp.component",
    "wakeful.channels.email.component",
    "wakeful.channels.telegram.component",
    "wakeful.channels.slack.component",
    "wakeful.channels.matrix.component",
    "wakeful.channels.discord.component",
    "wakeful.channels.xmpp.component",
    "wakeful.store.redis_store",
    "wakeful.app.fleet",
    "wakeful.budget.component",
)


def loaded(code: str, prefixes: tuple[str, ...], env: dict[str, str] | None = None) -> list[str]:
    """The modules among ``prefixes`` (a name or a package) that ``code`` leaves imported."""
    probe = (
        f"{code}\nimport json, sys\nprefixes = {prefixes!r}\n"
        "print(json.dumps(sorted(m for m in sys.modules if any("
        "m == p or m.startswith(p + '.') for p in prefixes))))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    found: list[str] = json.loads(done.stdout.splitlines()[-1])
    return found


def test_a_client_command_imports_only_the_client() -> None:
    code = "import wakeful.cli.main as cli\ncli._parser()"
    assert loaded(code, NOT_FOR_A_CLIENT) == []


def test_status_imports_only_the_client(tmp_path: Path) -> None:
    """`wakeful status` itself, through its reading of the config, to its refusal (no
    daemon ran here: no token)."""
    config = tmp_path / "wakeful.toml"
    config.write_text(f'[daemon]\ndata_dir = "{tmp_path / "data"}"\n')
    code = (
        "import wakeful.cli.main as cli\n"
        f"assert cli.main(['-c', {str(config)!r}, 'status']) == 1"  # no admin token yet
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")}
    assert loaded(code, NOT_FOR_A_CLIENT, env) == []


def test_the_daemon_on_the_defaults_imports_no_optional_part(tmp_path: Path) -> None:
    """The daemon's modules and every component the embedded defaults run."""
    code = (
        "import wakeful.app.service\n"
        "from wakeful.app.components import default_components\n"
        "from wakeful.app.config import load_settings\n"
        "assert default_components(load_settings(None))"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")}
    env["WAKEFUL_DAEMON__DATA_DIR"] = str(tmp_path / "data")
    assert loaded(code, OPTIONAL, env) == []


def test_serving_switches_the_collector_on_again() -> None:
    """`wakeful run` pauses the collector for its start-up; serving resumes it (else the
    daemon would never collect a cycle), also when the heap was frozen before."""
    from wakeful.app.http.serve import freeze_startup_heap

    for _ in range(2):  # the heap is frozen once per process; the collector resumes each time
        gc.disable()
        try:
            freeze_startup_heap()
            assert gc.isenabled()
        finally:
            gc.enable()


# What serving on the defaults no longer imports (each measured with bench.startup_steps):
# a WebSocket library (the app has no WebSocket endpoint), fetch_url's HTML converter
# (imported at the first page fetched). uvicorn's __init__ still brings its command line
# (click) and structlog brings rich where it is installed: avoiding those would take
# patching the import system around third-party packages, which we do not.
NOT_ON_THE_DAEMON_PATH = (
    "websockets",
    "wsproto",
    "html.parser",
    "wakeful.tools.page_text",
)

# Runs the daemon's lifespan to READY (as bench/startup_steps.py does), then reports.
SERVE_TO_READY = """
import anyio
from wakeful.app import lifespan
from wakeful.app.config import load_settings

async def start():
    async with lifespan.running_daemon(load_settings(None)) as running:
        running.daemon.dispatcher.stopping = True

anyio.run(start)
"""


def daemon_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("WAKEFUL_")}
    env["WAKEFUL_DAEMON__DATA_DIR"] = str(tmp_path / "data")
    env["WAKEFUL_SERVER__BIND"] = "127.0.0.1:0"
    return env


def test_serving_on_the_defaults_imports_no_websockets_nor_page_converter(
    tmp_path: Path,
) -> None:
    assert loaded(SERVE_TO_READY, NOT_ON_THE_DAEMON_PATH, daemon_env(tmp_path)) == []
