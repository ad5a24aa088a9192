"""``[[chat.slack]]``: what a valid entry gives, and one clear line for each mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.daemon_process import free_port, run_to_exit, write_config
from wakeful.app.config import ConfigError, load_settings

ENTRY = """
[[chat.slack]]
name = "{name}"
bot_token_file = "{dir}/token"
signing_secret_file = "{dir}/secret"
allowed_user_ids = [{users}]
"""


def config_file(tmp_path: Path, *entries: tuple[str, str]) -> Path:
    path = tmp_path / "wakeful.toml"
    body = "".join(ENTRY.format(name=n, dir=tmp_path, users=u) for n, u in entries)
    path.write_text(body)
    return path


def test_an_entry_has_slacks_api_and_the_main_session_by_default(tmp_path: Path) -> None:
    settings = load_settings(config_file(tmp_path, ("work", '"U0123ABCDEF", "W0123ABCDEF"')))
    [entry] = settings.chat.slack
    assert (entry.name, entry.session, entry.api_base) == ("work", "main", "https://slack.com/api")
    assert entry.allowed_user_ids == ["U0123ABCDEF", "W0123ABCDEF"]


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ((("work", '"alice@example.com"'),), "'alice@example.com' is not a Slack user id"),
        ((("work", ""), ("work", "")), "chat.slack names must be unique; work repeats"),
        ((("Work Space", ""),), "chat.slack.0.name"),
    ],
)
def test_a_mistake_is_named_with_its_fix(
    tmp_path: Path, entries: tuple[tuple[str, str], ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        load_settings(config_file(tmp_path, *entries))


def test_an_unreadable_token_file_stops_start_up_with_one_line(tmp_path: Path) -> None:
    """`wakeful run` exits 2 naming the key and the file, with no traceback."""
    config = write_config(tmp_path / "data", None, free_port())
    with config.open("a") as toml:
        toml.write(ENTRY.format(name="work", dir=tmp_path, users='"U0123ABCDEF"'))
    result = run_to_exit(config)
    output = result.stdout + result.stderr
    assert result.returncode == 2
    assert f"chat.slack 'work' bot_token_file: cannot read {tmp_path}/token" in output
    assert "Traceback" not in output
