"""What `wakeful onboard` writes: whatever was answered, the file is `wakeful init`'s
template with those values in it, loads as them, and names each secret only by its file."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from wakeful.app.config import load_settings
from wakeful.app.config_starter import STARTER_CONFIG
from wakeful.cli.onboard_config import Answers, ChatAccount, render, write_all

TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)
SECRET = st.text("abcdefghijklmnopqrstuvwxyz0123456789:-_", min_size=24, max_size=60)


@settings(max_examples=25, deadline=None)
@given(
    model=TEXT.filter(lambda text: text == text.strip()),
    folder=st.text(st.characters(whitelist_categories=("L", "N")), min_size=1, max_size=20),
    port=st.integers(1, 65535),
    users=st.lists(st.integers(1, 2**40), max_size=3),
    key=SECRET,
    token=SECRET,
)
def test_the_answers_load_as_answered_and_secrets_stay_in_their_files(
    model: str,
    folder: str,
    port: int,
    users: list[int],
    key: str,
    token: str,
) -> None:
    # A secret equal to another answer would be in the file as that answer.
    assume(all(secret not in other for secret in (key, token) for other in (model, folder)))
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "conf" / "wakeful.toml"
        data_dir = Path(scratch) / folder / "data"
        telegram = ChatAccount(
            "telegram", "tg", {"allowed_user_ids": users}, {"bot_token_file": token}, "@bot"
        )
        answers = Answers(
            "http://127.0.0.1:9/v1", model, key, data_dir, f"127.0.0.1:{port}", [telegram]
        )
        written = write_all(config, answers)
        loaded = load_settings(config)
        assert loaded.llm.model == model
        assert loaded.daemon.data_dir == data_dir
        assert loaded.server.bind == f"127.0.0.1:{port}"
        assert loaded.llm.resolve_api_key() == key
        [bot] = loaded.chat.telegram
        assert bot.allowed_user_ids == users
        assert bot.bot_token_file.read_text().strip() == token
        text = config.read_text()
        assert key not in text and token not in text
        for path in [config, *written]:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_every_comment_of_the_template_is_kept(tmp_path: Path) -> None:
    """Only the answered lines change; the template's explanations all stay."""
    answers = Answers("http://127.0.0.1:9/v1", "m", "secret-key", tmp_path, "127.0.0.1:1")
    rendered = render(tmp_path / "wakeful.toml", answers)
    comments = [line.strip() for line in STARTER_CONFIG.splitlines() if line.startswith("#")]
    kept = [line.strip() for line in rendered.splitlines()]
    assert [c for c in comments if c not in kept] == ['# data_dir = "/var/lib/wakeful"']
