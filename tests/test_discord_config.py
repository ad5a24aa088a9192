"""[[chat.discord]]: mistakes are one line that names the key and the fix, never a
traceback; the guide's example loads as written, with the documented defaults."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from pydantic import ValidationError

from tests.daemon_process import free_port, run_to_exit, write_config
from tests.fakes.discord_api import TOKEN
from tests.support.chat_config import toml_table
from tests.test_documented_commands import ROOT
from wakeful.app.config import load_settings
from wakeful.channels.discord.component import read_token
from wakeful.channels.discord.config import DiscordConfig
from wakeful.kernel.config_base import ConfigError


def config_with_bot(tmp_path: Path, **entry: object) -> Path:
    config = write_config(tmp_path / "data", None, free_port())
    with config.open("a") as handle:
        handle.write(toml_table("chat.discord", {"name": "dc", **entry}))
    return config


@pytest.mark.parametrize(
    ("entry", "names"),
    [
        ({"bot_token_file": "/nonexistent/discord-token"}, "'dc'.bot_token_file"),
        ({"bot_token_file": "/x", "allowed_user_ids": ["@owner"]}, "allowed_user_ids"),
        ({"bot_token_file": "/x", "allowed_channel_ids": ["general"]}, "allowed_channel_ids"),
        ({"bot_token_file": "/x", "api_base": "discord.com/api/v10"}, "http://"),
    ],
)
def test_a_bad_entry_stops_start_up_with_one_clear_line(
    tmp_path: Path, entry: dict[str, object], names: str
) -> None:
    """`wakeful run` exits non-zero on one line saying which key is wrong; no traceback."""
    result = run_to_exit(config_with_bot(tmp_path, **entry))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    [line] = result.stderr.splitlines()  # the log (stdout) may say it too, as JSON
    assert names in line and "chat.discord" in line
    assert "Traceback" not in output


def test_a_token_pasted_with_its_prefix_is_caught_at_start(tmp_path: Path) -> None:
    (tmp_path / "token").write_text(f"Bot {TOKEN}\n")
    config = DiscordConfig(name="dc", bot_token_file=tmp_path / "token")
    with pytest.raises(ConfigError, match=r"'dc'.bot_token_file: the token has spaces"):
        read_token(config)


def test_without_the_websockets_package_the_config_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "websockets" else real(name)
    )
    with pytest.raises(ValidationError, match=r"pip install 'wakeful\[discord\]'"):
        DiscordConfig(name="dc", bot_token_file=tmp_path / "token")


def test_the_guides_example_loads_as_written_with_the_defaults(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "discord.md").read_text()
    example = text.split("```toml\n", 1)[1].split("```", 1)[0]
    path = tmp_path / "wakeful.toml"
    path.write_text("\n".join(line.strip() for line in example.splitlines()))
    [bot] = load_settings(path).chat.discord
    assert (bot.name, bot.session) == ("home", "main")
    assert bot.allowed_user_ids == ["80351110224678912"]
    assert bot.allowed_channel_ids == ["1051234567890123456"]
    assert bot.api_base == "https://discord.com/api/v10"
    assert (bot.typing_every_s, bot.retry_min_s, bot.retry_max_s) == (8.0, 1.0, 60.0)


def test_ids_written_as_numbers_are_taken_as_discords_strings(tmp_path: Path) -> None:
    config = DiscordConfig(
        name="dc", bot_token_file=tmp_path / "t", allowed_user_ids=[80351110224678912]
    )
    assert config.allowed_user_ids == ["80351110224678912"]
