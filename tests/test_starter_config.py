"""The starter config's commented examples are valid configuration."""

from __future__ import annotations

import re
from pathlib import Path

from wakeful.app.config import load_settings
from wakeful.app.config_starter import STARTER_CONFIG


def test_uncommented_examples_load(tmp_path: Path) -> None:
    """Uncommenting every example (with inline secrets for the files) gives a valid config."""
    lines = []
    for line in STARTER_CONFIG.splitlines():
        match = re.match(r"^# (\[.*|[a-z_]+ = .*)$", line)
        lines.append(match.group(1) if match else line)
    text = "\n".join(lines)
    text = text.replace('secret_file = "/etc/wakeful/github-secret"', 'secret = "0123456789ab"')
    text = text.replace('password_file = "/etc/wakeful/mail-password"', 'password = "pw"')
    path = tmp_path / "wakeful.toml"
    path.write_text(text)
    settings = load_settings(path)
    assert [hook.name for hook in settings.hooks] == ["github"]
    assert [account.name for account in settings.email.accounts] == ["work"]
    assert [timer.name for timer in settings.timers] == ["daily-summary"]
    assert [bot.name for bot in settings.chat.telegram] == ["tg"]
    assert [app.name for app in settings.chat.slack] == ["work"]
    assert [account.name for account in settings.chat.matrix] == ["mx"]
    assert settings.notify.urgent == ["chat:telegram:tg#123456789"]
