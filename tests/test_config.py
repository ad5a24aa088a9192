"""Configuration: defaults, file + environment precedence, errors, secrets."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from wakeful.app.config import STARTER_CONFIG, ConfigError, load_settings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests see no WAKEFUL_* or key variables from the machine running them."""
    import os

    for name in list(os.environ):
        if name.startswith("WAKEFUL_") or name in {"OPENAI_API_KEY", "STATE_DIRECTORY"}:
            monkeypatch.delenv(name)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "wakeful.toml"
    path.write_text(text)
    return path


def test_defaults_load_without_a_file() -> None:
    """With no file every key has its documented default."""
    settings = load_settings(None)
    assert settings.server.host_port() == ("127.0.0.1", 8787)
    assert settings.server.max_body_bytes == 1024 * 1024
    assert settings.store.backend == "sqlite"
    assert settings.store.sqlite_synchronous == "full"
    assert settings.llm.model == ""
    assert settings.llm.base_url == "https://api.openai.com/v1"
    assert settings.loop.max_model_calls_per_run == 40
    assert settings.router.classifier_budget_ms == 300
    assert settings.hooks == []
    assert settings.email.accounts == []


def test_environment_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """WAKEFUL_<SECTION>__<KEY> wins over the file; other file keys stay."""
    path = write(tmp_path, '[llm]\nmodel = "from-file"\ntimeout_s = 9\n')
    monkeypatch.setenv("WAKEFUL_LLM__MODEL", "from-env")
    monkeypatch.setenv("WAKEFUL_SERVER__BIND", "0.0.0.0:9000")
    settings = load_settings(path)
    assert settings.llm.model == "from-env"
    assert settings.llm.timeout_s == 9
    assert settings.server.host_port() == ("0.0.0.0", 9000)


def test_unknown_key_is_named(tmp_path: Path) -> None:
    """A misspelt key is refused with its full dotted name."""
    with pytest.raises(ConfigError, match=r"unknown key 'llm\.modle'"):
        load_settings(write(tmp_path, '[llm]\nmodle = "x"\n'))
    with pytest.raises(ConfigError, match=r"unknown key 'serverr'"):
        load_settings(write(tmp_path, "[serverr]\nbind = 1\n"))


def test_unknown_key_from_environment_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """A misspelt environment override inside a section is refused too."""
    monkeypatch.setenv("WAKEFUL_LLM__MODLE", "x")
    with pytest.raises(ConfigError, match=r"llm\.modle"):
        load_settings(None)


def test_bad_bind_names_key_and_example(tmp_path: Path) -> None:
    """A bind without a port names server.bind, the value and a good example."""
    with pytest.raises(ConfigError) as info:
        load_settings(write(tmp_path, '[server]\nbind = "localhost"\n'))
    message = str(info.value)
    assert "server.bind" in message
    assert "'localhost'" in message
    assert 'bind = "127.0.0.1:8787"' in message


def test_bad_number_names_key(tmp_path: Path) -> None:
    """A non-numeric timeout is refused naming llm.timeout_s with an example."""
    with pytest.raises(ConfigError, match=r"llm\.timeout_s.*timeout_s = 300"):
        load_settings(write(tmp_path, '[llm]\ntimeout_s = "soon"\n'))


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    """A syntax error is reported as ConfigError naming the file."""
    path = write(tmp_path, "[llm\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(path)


def test_secret_never_in_error_message(tmp_path: Path) -> None:
    """A wrongly typed secret is refused without echoing its value."""
    with pytest.raises(ConfigError) as info:
        load_settings(write(tmp_path, "[server]\nadmin_token = 123456789\n"))
    assert "123456789" not in str(info.value)
    assert "server.admin_token" in str(info.value)


def test_api_key_sources_in_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """api_key beats api_key_file, which beats the environment variable."""
    monkeypatch.setenv("MY_KEY", "from-env")
    key_file = tmp_path / "key"
    key_file.write_text("from-file\n")
    base = '[llm]\napi_key_env = "MY_KEY"\n'
    assert load_settings(write(tmp_path, base)).llm.resolve_api_key() == "from-env"
    with_file = base + f'api_key_file = "{key_file}"\n'
    assert load_settings(write(tmp_path, with_file)).llm.resolve_api_key() == "from-file"
    inline = with_file + 'api_key = "inline"\n'
    assert load_settings(write(tmp_path, inline)).llm.resolve_api_key() == "inline"
    monkeypatch.delenv("MY_KEY")
    assert load_settings(write(tmp_path, base)).llm.resolve_api_key() is None


def test_secrets_do_not_print(monkeypatch: pytest.MonkeyPatch) -> None:
    """The settings' repr hides secret values."""
    monkeypatch.setenv("WAKEFUL_LLM__API_KEY", "sk-very-secret")
    settings = load_settings(None)
    assert "sk-very-secret" not in repr(settings)
    assert settings.secret_values() == ["sk-very-secret"]


def test_admin_token_generated_once_and_reused(tmp_path: Path) -> None:
    """Without a configured token one is made, stored 0600, and reused."""
    server = load_settings(None).server
    first = server.resolve_admin_token(tmp_path)
    path = tmp_path / "admin-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(first) >= 32
    assert server.resolve_admin_token(tmp_path) == first


def test_admin_token_from_file_and_inline(tmp_path: Path) -> None:
    """admin_token wins over admin_token_file; an empty file is an error."""
    token_file = tmp_path / "tok"
    token_file.write_text("file-token\n")
    settings = load_settings(write(tmp_path, f'[server]\nadmin_token_file = "{token_file}"\n'))
    assert settings.server.resolve_admin_token(tmp_path) == "file-token"
    assert not (tmp_path / "admin-token").exists()
    token_file.write_text("")
    with pytest.raises(ConfigError, match="admin_token_file"):
        settings.server.resolve_admin_token(tmp_path)


def test_data_dir_defaults_to_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under systemd the data dir is $STATE_DIRECTORY, created if missing."""
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "state"))
    assert load_settings(None).daemon.resolved_data_dir() == tmp_path / "state"
    assert (tmp_path / "state").is_dir()


def test_hooks_and_email_accounts_are_modelled(tmp_path: Path) -> None:
    """[[hooks]] and [[email.accounts]] load with their fields and defaults."""
    text = (
        '[[hooks]]\nname = "github"\nauth = "github"\nsecret_file = "/s"\n'
        '[[email.accounts]]\nname = "work"\nimap_host = "imap.example.com"\n'
        'username = "me@example.com"\n'
    )
    settings = load_settings(write(tmp_path, text))
    assert settings.hooks[0].auth == "github"
    assert settings.email.accounts[0].imap_port == 993
    assert settings.email.accounts[0].mailboxes == ["INBOX"]


def test_starter_config_loads(tmp_path: Path) -> None:
    """The file `wakeful init` writes is valid and documents every section."""
    settings = load_settings(write(tmp_path, STARTER_CONFIG))
    assert settings.server.bind == "127.0.0.1:8787"
    for section in ("[daemon]", "[server]", "[store]", "[llm]", "[router]", "[loop]"):
        assert section in STARTER_CONFIG
    assert "[[hooks]]" in STARTER_CONFIG and "[[email.accounts]]" in STARTER_CONFIG


def test_the_starter_config_names_the_data_dir_the_daemon_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The comment over data_dir says where the data goes when it is not set: the
    directory default_data_dir() picks for a user (it used to name an older one)."""
    from wakeful.kernel.config_files import default_data_dir

    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    chosen = default_data_dir()
    if os.geteuid() == 0:  # root: the system unit's directory
        assert chosen == Path("/var/lib/wakeful") and "/var/lib/wakeful for root" in STARTER_CONFIG
    else:
        assert chosen == tmp_path / "state" / "wakeful"
    assert "~/.local/state/wakeful" in STARTER_CONFIG and "local/share" not in STARTER_CONFIG
