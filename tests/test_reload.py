"""SIGHUP's reload: what changed, what components took, what needs a restart."""

from __future__ import annotations

from pathlib import Path

import pytest
from structlog.testing import capture_logs

from wakeful.app.config import Settings, load_settings
from wakeful.app.reload import changed_keys, reload_settings
from wakeful.core.components.context import Reloadable

BASE = '[daemon]\nlog_level = "info"\n[server]\nbind = "127.0.0.1:8787"\n'
HOOK = '[[hooks]]\nname = "ci"\nauth = "bearer"\nsecret = "{secret}"\n'


class HookReloader:
    def __init__(self, fail: bool = False) -> None:
        self.seen: list[Settings] = []
        self.fail = fail

    async def reload(self, settings: Settings) -> list[str]:
        if self.fail:
            raise ValueError("hook 'ci' has no usable secret")
        self.seen.append(settings)
        return ["hooks"]


def test_changed_keys_compare_secrets_without_showing_them() -> None:
    """A changed secret shows as a changed key; identical settings show none."""
    old = Settings(hooks=[{"name": "ci", "secret": "old-secret-1"}])  # type: ignore[list-item]
    new = Settings(hooks=[{"name": "ci", "secret": "new-secret-2"}])  # type: ignore[list-item]
    assert changed_keys(old, old) == []
    assert changed_keys(old, new) == ["hooks"]


@pytest.mark.anyio
async def test_reload_hands_hooks_to_components(tmp_path: Path) -> None:
    """Hooks go to the component that reloads them; a new bind is reported as needing a restart."""
    path = tmp_path / "wakeful.toml"
    path.write_text(BASE + HOOK.format(secret="first-secret"))
    current = load_settings(path)
    path.write_text(BASE.replace("8787", "8788") + HOOK.format(secret="second-secret"))
    reloader = HookReloader()
    assert isinstance(reloader, Reloadable)
    with capture_logs() as logs:
        new = await reload_settings(current, path, [reloader])
    assert reloader.seen == [new]
    summary = next(entry for entry in logs if entry["event"] == "configuration reloaded")
    assert summary["reloaded_by_components"] == ["hooks"]
    assert summary["needs_restart"] == ["server.bind"]
    assert "second-secret" not in str(logs)


@pytest.mark.anyio
async def test_reload_keeps_running_config_on_errors(tmp_path: Path) -> None:
    """A broken file keeps the running settings; a component's refusal is reported."""
    path = tmp_path / "wakeful.toml"
    path.write_text(BASE)
    current = load_settings(path)
    path.write_text("[daemon\n")
    with capture_logs() as logs:
        assert await reload_settings(current, path, []) is current
    assert logs[0]["event"] == "reload failed; the running configuration stays"
    path.write_text(BASE)
    with capture_logs() as logs:
        await reload_settings(current, path, [HookReloader(fail=True)])
    assert logs[0]["not_reloaded"] == ["HookReloader: hook 'ci' has no usable secret"]
