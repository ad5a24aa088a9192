"""`wakeful import openclaw DIR` (issue 25): an OpenClaw-shaped directory imports, and a
real `wakeful run` on the result uses it: the Telegram bot answers the owner (the fake
Bot API), the model endpoint and its key are the ones OpenClaw used, AGENTS.md and
SOUL.md are standing instructions, the skill is listed, the memory is found by
memory_search (as third-party data until reviewed, the default) or is in the digest
(--trust-memory). Secrets never reach the report or the config; odd inputs end in a
report or one line, never a traceback."""

from __future__ import annotations

import contextlib
import io
import json
import os
import stat
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.daemon_harness import ADMIN_TOKEN
from tests.daemon_process import DaemonProcess, free_port
from tests.fakes.model_replies import ToolCallSpec
from tests.fakes.model_server import FakeModelServer, Reply
from tests.fakes.telegram_api import FakeTelegramApi
from tests.openclaw_dirs import (
    API_KEY,
    FACTS,
    INSTRUCTION,
    NOTE,
    OWNER,
    PERSONA,
    SKILL_DESCRIPTION,
    openclaw_dir,
)
from wakeful.app.config import load_settings
from wakeful.app.openclaw.data_plan import memory_lines, pieces
from wakeful.cli import main as cli
from wakeful.kernel.config_files import toml_string


@pytest.fixture
def telegram() -> Iterator[FakeTelegramApi]:
    with FakeTelegramApi() as fake:
        yield fake


def run_import(*args: str) -> subprocess.CompletedProcess[str]:
    """The real command line, in a child process, as the owner would run it; always with
    --data-dir (the default, for root /var/lib/wakeful, is the host's)."""
    assert "--data-dir" in args
    return subprocess.run(
        [sys.executable, "-m", "wakeful", "import", "openclaw", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def for_this_test(config: Path, port: int) -> None:
    """What only a test needs, added to the imported config: its own port and a known
    admin token (tests run side by side), no sandbox (it hides the test's directory) and
    no host resource alerts (they depend on the machine). Nothing the import wrote changes."""
    with config.open("a", encoding="utf-8") as file:
        file.write(
            f'\n[server]\nbind = "127.0.0.1:{port}"\nadmin_token = "{ADMIN_TOKEN}"\n'
            '[safety]\nsandbox = "none"\n[system]\nenabled = false\n'
        )


def system_prompt(body: dict[str, Any]) -> str:
    return str(body["messages"][0]["content"])


def tool_results(body: dict[str, Any]) -> list[str]:
    return [str(m["content"]) for m in body["messages"] if m.get("role") == "tool"]


def memory_listing(daemon: DaemonProcess) -> dict[str, Any]:
    with daemon.client() as client:
        listing: dict[str, Any] = client.get("/api/memory").raise_for_status().json()
    return listing


def test_an_openclaw_directory_imports_and_the_daemon_runs_on_it(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """The defaults: memory waits for review. The owner asks on Telegram; the model looks in
    memory and finds the imported fact, quoted as third-party data; the answer reaches
    the owner's Telegram chat."""
    source = openclaw_dir(
        tmp_path,
        model_url=model_server.base_url,
        telegram_token=telegram.token,
        telegram_url=telegram.base_url,
    )
    config, data = tmp_path / "wakeful" / "wakeful.toml", tmp_path / "wakeful" / "data"
    done = run_import(str(source), "--path", str(config), "--data-dir", str(data))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 not carried over" in done.stdout.splitlines()[-2]
    written = config.read_text()
    for secret in (API_KEY, telegram.token):
        assert secret not in done.stdout + done.stderr and secret not in written
    secret_files = [Path(v) for v in _file_keys(tomllib.loads(written))]
    assert {p.name for p in secret_files} == {"llm-api-key", "telegram-default-token"}
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in secret_files)

    port = free_port()
    for_this_test(config, port)
    model_server.push(
        Reply(tool_calls=[ToolCallSpec("memory_search", {"query": "dentist"})]),
        Reply(text="Tuesdays, at Dr. Lee's."),
    )
    with DaemonProcess(config, port) as daemon:
        telegram.user_says(OWNER, "when is the dentist?")
        [sent] = telegram.wait_for_sent(1, timeout_s=30)
        listing = memory_listing(daemon)
        cli_out = subprocess.run(
            [sys.executable, "-m", "wakeful", "-c", str(config), "memory", "list"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert (sent.chat_id, sent.visible) == (OWNER, "Tuesdays, at Dr. Lee's.")
    first, second = (r for r in model_server.requests[:2])
    assert first.headers.get("authorization") == f"Bearer {API_KEY}"  # OpenClaw's key
    prompt = system_prompt(first.body)
    assert INSTRUCTION in prompt and PERSONA in prompt  # AGENTS.md and SOUL.md
    assert f"release-notes: {SKILL_DESCRIPTION}" in prompt  # the skill is listed
    assert all(fact not in prompt for fact in FACTS)  # waiting for review: not in the digest
    found = tool_results(second.body)[-1]
    assert "<untrusted_content" in found and FACTS[0] in found
    entries = listing["entries"]
    assert {e["text"] for e in entries} == {*FACTS, NOTE}
    assert listing["review"] == 3 and {e["status"] for e in entries} == {"review"}
    assert all(e["reason"].startswith("imported from openclaw workspace/") for e in entries)
    assert cli_out.returncode == 0 and "3 waiting for review" in cli_out.stdout


def test_trusted_memory_is_in_memory_and_the_digest(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    """--trust-memory (not the default, tested above: the owner vouches for the files)
    files the facts in MEMORY.md, the note under its own day, approved by the owner."""
    source = openclaw_dir(
        tmp_path,
        model_url=model_server.base_url,
        telegram_token=telegram.token,
        telegram_url=telegram.base_url,
    )
    config, data = tmp_path / "wakeful.toml", tmp_path / "data"
    done = run_import(str(source), "--path", str(config), "--data-dir", str(data), "--trust-memory")
    assert done.returncode == 0, done.stdout + done.stderr
    assert NOTE in (data / "memory" / "2026-11-02.md").read_text()
    assert not (data / "memory" / "review.md").exists()
    port = free_port()
    for_this_test(config, port)
    model_server.push(Reply(text="Hello."))
    with DaemonProcess(config, port) as daemon:
        daemon.send("hello")
        [request] = model_server.wait_for_requests(1, timeout_s=30)
        listing = memory_listing(daemon)
        # A running daemon's data is refused, even with --force, before anything is written.
        before = (data / "MEMORY.md").read_text()
        refused = run_import(str(source), "--path", str(config), "--data-dir", str(data), "--force")
    assert refused.returncode == 1 and refused.stdout == ""
    assert refused.stderr.count("\n") == 1 and "nothing was imported" in refused.stderr
    assert (data / "MEMORY.md").read_text() == before
    assert "[server]" in config.read_text()  # the config the test completed, untouched
    assert all(fact in system_prompt(request.body) for fact in FACTS)
    assert listing["review"] == 0 and {e["status"] for e in listing["entries"]} == {"approved"}


def _file_keys(config: dict[str, Any]) -> list[str]:
    found = [config["llm"]["api_key_file"]]
    for platform in config.get("chat", {}).values():
        for entry in platform:
            found += [v for k, v in entry.items() if k.endswith("_file")]
    return found


def test_the_report_says_what_could_not_be_carried_over_and_dry_run_writes_nothing(
    tmp_path: Path,
) -> None:
    source = openclaw_dir(
        tmp_path,
        model_url="http://127.0.0.1:9/v1",
        telegram_token="1:T",
        telegram_url="http://x",
        extra_config='gateway: { port: 18789, auth: { token: "gw-SECRET-token" } }, cron: {},',
        extra_channels="discord: { token: 'dc-SECRET' },",
    )
    (source / "workspace" / "BOOTSTRAP.md").write_text("First run ritual.\n")
    (source / "cron").mkdir()
    job = {"name": "Morning brief", "schedule": {"kind": "cron", "expr": "0 7 * * *"}}
    (source / "cron" / "jobs.json").write_text(json.dumps({"version": 1, "jobs": [job]}))
    out = tmp_path / "out"
    done = run_import(
        str(source), "--path", str(out / "wakeful.toml"), "--data-dir", str(out), "--dry-run"
    )
    assert done.returncode == 1, done.stdout + done.stderr  # partly: things left out
    lines = done.stdout.splitlines()
    assert "not carried over  channels.discord: wakeful has no discord channel" in lines
    assert any(line.startswith("not carried over  gateway: ") for line in lines)
    assert any(line.startswith("not carried over  cron: ") for line in lines)
    assert (
        "not carried over  cron/jobs.json 'Morning brief': 0 7 * * *: recreate it as a "
        "[[timers]] entry if you want it (a timer speaks for you)"
    ) in lines
    assert any(line.startswith("not carried over  workspace/BOOTSTRAP.md: ") for line in lines)
    assert any(line.startswith("changed           workspace/SOUL.md: ") for line in lines)
    assert "SECRET" not in done.stdout + done.stderr
    assert lines[-1].endswith("nothing written (--dry-run)")
    assert not out.exists()


def test_nothing_is_overwritten_without_force(tmp_path: Path) -> None:
    source = openclaw_dir(
        tmp_path, model_url="http://127.0.0.1:9/v1", telegram_token="1:T", telegram_url="http://x"
    )
    config, data = tmp_path / "wakeful.toml", tmp_path / "data"
    config.write_text("# mine\n")
    refused = run_import(str(source), "--path", str(config), "--data-dir", str(data))
    assert refused.returncode == 1
    assert refused.stderr.startswith(f"wakeful: {config} already exists")
    assert refused.stderr.count("\n") == 1 and refused.stdout == ""
    assert config.read_text() == "# mine\n" and not data.exists()
    forced = run_import(str(source), "--path", str(config), "--data-dir", str(data), "--force")
    assert forced.returncode == 0, forced.stderr
    assert load_settings(config).chat.telegram[0].allowed_user_ids == [OWNER]
    again = run_import(str(source), "--path", str(config), "--data-dir", str(data), "--force")
    assert again.returncode == 0, again.stderr
    # Memory is added to, never replaced: the second import's entries join the first's.
    review = (data / "memory" / "review.md").read_text()
    assert review.count(FACTS[0]) == 2


def test_the_workspace_given_instead_is_said_so(tmp_path: Path) -> None:
    source = openclaw_dir(
        tmp_path, model_url="http://127.0.0.1:9/v1", telegram_token="1:T", telegram_url="http://x"
    )
    done = run_import(
        str(source / "workspace"), "--path", str(tmp_path / "w.toml"), "--data-dir", str(tmp_path)
    )
    assert done.returncode == 2 and "looks like OpenClaw's workspace" in done.stderr
    named = run_import(
        str(source / "openclaw.json"),
        *("--path", str(tmp_path / "w.toml"), "--data-dir", str(tmp_path / "data")),
    )
    assert named.returncode == 0, named.stderr  # the config file named: its directory


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "has neither openclaw.json nor workspace/"),
        (b"{ agents: { ", "is not valid JSON5"),
        (b"\xff\xfe{}", "is not UTF-8 text"),
        (b"[1, 2]", "holds no JSON5 object"),
    ],
)
def test_a_directory_that_is_not_openclaws_is_one_line_and_exit_2(
    tmp_path: Path, content: bytes | None, expected: str
) -> None:
    source = tmp_path / "somewhere"
    source.mkdir()
    if content is not None:
        (source / "openclaw.json").write_bytes(content)
    done = run_import(
        str(source), "--path", str(tmp_path / "wakeful.toml"), "--data-dir", str(tmp_path / "d")
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and expected in done.stderr, done.stderr
    assert "expected" in done.stderr or "fix it" in done.stderr
    assert not (tmp_path / "wakeful.toml").exists()


def test_the_other_channels_and_a_heartbeat_map_onto_wakefuls(tmp_path: Path) -> None:
    """Slack with a signing secret, Matrix with a user id and token, two Telegram accounts,
    OpenClaw's heartbeat with its active hours: the written config loads as wakeful's."""
    root = tmp_path / ".openclaw"
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "HEARTBEAT.md").write_text("- Check the build.\n")
    (root / "openclaw.json").write_text(
        """{
  agents: { defaults: {
    model: "anthropic/claude-sonnet-4-5",
    userTimezone: "Europe/Berlin",
    heartbeat: { every: "2h", activeHours: { start: "08:00", end: "22:00" } },
  } },
  env: { ANTHROPIC_API_KEY: "sk-ant-SECRET" },
  channels: {
    telegram: { accounts: {
      Main: { botToken: "1:SECRET-a", allowFrom: ["111", "tg:222"] },
      "alerts bot": { botToken: "2:SECRET-b" },
    } },
    slack: { botToken: "xoxb-SECRET", signingSecret: "SECRET-sign", allowFrom: ["user:U0123ABCD"] },
    matrix: { homeserver: "https://matrix.example.org", userId: "@claw:example.org",
              accessToken: "syt_SECRET", allowFrom: ["@me:example.org"] },
  },
}"""
    )
    config = tmp_path / "wakeful.toml"
    done = run_import(str(root), "--path", str(config), "--data-dir", str(tmp_path / "d"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SECRET" not in done.stdout + config.read_text()
    loaded = load_settings(config)
    assert (loaded.llm.provider, loaded.llm.model) == ("anthropic", "claude-sonnet-4-5")
    assert loaded.llm.api_key_file is not None
    assert loaded.llm.api_key_file.read_text().strip() == "sk-ant-SECRET"
    assert [(t.name, t.allowed_user_ids) for t in loaded.chat.telegram] == [
        ("main", [111, 222]),
        ("alerts-bot", []),
    ]
    assert loaded.chat.slack[0].allowed_user_ids == ["U0123ABCD"]
    assert loaded.chat.slack[0].signing_secret_file.read_text().strip() == "SECRET-sign"
    assert loaded.chat.matrix[0].user_id == "@claw:example.org"
    assert loaded.chat.matrix[0].allowed_users == ["@me:example.org"]
    beat = loaded.heartbeat
    assert (beat.enabled, beat.every_minutes, beat.active_hours, beat.timezone) == (
        True,
        120,
        "08:00-22:00",
        "Europe/Berlin",
    )
    assert loaded.memory.timezone == "Europe/Berlin"
    assert (tmp_path / "d" / "workspace" / "HEARTBEAT.md").read_text() == "- Check the build.\n"


def test_the_importer_is_not_loaded_by_other_commands() -> None:
    """`wakeful status` and the rest start without the importer or its JSON5 parser."""
    code = (
        "import sys, wakeful.cli.main as m; m._parser(); "
        "print(sorted(n for n in sys.modules if n == 'json5' or n.startswith('wakeful.app')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- invariants ---------------------------------------------------------------------------


@given(st.text().filter(lambda t: not any(0xD800 <= ord(c) <= 0xDFFF for c in t)))
def test_any_text_reads_back_from_the_written_toml(text: str) -> None:
    assert tomllib.loads(f"key = {toml_string(text)}")["key"] == text


@given(st.text(), st.integers(min_value=1, max_value=50))
def test_pieces_keep_every_word_within_the_limit(text: str, limit: int) -> None:
    found = pieces(text, limit)
    assert all(0 < len(piece) <= limit for piece in found)
    assert "".join(found).replace(" ", "") == "".join(text.split())  # every character kept
    if all(len(word) <= limit for word in text.split()):
        assert " ".join(found) == " ".join(text.split())


@given(st.text())
def test_memory_lines_are_single_lines_that_say_something(text: str) -> None:
    for line, _heading in memory_lines(text):
        assert line.strip() and "\n" not in line and "\r" not in line


# --- odd inputs: a report or one line, never a traceback -------------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)
KEYS = ["botToken", "tokenFile", "allowFrom", "accounts", "enabled", "apiRoot", "signingSecret"]
KEYS += ["homeserver", "userId", "accessToken", "password", "dmPolicy", "webhookUrl"]
ACCOUNT = st.dictionaries(st.sampled_from(KEYS), JSON | st.text(max_size=30), max_size=5)
CONFIG = st.fixed_dictionaries(
    {},
    optional={
        "agents": st.fixed_dictionaries(
            {},
            optional={
                "defaults": st.dictionaries(
                    st.sampled_from(["model", "workspace", "heartbeat", "userTimezone", "models"]),
                    JSON | st.sampled_from(["openai/gpt-4.1", "x/y", "~/.openclaw/nope", "30m"]),
                    max_size=4,
                ),
                "list": JSON,
            },
        ),
        "channels": st.dictionaries(
            st.sampled_from(["telegram", "slack", "matrix", "discord", "defaults"]),
            ACCOUNT
            | st.fixed_dictionaries(
                {"accounts": st.dictionaries(st.text(max_size=6), ACCOUNT, max_size=2)}
            )
            | JSON,
            max_size=3,
        ),
        "models": JSON,
        "env": JSON,
        "skills": JSON,
        "gateway": JSON,
        "unknownKey": JSON,
    },
)
FILES = ["AGENTS.md", "SOUL.md", "MEMORY.md", "HEARTBEAT.md", "memory/2026-01-02.md"]
FILES += ["memory/notes.md", "skills/Odd Name/SKILL.md", "skills/ok/SKILL.md", "USER.md"]
FILES += ["skills/\x1b[2Jclear/SKILL.md", "memory/\x07.md"]  # a terminal escape in a name
CONTENT = st.binary(max_size=200) | st.text(max_size=200).map(str.encode)
SKILL = st.builds(
    lambda name, body: f"---\nname: {name}\ndescription: {body}\n---\n{body}\n".encode(),
    st.text(max_size=20),
    st.text(max_size=40),
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    config=CONFIG.map(lambda c: json.dumps(c).encode()) | st.binary(max_size=100),
    files=st.dictionaries(st.sampled_from(FILES), CONTENT | SKILL, max_size=6),
    secret=st.text(min_size=6, max_size=20).filter(str.strip),
)
def test_odd_inputs_end_in_a_report_or_one_line(
    tmp_path_factory: pytest.TempPathFactory, config: bytes, files: dict[str, bytes], secret: str
) -> None:
    home = tmp_path_factory.mktemp("odd")
    root = home / ".openclaw"
    (root / "workspace").mkdir(parents=True)
    marked = f"SECRET-{secret.strip()}"
    # A known secret in a place the importer reads: it must never be printed or written
    # into the config, whatever else the input holds.
    (root / "openclaw.json").write_bytes(
        config.replace(b'"botToken": "', b'"botToken": "' + json.dumps(marked)[1:-1].encode())
    )
    for name, content in files.items():
        path = root / "workspace" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    target = home / "wakeful.toml"
    argv = ["import", "openclaw", str(root), "--path", str(target), "--data-dir", str(home / "d")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(argv)  # an exception here is the traceback the owner would see
    printed = out.getvalue()
    assert code in (0, 1, 2), printed
    assert all(c == "\n" or c.isprintable() or c == " " for c in printed if ord(c) < 0xA0)
    assert marked not in printed
    if code == 2:
        assert printed.count("\n") == 1 and printed.startswith("wakeful: ")
        return
    if target.exists():
        text = target.read_text()
        assert marked not in text and toml_string(marked)[1:-1] not in text
        load_settings(target)  # the written config is one wakeful reads


def test_documented_commands_run_as_written(
    tmp_path: Path,
    model_server: FakeModelServer,
    telegram: FakeTelegramApi,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """docs/import.md's command lines, exactly as written, in a home holding ~/.openclaw;
    the port and data directory are moved by environment overrides (tests run side by
    side), the config is the one the import wrote in the current directory."""
    from tests.test_documented_commands import ROOT, shell_lines

    home = tmp_path / "home"
    openclaw_dir(
        home,
        model_url=model_server.base_url,
        telegram_token=telegram.token,
        telegram_url=telegram.base_url,
    )
    port = free_port()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("WAKEFUL_SERVER__BIND", f"127.0.0.1:{port}")
    monkeypatch.setenv("WAKEFUL_DAEMON__DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("WAKEFUL_SAFETY__SANDBOX", "none")
    monkeypatch.delenv("WAKEFUL_CONFIG", raising=False)
    monkeypatch.chdir(home)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    lines = shell_lines(ROOT / "docs" / "import.md")
    assert lines, "docs/import.md has no command lines"
    daemon: DaemonProcess | None = None
    try:
        for line in lines:
            if line.startswith("wakeful memory") and daemon is None:
                daemon = DaemonProcess(home / "wakeful.toml", port).start()
            done = subprocess.run(
                ["bash", "-c", line], cwd=home, env=env, capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, f"{line}: {done.stdout}{done.stderr}"
    finally:
        if daemon is not None:
            daemon.stop()
    assert (home / "wakeful.toml").is_file()


def import_in_process(argv: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = cli.main(["import", "openclaw", *argv])
    return code, out.getvalue()


def test_secrets_given_as_environment_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`${VAR}` for a bot token is read at the import (wakeful's chat keys are files); for
    the model it stays a variable; a variable the config's own `env` sets becomes a file;
    a bot whose variable is not set is left out, said so."""
    monkeypatch.setenv("MAIN_BOT_TOKEN", "9:SECRET-from-env")
    monkeypatch.delenv("OTHER_BOT_TOKEN", raising=False)
    root = tmp_path / ".openclaw"
    root.mkdir()
    (root / "openclaw.json").write_text(
        """{
  agents: { defaults: { model: "openai/gpt-4.1-mini" } },
  channels: { telegram: { accounts: {
    main: { botToken: "${MAIN_BOT_TOKEN}" },
    other: { botToken: { source: "env", provider: "default", id: "OTHER_BOT_TOKEN" } },
  } } },
}"""
    )
    config = tmp_path / "wakeful.toml"
    code, out = import_in_process([str(root), "--path", str(config), "--data-dir", str(tmp_path)])
    assert code == 1, out
    assert "SECRET" not in out + config.read_text()
    loaded = load_settings(config)
    assert (loaded.llm.model, loaded.llm.api_key_env, loaded.llm.api_key_file) == (
        "gpt-4.1-mini",
        "OPENAI_API_KEY",
        None,
    )
    [bot] = loaded.chat.telegram
    assert bot.name == "main" and bot.bot_token_file.read_text() == "9:SECRET-from-env\n"
    assert (
        "not carried over  channels.telegram.accounts.other: no bot token (botToken, "
        "tokenFile): it is ${OTHER_BOT_TOKEN}, which is not set here"
    ) in out.splitlines()

    (root / "openclaw.json").write_text(
        '{ agents: { defaults: { model: "openai/gpt-4.1" } },\n'
        '  env: { OPENAI_API_KEY: "sk-SECRET" } }'
    )
    code, out = import_in_process(
        [str(root), "--path", str(config), "--data-dir", str(tmp_path), "--force"]
    )
    assert code == 0 and "SECRET" not in out + config.read_text(), out
    key_file = load_settings(config).llm.api_key_file
    assert key_file is not None and key_file.read_text() == "sk-SECRET\n"


def test_without_the_json5_extra_the_command_says_how_to_install_it(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['json5'] = None; "  # as if `wakeful[openclaw]` was not installed
        "from wakeful.cli.main import main; "
        f"sys.exit(main(['import', 'openclaw', {str(tmp_path)!r}, "
        f"'--data-dir', {str(tmp_path)!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == (
        "wakeful: the importer needs json5: pip install 'wakeful[openclaw]'\n"
    ), done.stderr
