"""The client's fast reading of the config finds the daemon exactly where the full config does.

`wakeful status` and the other client commands read ``[server] bind``, the
admin token and the data directory with the standard library
(wakeful/cli/endpoint.py) instead of validating the whole config. The promise:
for every config, that reading gives the same address, token and token origin
as the daemon's own config (``load_settings``) — or hands the config to it.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wakeful.cli.endpoint import NotPlain, _full_endpoint, _plain_endpoint, endpoint
from wakeful.kernel.config_files import ConfigError

HOSTS = st.sampled_from(["127.0.0.1", "0.0.0.0", "localhost", "[::1]", "[::]", "10.1.2.3"])
TOKENS = st.text(st.characters(codec="ascii", categories=["L", "N"]), min_size=1, max_size=20)


@st.composite
def configs(draw: st.DrawFn) -> tuple[str, dict[str, str], str | None, str | None]:
    """(TOML text, WAKEFUL_* environment, token file content, generated token content)."""
    server: dict[str, str] = {}
    daemon: dict[str, str] = {}
    env: dict[str, str] = {}
    if draw(st.booleans()):
        server["bind"] = f"{draw(HOSTS)}:{draw(st.integers(1, 65535))}"
    token_choice = draw(st.sampled_from(["inline", "file", "generated", "none"]))
    token_file = generated = None
    if token_choice == "inline":
        server["admin_token"] = draw(TOKENS)
    elif token_choice == "file":
        server["admin_token_file"] = draw(st.sampled_from(["token", "ABS"]))
        token_file = draw(TOKENS)
    elif token_choice == "generated":
        generated = draw(TOKENS)
    if draw(st.booleans()):
        daemon["data_dir"] = "DATA"
    # Environment overrides win over the file, in both readings.
    if draw(st.booleans()):
        env["WAKEFUL_SERVER__BIND"] = f"127.0.0.1:{draw(st.integers(1, 65535))}"
    if draw(st.booleans()):
        env[draw(st.sampled_from(["WAKEFUL_DAEMON__DATA_DIR", "wakeful_daemon__data_dir"]))] = (
            "ENVDATA"
        )
    lines = []
    for name, section in (("server", server), ("daemon", daemon)):
        if section:
            lines.append(f"[{name}]")
            lines += [f'{key} = "{value}"' for key, value in section.items()]
    return "\n".join(lines) + "\n", env, token_file, generated


def _materialise(root: Path, text: str, env: dict[str, str], token_file: str | None) -> Path:
    (root / "DATA").mkdir()
    (root / "ENVDATA").mkdir()
    text = text.replace('"DATA"', f'"{root / "DATA"}"').replace('"ABS"', f'"{root / "abs"}"')
    if token_file is not None:
        (root / "token").write_text(token_file + "\n")
        (root / "abs").write_text(token_file + "\n")
    for key in env:
        env[key] = env[key].replace("ENVDATA", str(root / "ENVDATA"))
    config = root / "wakeful.toml"
    config.write_text(text)
    return config


@settings(max_examples=60, deadline=None)
@given(configs())
def test_the_fast_reading_finds_the_daemon_where_the_full_config_does(
    case: tuple[str, dict[str, str], str | None, str | None],
) -> None:
    text, env, token_file, generated = case
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = dict(env)
        config = _materialise(root, text, env, token_file)
        clean = {k: v for k, v in os.environ.items() if not k.upper().startswith("WAKEFUL_")}
        # STATE_DIRECTORY pins the default data dir under this test's root, never $HOME.
        clean["STATE_DIRECTORY"] = str(root / "state")
        with mock.patch.dict(os.environ, {**clean, **env}, clear=True):
            fast = _plain_endpoint(config)
            if generated is not None:
                (fast.data_dir).mkdir(parents=True, exist_ok=True)
                (fast.data_dir / "admin-token").write_text(generated + "\n")
                fast = _plain_endpoint(config)
            full = _full_endpoint(config)
    assert (fast.url, fast.token, fast.data_dir) == (full.url, full.token, full.data_dir)
    assert Path(fast.token_origin) == Path(full.token_origin) or (
        fast.token_origin == full.token_origin
    )


@pytest.mark.parametrize(
    ("text", "env"),
    [
        ('[server]\nbind = "no-port"\n', {}),  # the full config names the key and the fix
        ("[server]\nbind = 8787\n", {}),  # another type
        ("[server\n", {}),  # not TOML
        ("", {"WAKEFUL_SERVER__MAX_BODY_BYTES": "10"}),  # a key the fast path does not read
        ("", {"WAKEFUL_SERVER": '{"bind": "127.0.0.1:1"}'}),
    ],
)
def test_what_the_fast_reading_does_not_know_goes_to_the_full_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, env: dict[str, str]
) -> None:
    config = tmp_path / "wakeful.toml"
    config.write_text(text)
    monkeypatch.setenv("STATE_DIRECTORY", str(tmp_path / "state"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(NotPlain):
        _plain_endpoint(config)
    try:
        full = _full_endpoint(config)
    except ConfigError as exc:  # the daemon's own one-line error
        with pytest.raises(ConfigError) as raised:
            endpoint(config)
        assert str(raised.value) == str(exc)
    else:
        assert endpoint(config) == full


def test_a_bad_bind_is_reported_by_its_key(tmp_path: Path) -> None:
    config = tmp_path / "wakeful.toml"
    config.write_text('[server]\nbind = "no-port"\n')
    with pytest.raises(ConfigError, match=r"server\.bind.*HOST:PORT"):
        endpoint(config)
