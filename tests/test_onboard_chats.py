"""`wakeful onboard`'s Slack and Matrix accounts: each credential checked by the channel's
own client (Slack auth.test against the fake Slack Web API, Matrix whoami against a real
Synapse), a refused one is one line and nothing written, an accepted one lands in a
config that loads, its secrets only in their 0600 files; on a terminal and without one."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.model_server import FakeModelServer
from tests.fakes.slack_api import BOT_USER_ID, SIGNING_SECRET, FakeSlackApi
from tests.synapse_server import SynapseServer
from tests.test_onboard import MODEL_KEY, answer, clean_env, finished, onboard, spawn_onboard
from tests.test_onboard import transcript as said


@pytest.fixture
def slack() -> Iterator[FakeSlackApi]:
    with FakeSlackApi() as api:
        yield api


def model_env(home: Path, model_server: FakeModelServer, **extra: str) -> dict[str, str]:
    return clean_env(
        home,
        WAKEFUL_LLM__BASE_URL=model_server.base_url,
        WAKEFUL_LLM__MODEL="fake-model",
        OPENAI_API_KEY=MODEL_KEY,
        **extra,
    )


def test_slack_and_matrix_without_a_terminal(
    tmp_path: Path, model_server: FakeModelServer, slack: FakeSlackApi, synapse: SynapseServer
) -> None:
    bot = synapse.register()
    config = tmp_path / "conf" / "wakeful.toml"
    args = (
        "--non-interactive", "-c", str(config), "--data-dir", str(tmp_path / "data"),
        "--slack", "--slack-api", slack.api_base, "--slack-user", "U0123ABCDEF",
        "--matrix-homeserver", synapse.url, "--matrix-user", "@me:wakeful.test",
    )  # fmt: skip
    secrets = {"SLACK_SIGNING_SECRET": SIGNING_SECRET, "MATRIX_ACCESS_TOKEN": bot.access_token}
    wrong = onboard(
        model_env(tmp_path, model_server, SLACK_BOT_TOKEN="xoxb-wrong", **secrets), *args
    )
    assert wrong.returncode == 1
    assert wrong.stderr.strip() == (
        "wakeful: nothing written: Slack refused the token (Slack auth.test: invalid_auth)"
    )
    assert not config.exists()
    bad_matrix = {**secrets, "MATRIX_ACCESS_TOKEN": "syt_wrong_token"}
    env = model_env(tmp_path, model_server, SLACK_BOT_TOKEN=slack.token, **bad_matrix)
    refused = onboard(env, *args)
    assert refused.returncode == 1 and "refused the token (M_UNKNOWN_TOKEN" in refused.stderr
    assert not config.exists()

    done = onboard(model_env(tmp_path, model_server, SLACK_BOT_TOKEN=slack.token, **secrets), *args)
    assert done.returncode == 0, done.stderr
    assert f"ok   slack: {BOT_USER_ID} in wakeful test" in done.stdout
    assert f"ok   matrix: {bot.user_id}" in done.stdout
    from wakeful.app.config import load_settings

    loaded = load_settings(config)
    [work] = loaded.chat.slack
    [mx] = loaded.chat.matrix
    assert (work.api_base, work.allowed_user_ids) == (slack.api_base, ["U0123ABCDEF"])
    assert (mx.homeserver, mx.user_id, mx.allowed_users) == (
        synapse.url,
        bot.user_id,
        ["@me:wakeful.test"],
    )
    files = {work.bot_token_file: slack.token, work.signing_secret_file: SIGNING_SECRET}
    assert mx.access_token_file is not None
    files[mx.access_token_file] = bot.access_token
    for path, secret in files.items():
        assert path.read_text().strip() == secret
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert secret not in config.read_text() and secret not in done.stdout + done.stderr


def test_slack_and_matrix_on_a_terminal(
    tmp_path: Path, model_server: FakeModelServer, slack: FakeSlackApi, synapse: SynapseServer
) -> None:
    bot = synapse.register()
    config = tmp_path / "wakeful.toml"
    child = spawn_onboard(model_env(tmp_path, model_server), f"wakeful onboard -c {config}")
    answer(child, "Model server base URL [", "")
    answer(child, "Model name [fake-model]: ", "")
    answer(child, "(not shown) [the key in $OPENAI_API_KEY]: ", "")
    answer(child, "Data directory (events, conversations, the admin token) [", str(tmp_path / "d"))
    answer(child, "(HOST:PORT) [127.0.0.1:8787]: ", "")
    answer(child, "Add a chat app: telegram, slack, matrix or discord [none]: ", "irc")
    child.expect_exact("'irc' is not one of telegram, slack, matrix, discord, none")
    answer(child, "Add a chat app: telegram, slack, matrix or discord [none]: ", "slack")
    answer(child, "Slack Web API [https://slack.com/api]: ", slack.api_base)
    answer(child, "Bot User OAuth Token (xoxb-...) (not shown) [none]: ", "xoxb-wrong")
    child.expect_exact("failed: Slack refused the token (Slack auth.test: invalid_auth)")
    answer(child, "Bot User OAuth Token (xoxb-...) (not shown) [none]: ", slack.token)
    child.expect_exact(f"ok: the bot is {BOT_USER_ID} in wakeful test")
    answer(child, "(not shown) [none]: ", SIGNING_SECRET)
    answer(child, "Your Slack member id(s), comma-separated []: ", "U0123ABCDEF")
    answer(child, "Add a chat app: telegram, slack, matrix or discord [none]: ", "matrix")
    answer(child, "Homeserver URL (https://...) []: ", synapse.url)
    answer(child, "The account's access token (not shown) [none]: ", "syt_wrong_token")
    child.expect_exact("refused the token (M_UNKNOWN_TOKEN")
    answer(child, "The account's access token (not shown) [none]: ", bot.access_token)
    child.expect_exact(f"ok: logged in as {bot.user_id}")
    answer(child, "Matrix users it answers, comma-separated []: ", "@me:wakeful.test")
    answer(child, "Add a chat app: telegram, slack, matrix or discord [none]: ", "")
    answer(child, "Install and start the systemd user service? (y/n) [n]: ", "")
    assert finished(child) == 0, said(child)
    from wakeful.app.config import load_settings

    loaded = load_settings(config)
    assert [s.name for s in loaded.chat.slack] == ["work"]
    assert [(m.name, m.user_id) for m in loaded.chat.matrix] == [("mx", bot.user_id)]
    for secret in (slack.token, SIGNING_SECRET, bot.access_token, MODEL_KEY):
        assert secret not in said(child) and secret not in config.read_text()


def test_discord_without_a_terminal(tmp_path: Path, model_server: FakeModelServer) -> None:
    """The bot token from $DISCORD_BOT_TOKEN, asked of GET /users/@me (the fake Discord
    the channel's tests use): refused, nothing is written; accepted, a config that loads
    with the token only in its 0600 file."""
    from tests.fakes.discord_api import FakeDiscord

    config = tmp_path / "conf" / "wakeful.toml"
    with FakeDiscord() as discord:
        args = (
            "--non-interactive", "-c", str(config), "--data-dir", str(tmp_path / "data"),
            "--discord", "--discord-api", discord.api_base, "--discord-user", "80351110224678912",
        )  # fmt: skip
        wrong = onboard(model_env(tmp_path, model_server, DISCORD_BOT_TOKEN="MTA1wrong.t"), *args)
        assert wrong.returncode == 1
        assert wrong.stderr.strip() == (
            "wakeful: nothing written: Discord refused the token (HTTP 401: 401: Unauthorized)"
        )
        assert not config.exists()
        done = onboard(model_env(tmp_path, model_server, DISCORD_BOT_TOKEN=discord.token), *args)
    assert done.returncode == 0, done.stderr
    assert "ok   discord: wakeful" in done.stdout
    from wakeful.app.config import load_settings

    [dc] = load_settings(config).chat.discord
    assert (dc.name, dc.api_base, dc.allowed_user_ids) == (
        "dc",
        discord.api_base,
        ["80351110224678912"],
    )
    assert dc.bot_token_file.read_text().strip() == discord.token
    assert stat.S_IMODE(dc.bot_token_file.stat().st_mode) == 0o600
    assert discord.token not in config.read_text() + done.stdout + done.stderr


def test_discord_on_a_terminal(tmp_path: Path, model_server: FakeModelServer) -> None:
    from tests.fakes.discord_api import FakeDiscord

    config = tmp_path / "wakeful.toml"
    with FakeDiscord() as discord:
        child = spawn_onboard(model_env(tmp_path, model_server), f"wakeful onboard -c {config}")
        answer(child, "Model server base URL [", "")
        answer(child, "Model name [fake-model]: ", "")
        answer(child, "(not shown) [the key in $OPENAI_API_KEY]: ", "")
        answer(child, "(events, conversations, the admin token) [", str(tmp_path / "d"))
        answer(child, "(HOST:PORT) [127.0.0.1:8787]: ", "")
        answer(child, "Add a chat app: telegram, slack, matrix or discord [none]: ", "discord")
        answer(child, "Discord REST API [https://discord.com/api/v10]: ", discord.api_base)
        answer(child, "Bot token (Developer Portal, Bot page) (not shown) [none]: ", "MTA1wrong.t")
        child.expect_exact("failed: Discord refused the token (HTTP 401: 401: Unauthorized)")
        answer(child, "Bot token (Developer Portal, Bot page) (not shown) [none]: ", discord.token)
        child.expect_exact("ok: the bot is wakeful")
        question = "Your Discord user id(s), comma-separated (others get a pairing code) []: "
        answer(child, question, "me")
        child.expect_exact("failed: 'me' is not a Discord user id")
        answer(child, question, "80351110224678912")
        answer(child, "Add a chat app: telegram, slack, matrix or discord [none]: ", "")
        answer(child, "Install and start the systemd user service? (y/n) [n]: ", "")
        assert finished(child) == 0, said(child)
    from wakeful.app.config import load_settings

    [dc] = load_settings(config).chat.discord
    assert (dc.api_base, dc.allowed_user_ids) == (discord.api_base, ["80351110224678912"])
    assert dc.bot_token_file.read_text().strip() == discord.token
    assert discord.token not in said(child) + config.read_text()
