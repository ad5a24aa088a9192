"""``[[chat.whatsapp]]``: the documented example loads as written, its defaults, and one
clear line for each mistake."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.daemon_process import free_port, run_to_exit, write_config
from wakeful.app.config import ConfigError, load_settings

DOC = Path(__file__).resolve().parent.parent / "docs" / "whatsapp.md"

ENTRY = """
[[chat.whatsapp]]
name = "{name}"
phone_number_id = "{number_id}"
access_token_file = "{dir}/token"
app_secret_file = "{dir}/secret"
verify_token_file = "{dir}/verify"
allowed_user_ids = [{users}]
"""


def config_file(tmp_path: Path, *entries: tuple[str, str, str]) -> Path:
    path = tmp_path / "wakeful.toml"
    path.write_text(
        "".join(ENTRY.format(name=n, number_id=i, dir=tmp_path, users=u) for n, i, u in entries)
    )
    return path


def test_the_documented_example_loads_as_written(tmp_path: Path) -> None:
    [example] = re.findall(r"```toml\n(.*?)```", DOC.read_text(), re.DOTALL)
    path = tmp_path / "wakeful.toml"
    path.write_text("\n".join(line.strip() for line in example.splitlines()))
    [entry] = load_settings(path).chat.whatsapp
    assert (entry.name, entry.phone_number_id) == ("biz", "106540352242922")
    assert entry.allowed_user_ids == ["447700900123"]
    assert (entry.template_name, entry.template_language) == ("reply_waiting", "en_US")
    assert entry.webhook_path == "/chat/whatsapp/biz/webhook"


def test_an_entry_has_metas_graph_api_and_no_template_by_default(tmp_path: Path) -> None:
    settings = load_settings(config_file(tmp_path, ("biz", "106540352242922", '"15551234567"')))
    [entry] = settings.chat.whatsapp
    assert (entry.api_base, entry.api_version) == ("https://graph.facebook.com", "v23.0")
    assert (entry.session, entry.template_name, entry.typing_every_s) == ("main", None, 20.0)


@pytest.mark.parametrize(
    ("entries", "message"),
    [
        ((("biz", "106540352242922", '"+44 7700 900123"'),), "is not a WhatsApp id"),
        ((("biz", "+15550783881", ""),), "phone_number_id.*not the phone number itself"),
        ((("biz", "1", ""), ("biz", "1", "")), "chat.whatsapp names must be unique; biz repeats"),
        ((("My Biz", "1", ""),), "chat.whatsapp.0.name"),
    ],
)
def test_a_mistake_is_one_line_naming_the_key_and_the_fix(
    tmp_path: Path, entries: tuple[tuple[str, str, str], ...], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as caught:
        load_settings(config_file(tmp_path, *entries))
    assert "\n" not in str(caught.value).strip()


def test_an_unreadable_token_file_stops_start_up_with_one_line(tmp_path: Path) -> None:
    """`wakeful run` exits 2 naming the key and the file, with no traceback."""
    config = write_config(tmp_path / "data", None, free_port())
    with config.open("a") as toml:
        toml.write(ENTRY.format(name="biz", number_id="1", dir=tmp_path, users=""))
    result = run_to_exit(config)
    output = result.stdout + result.stderr
    assert result.returncode == 2
    assert f"chat.whatsapp 'biz' access_token_file: cannot read {tmp_path}/token" in output
    assert "Traceback" not in output
