"""[[chat.telegram]] mistakes: one line that names the key and the fix, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon_process import free_port, run_to_exit, write_config
from tests.fakes.telegram_api import TOKEN
from tests.support.chat_config import toml_table
from wakeful.channels.telegram.component import read_secrets
from wakeful.channels.telegram.config import TelegramConfig
from wakeful.kernel.config_base import ConfigError


def config_with_bot(tmp_path: Path, **entry: object) -> Path:
    config = write_config(tmp_path / "data", None, free_port())
    with config.open("a") as handle:
        handle.write(toml_table("chat.telegram", {"name": "tg", **entry}))
    return config


@pytest.mark.parametrize(
    ("entry", "names"),
    [
        ({"bot_token_file": "/nonexistent/telegram-token"}, "'tg'.bot_token_file"),
        ({"bot_token_file": "/x", "mode": "webhook"}, "public_url"),
        ({"bot_token_file": "/x", "mode": "push"}, "mode"),
        ({"bot_token_file": "/x", "api_base": "api.telegram.org"}, "http://"),
    ],
)
def test_a_bad_entry_stops_start_up_with_one_clear_line(
    tmp_path: Path, entry: dict[str, object], names: str
) -> None:
    """`wakeful run` exits non-zero, saying which key is wrong; no traceback, no token."""
    result = run_to_exit(config_with_bot(tmp_path, **entry))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert names in output and "chat.telegram" in output
    assert "Traceback" not in output


def test_a_webhook_secret_telegram_would_refuse_is_caught_at_start(tmp_path: Path) -> None:
    """setWebhook takes 1-256 of A-Z a-z 0-9 _ -: anything else fails here, not at Telegram."""
    (tmp_path / "token").write_text(TOKEN)
    (tmp_path / "secret").write_text("has spaces and ! marks\n")
    config = TelegramConfig(
        name="tg",
        bot_token_file=tmp_path / "token",
        mode="webhook",
        public_url="https://bot.example.com/",
        secret_token_file=tmp_path / "secret",
    )
    assert config.public_url == "https://bot.example.com"
    with pytest.raises(ConfigError, match=r"'tg'.secret_token_file: Telegram accepts 1-256"):
        read_secrets(config)
