"""`wakeful onboard` as a person meets it: on a real pty at 80 columns, from nothing to a
config `wakeful run` starts with as it is, answering on the web API and on Telegram;
wrong keys refused live and asked again; no secret in the terminal, the config or the
daemon's log (only in the 0600 files); non-interactive from the environment alone;
refusals; run again on an existing config."""

from __future__ import annotations

import io
import os
import shlex
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pexpect
import pyte
import pytest

from tests.daemon_process import DaemonProcess, free_port
from tests.fakes.model_replies import Reply
from tests.fakes.model_server import FakeModelServer
from tests.fakes.telegram_api import FakeTelegramApi
from tests.matrix_daemon import wait_until
from tests.test_documented_commands import shell_lines

ROWS, COLUMNS = 200, 80
MODEL_KEY = "sk-onboard-right-key-0123456789abcdef"
WRONG_KEY = "sk-onboard-wrong-key-9876543210fedcba"
WRONG_BOT_TOKEN = "999999:wrong-telegram-bot-token-XYZxyz"
OWNER = 42
GUIDE = shell_lines(Path(__file__).parents[1] / "docs" / "onboarding.md")


@pytest.fixture
def telegram() -> Iterator[FakeTelegramApi]:
    with FakeTelegramApi() as api:
        yield api


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    """This process's environment without wakeful's own settings or keys; the user's
    directories in the test's scratch space."""
    drop = ("WAKEFUL_", "OPENAI_", "TELEGRAM_", "SLACK_", "MATRIX_", "STATE_DIRECTORY")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.pop("CREDENTIALS_DIRECTORY", None)
    return {
        **env,
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        **extra,
    }


def spawn_onboard(env: dict[str, str], line: str) -> pexpect.spawn:
    """A command line on a pty at 80 columns, through bash, this install's `wakeful` first
    on PATH (as the guide's lines are typed)."""
    child = pexpect.spawn(
        "bash",
        ["-c", line],
        env=with_wakeful({**env, "TERM": "xterm"}),
        encoding="utf-8",
        timeout=20,
        dimensions=(ROWS, COLUMNS),
    )
    child.logfile_read = io.StringIO()
    return child


def with_wakeful(env: dict[str, str]) -> dict[str, str]:
    return {**env, "PATH": f"{Path(sys.executable).parent}:{env['PATH']}"}


def transcript(child: pexpect.spawn) -> str:
    log = child.logfile_read
    assert isinstance(log, io.StringIO)
    return log.getvalue()


def screen(child: pexpect.spawn) -> list[str]:
    shown = pyte.Screen(COLUMNS, ROWS)
    pyte.Stream(shown).feed(transcript(child))
    return [line.rstrip() for line in shown.display if line.strip()]


def answer(child: pexpect.spawn, prompt: str, text: str) -> None:
    child.expect_exact(prompt)
    child.sendline(text)


def finished(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None, transcript(child)
    return child.exitstatus


def test_onboard_on_a_terminal_to_a_daemon_answering_on_the_web_and_telegram(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    model_server.api_key = MODEL_KEY
    home = tmp_path / "home"
    config = home / ".config" / "wakeful" / "wakeful.toml"  # the first default location
    port = free_port()
    assert GUIDE[0] == "wakeful onboard"
    child = spawn_onboard(clean_env(home), GUIDE[0])
    answer(child, "Model server base URL [https://api.openai.com/v1]: ", model_server.base_url)
    answer(child, "Model name [gpt-4.1-mini]: ", "fake-model")
    answer(child, "(not shown) [none]: ", WRONG_KEY)
    child.expect_exact("the key was refused (HTTP 401)")
    answer(child, f"Model server base URL [{model_server.base_url}]: ", "")  # asked again
    answer(child, "Model name [fake-model]: ", "")
    answer(child, "(not shown) [the one just typed]: ", MODEL_KEY)
    child.expect_exact("ok: 'fake-model' at")
    # The daemon's default is offered (as root /var/lib/wakeful, outside the test's
    # directory: so a directory of its own is typed; test_a_default_data_dir_is_offered).
    state = tmp_path / "state"
    answer(child, "Data directory (events, conversations, the admin token) [", str(state))
    answer(child, "(HOST:PORT) [127.0.0.1:8787]: ", "localhost")
    child.expect_exact("must be HOST:PORT")
    answer(child, "(HOST:PORT) [127.0.0.1:8787]: ", f"127.0.0.1:{port}")
    answer(child, "Add a chat app: telegram, slack, matrix or discord [none]: ", "telegram")
    answer(child, "Telegram Bot API server [https://api.telegram.org]: ", telegram.base_url)
    answer(child, "Bot token from @BotFather (not shown) [none]: ", WRONG_BOT_TOKEN)
    child.expect_exact("failed: Telegram refused the token (getMe: 401 Unauthorized)")
    answer(child, "Bot token from @BotFather (not shown) [none]: ", telegram.token)
    child.expect_exact("ok: the bot is @wakeful_bot")
    answer(child, "others get a pairing code) []: ", str(OWNER))
    answer(child, "Add a chat app: telegram, slack, matrix or discord [none]: ", "")
    answer(child, "Install and start the systemd user service? (y/n) [n]: ", "")
    assert finished(child) == 0, transcript(child)
    lines = screen(child)
    said = transcript(child).replace("\r\n", "\n")  # long paths wrap on the screen
    assert f"\nwrote {config}\n" in said
    assert f"\nstart the daemon: wakeful run -c {config}\n" in said
    # Each failure was one line, said once.
    assert sum("failed:" in line for line in lines) == 3, lines

    secrets = {MODEL_KEY: "model-api-key", telegram.token: "telegram-tg-bot-token"}
    for secret, name in secrets.items():
        path = config.parent / name
        assert path.read_text().strip() == secret
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for secret in [*secrets, WRONG_KEY, WRONG_BOT_TOKEN]:
        assert secret not in transcript(child)  # typed without echo, never printed
        assert secret not in config.read_text()

    # The config as written, started as it is (the directory is the daemon's from here).
    model_server.push(Reply(text="hello from the web"), Reply(text="hello on telegram"))
    with DaemonProcess(config, port) as daemon:
        token = (state / "admin-token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        url = f"http://127.0.0.1:{port}"
        sent = httpx.post(
            f"{url}/api/messages", json={"session": "main", "text": "hi"}, headers=headers
        )
        assert sent.status_code == 202, sent.text
        wait_until(lambda: said_last(url, headers, "hello from the web"), "the web's reply")
        telegram.user_says(OWNER, "hi there")
        [reply] = telegram.wait_for_sent(1, timeout_s=20)
        assert reply.chat_id == OWNER and "hello on telegram" in reply.visible
        link = subprocess.run(
            [sys.executable, "-m", "wakeful", "open", "--no-browser", "-c", str(config)],
            env=clean_env(home),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert link.stdout.startswith(f"{url}/login?code="), link.stderr
        assert httpx.get(link.stdout.strip()).status_code == 303  # the page logs in
        log = "\n".join(daemon.lines)
    for secret in [*secrets, token]:
        assert secret not in log
        assert secret not in link.stdout + link.stderr


def said_last(url: str, headers: dict[str, str], text: str) -> bool | None:
    """Is ``text`` the last message of session main's conversation (None: not yet)?"""
    answer = httpx.get(f"{url}/api/sessions/main/trajectory", headers=headers)
    messages = answer.json()["messages"]
    return True if messages and messages[-1].get("content") == text else None


def onboard(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`wakeful onboard ARGS` without a terminal (stdin is /dev/null), as a script runs it."""
    return as_written(shlex.join(["wakeful", "onboard", *args]), env)


def as_written(line: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A command line through bash, no terminal, this install's `wakeful` first on PATH."""
    return subprocess.run(
        ["bash", "-c", line],
        env=with_wakeful(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_non_interactive_from_the_environment_alone_then_run_without_it(
    tmp_path: Path, model_server: FakeModelServer
) -> None:
    model_server.api_key = MODEL_KEY
    home, port = tmp_path / "home", free_port()
    env = clean_env(
        home,
        WAKEFUL_LLM__BASE_URL=model_server.base_url,
        WAKEFUL_DAEMON__DATA_DIR=str(tmp_path / "data"),
        WAKEFUL_SERVER__BIND=f"127.0.0.1:{port}",
        OPENAI_API_KEY=MODEL_KEY,
    )
    # The guide's line as written: the model in it, the rest in the environment.
    assert GUIDE[1] == "WAKEFUL_LLM__MODEL=gpt-4.1-mini wakeful onboard --non-interactive"
    done = as_written(GUIDE[1], env)
    assert done.returncode == 0, done.stderr
    config = home / ".config" / "wakeful" / "wakeful.toml"
    assert f"wrote {config}" in done.stdout
    assert MODEL_KEY not in done.stdout + done.stderr + config.read_text()
    assert (config.parent / "model-api-key").read_text().strip() == MODEL_KEY
    # `wakeful run` with none of that environment: everything is in the files.
    for name in list(os.environ):
        if name.startswith(("WAKEFUL_", "OPENAI_")):
            pytest.fail(f"the test's own environment sets {name}")
    model_server.push(Reply(text="configured by the environment"))
    with DaemonProcess(config, port) as daemon:
        token = (tmp_path / "data" / "admin-token").read_text().strip()
        headers = {"Authorization": f"Bearer {token}"}
        sent = httpx.post(
            f"{daemon.url}/api/messages", json={"session": "main", "text": "hi"}, headers=headers
        )
        assert sent.status_code == 202
        wait_until(lambda: said_last(daemon.url, headers, "configured by the environment"), "reply")
        assert MODEL_KEY not in "\n".join(daemon.lines)
    assert model_server.requests[-1].headers["authorization"] == f"Bearer {MODEL_KEY}"


def test_flags_win_over_the_environment(tmp_path: Path, model_server: FakeModelServer) -> None:
    env = clean_env(
        tmp_path / "home",
        WAKEFUL_LLM__BASE_URL="http://127.0.0.1:9/v1",  # nothing listens: the flag must win
        WAKEFUL_LLM__MODEL="from-env",
        WAKEFUL_SERVER__BIND="127.0.0.1:1111",
    )
    config = tmp_path / "flags.toml"
    done = onboard(
        env,
        "--non-interactive",
        "-c",
        str(config),
        "--base-url",
        model_server.base_url,
        "--bind",
        "127.0.0.1:2222",
        "--data-dir",
        str(tmp_path / "data"),
    )
    assert done.returncode == 0, done.stderr
    from wakeful.app.config import load_settings

    settings = load_settings(config)
    assert settings.llm.base_url == model_server.base_url
    assert settings.llm.model == "from-env"  # no flag: the environment's
    assert settings.server.bind == "127.0.0.1:2222"
    assert settings.llm.api_key_env == "OPENAI_API_KEY"  # no key given: the template's


def test_a_missing_input_is_exit_2_naming_it(tmp_path: Path) -> None:
    done = onboard(clean_env(tmp_path / "home"), "--non-interactive", "-c", str(tmp_path / "c"))
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "wakeful: onboard --non-interactive needs the model: --model NAME or WAKEFUL_LLM__MODEL"
    ]
    assert not (tmp_path / "c").exists()
    telegram = onboard(
        clean_env(tmp_path / "home", WAKEFUL_LLM__MODEL="m"),
        "--non-interactive",
        "--telegram",
        "-c",
        str(tmp_path / "c"),
    )
    assert telegram.returncode == 2
    assert "needs $TELEGRAM_BOT_TOKEN" in telegram.stderr


def test_without_a_terminal_it_asks_for_non_interactive(tmp_path: Path) -> None:
    done = onboard(clean_env(tmp_path / "home"), "-c", str(tmp_path / "c"))
    assert done.returncode == 2
    assert "--non-interactive" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_a_wrong_key_writes_nothing(tmp_path: Path, model_server: FakeModelServer) -> None:
    model_server.api_key = MODEL_KEY
    env = clean_env(tmp_path / "home", OPENAI_API_KEY=WRONG_KEY)
    config = tmp_path / "c.toml"
    done = onboard(
        env, "--non-interactive", "-c", str(config), "--base-url", model_server.base_url,
        "--model", "fake-model", "--data-dir", str(tmp_path / "data"),
    )  # fmt: skip
    assert done.returncode == 1
    assert "the key was refused (HTTP 401)" in done.stderr
    assert WRONG_KEY not in done.stdout + done.stderr
    assert not config.exists() and not (tmp_path / "model-api-key").exists()


def test_onboard_again_keeps_or_replaces_only_when_told(
    tmp_path: Path, model_server: FakeModelServer, telegram: FakeTelegramApi
) -> None:
    model_server.api_key = MODEL_KEY
    home = tmp_path / "home"
    config = tmp_path / "etc" / "wakeful.toml"
    first = onboard(
        clean_env(home, OPENAI_API_KEY=MODEL_KEY, TELEGRAM_BOT_TOKEN=telegram.token),
        "--non-interactive", "-c", str(config), "--base-url", model_server.base_url,
        "--model", "fake-model", "--data-dir", str(tmp_path / "data"), "--telegram",
        "--telegram-api", telegram.base_url, "--telegram-user", str(OWNER),
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    written = config.read_text()
    # Non-interactive: refused without --force, the file untouched.
    again = onboard(clean_env(home, WAKEFUL_LLM__MODEL="m"), "--non-interactive", "-c", str(config))
    assert again.returncode == 1 and "--force replaces it" in again.stderr
    assert config.read_text() == written
    # On a terminal: the default is no.
    child = spawn_onboard(clean_env(home), f"wakeful onboard -c {config}")
    answer(child, f"{config} exists. Replace it? (y/n) [n]: ", "")
    assert finished(child) == 1
    assert config.read_text() == written
    # Yes: every default is the current config's, its key and its bot kept as they are.
    child = spawn_onboard(clean_env(home), f"wakeful onboard -c {config}")
    answer(child, "Replace it? (y/n) [n]: ", "y")
    answer(child, f"Model server base URL [{model_server.base_url}]: ", "")
    answer(child, "Model name [fake-model]: ", "")
    key_file = config.parent / "model-api-key"
    answer(child, f"(not shown) [the key in {key_file}]: ", "")
    answer(child, f"[{tmp_path / 'data'}]: ", "")
    answer(child, "(HOST:PORT) [127.0.0.1:8787]: ", "127.0.0.1:8788")
    answer(child, "Keep telegram account 'tg'? (y/n) [y]: ", "")
    answer(child, "Add a chat app: telegram, slack, matrix or discord [none]: ", "")
    answer(child, "Install and start the systemd user service? (y/n) [n]: ", "n")
    assert finished(child) == 0, transcript(child)
    from wakeful.app.config import load_settings

    settings = load_settings(config)
    assert settings.server.bind == "127.0.0.1:8788"
    assert settings.llm.resolve_api_key() == MODEL_KEY
    [bot] = settings.chat.telegram
    assert (bot.name, bot.api_base, bot.allowed_user_ids) == ("tg", telegram.base_url, [OWNER])
    assert bot.bot_token_file.read_text().strip() == telegram.token
    assert MODEL_KEY not in transcript(child) and telegram.token not in transcript(child)


@pytest.fixture
def systemctl(tmp_path: Path) -> Iterator[Path]:
    """A `systemctl` on PATH (tests/fake_systemctl.py); the unit it starts is stopped after."""
    record = tmp_path / "systemctl"
    (record / "bin").mkdir(parents=True)
    script = record / "bin" / "systemctl"
    root = Path(__file__).resolve().parent.parent
    script.write_text(
        f'#!/bin/sh\ncd {root} && exec {sys.executable} -m tests.fake_systemctl "$@"\n'
    )
    script.chmod(0o755)
    yield record
    pid_file = record / "unit.pid"
    if pid_file.exists():
        pid = int(pid_file.read_text())
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        wait_until(lambda: not Path(f"/proc/{pid}").exists() or None, "the unit's stop")


def test_systemd_user_unit_is_installed_started_and_the_page_link_printed(
    tmp_path: Path, model_server: FakeModelServer, systemctl: Path
) -> None:
    home, port = tmp_path / "home", free_port()
    env = clean_env(
        home,
        PATH=f"{systemctl / 'bin'}:{os.environ['PATH']}",
        FAKE_SYSTEMCTL_DIR=str(systemctl),
        OPENAI_API_KEY=MODEL_KEY,
        WAKEFUL_LLM__BASE_URL=model_server.base_url,
        WAKEFUL_LLM__MODEL="fake-model",
        WAKEFUL_SERVER__BIND=f"127.0.0.1:{port}",
        WAKEFUL_DAEMON__DATA_DIR=str(tmp_path / "data"),
    )
    assert GUIDE[2] == "wakeful onboard --non-interactive --systemd"
    done = as_written(GUIDE[2], env)
    assert done.returncode == 0, done.stdout + done.stderr + (systemctl / "unit.log").read_text()
    config = home / ".config" / "wakeful" / "wakeful.toml"
    assert (systemctl / "calls.txt").read_text().splitlines() == [
        "--user daemon-reload",
        "--user enable --now wakeful.service",
    ]
    # The shipped unit, only its command and config (and docs) put in.
    installed = (home / ".config" / "systemd" / "user" / "wakeful.service").read_text()
    shipped = (Path(__file__).parents[1] / "deploy" / "user" / "wakeful.service").read_text()
    changed = [
        (old, new)
        for old, new in zip(shipped.splitlines(), installed.splitlines(), strict=True)
        if old != new
    ]
    wakeful = Path(sys.executable).with_name("wakeful")
    assert [new for _old, new in changed] == [
        f"Documentation=file:{sys.prefix}/share/doc/wakeful/operations.md",
        f"ExecStart={wakeful} run -c {config}",
    ]
    [link] = [line for line in done.stdout.splitlines() if "/login?code=" in line]
    url = link.split(": ", 1)[1]
    assert url.startswith(f"http://127.0.0.1:{port}/login?code=")
    assert httpx.get(url).status_code == 303  # the one-time code logs the page in
    token = (tmp_path / "data" / "admin-token").read_text().strip()
    assert token not in done.stdout + done.stderr and MODEL_KEY not in done.stdout


def test_a_systemctl_that_fails_is_one_line_and_the_way_to_start_by_hand(
    tmp_path: Path, model_server: FakeModelServer, systemctl: Path
) -> None:
    env = clean_env(
        tmp_path / "home",
        PATH=f"{systemctl / 'bin'}:{os.environ['PATH']}",
        FAKE_SYSTEMCTL_DIR=str(systemctl),
        FAKE_SYSTEMCTL_FAIL="1",
    )
    config = tmp_path / "c.toml"
    done = onboard(
        env, "--non-interactive", "--systemd", "-c", str(config), "--base-url",
        model_server.base_url, "--model", "fake-model", "--data-dir", str(tmp_path / "data"),
    )  # fmt: skip
    assert done.returncode == 1
    assert (
        "the service was not started: systemctl --user daemon-reload failed: Failed to connect "
        "to bus: No medium found"
    ) in done.stdout
    assert f"start the daemon yourself: wakeful run -c {config}" in done.stdout
    assert config.is_file()  # the config stays: it is right, only the service is not


def test_the_guides_chat_entry_is_what_onboard_writes(tmp_path: Path) -> None:
    """docs/onboarding.md's [[chat.telegram]] example, as written, is onboard's own output
    for those answers, and loads."""
    from wakeful.app.config import load_settings
    from wakeful.cli.onboard_config import Answers, ChatAccount, render

    guide = (Path(__file__).parents[1] / "docs" / "onboarding.md").read_text()
    example = guide.split("```toml\n", 1)[1].split("```", 1)[0]
    bot = ChatAccount(
        "telegram", "tg", {"allowed_user_ids": [123456789]}, {"bot_token_file": "t"},
        "@my_wakeful_bot",
    )  # fmt: skip
    answers = Answers("https://api.openai.com/v1", "m", None, tmp_path, "127.0.0.1:8787", [bot])
    assert example in render(Path("/home/me/.config/wakeful/wakeful.toml"), answers)
    path = tmp_path / "wakeful.toml"
    path.write_text(example)
    [entry] = load_settings(path).chat.telegram
    assert entry.allowed_user_ids == [123456789]


def test_the_help_shows_every_option_the_guide_and_the_readme_row_name() -> None:
    done = as_written("wakeful onboard --help", clean_env(Path("/nonexistent")))
    assert done.returncode == 0
    for option in (
        "--non-interactive", "--force", "--base-url", "--model", "--data-dir", "--bind",
        "--telegram", "--telegram-user", "--telegram-api", "--slack", "--slack-user",
        "--slack-api", "--matrix-homeserver", "--matrix-user", "--systemd", "--no-check", "-c",
    ):  # fmt: skip
        assert f"{option} " in done.stdout or f"{option}\n" in done.stdout, option


def test_no_check_writes_without_reaching_anything_but_matrix_needs_its_check(
    tmp_path: Path,
) -> None:
    env = clean_env(
        tmp_path / "home",
        WAKEFUL_LLM__BASE_URL="http://127.0.0.1:9/v1",
        MATRIX_ACCESS_TOKEN="syt_offline_token",
    )
    config = tmp_path / "offline.toml"
    common = ("--non-interactive", "--no-check", "--model", "m", "--data-dir", str(tmp_path / "d"))
    matrix = onboard(env, *common, "-c", str(config), "--matrix-homeserver", "https://m.example")
    assert matrix.returncode == 2 and "drop --no-check" in matrix.stderr
    assert not config.exists()
    done = onboard(env, *common, "-c", str(config))  # nothing listens at the base URL
    assert done.returncode == 0, done.stderr
    assert "ok   model" not in done.stdout and config.is_file()


def test_a_broken_config_being_replaced_offers_the_defaults(tmp_path: Path) -> None:
    config = tmp_path / "wakeful.toml"
    config.write_text("[llm\n")
    child = spawn_onboard(clean_env(tmp_path / "home"), f"wakeful onboard -c {config}")
    answer(child, "Replace it? (y/n) [n]: ", "y")
    child.expect_exact("is not valid TOML")
    child.expect_exact("Model server base URL [https://api.openai.com/v1]: ")
    child.sendcontrol("c")
    assert finished(child) != 0
    assert config.read_text() == "[llm\n"  # stopped: nothing written
