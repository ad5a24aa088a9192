"""The live checks `wakeful onboard` makes before it writes anything: the model key by
doctor's own check (one GET of the model list: no tokens spent), the data directory by
doctor's, and each chat credential by the channel's own client (Telegram getMe, Slack
auth.test, Matrix whoami). A failure is one line saying what failed; never the secret.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from wakeful.cli.chat_checks import (
    CheckFailed,
    check_discord,
    check_matrix,
    check_slack,
    check_telegram,
)
from wakeful.cli.doctor import data_dir_findings, model_finding
from wakeful.kernel.config_files import split_bind

# Onboard asks the chat platforms as doctor does (wakeful/cli/chat_checks.py).
__all__ = ["CheckFailed", "check_discord", "check_matrix", "check_slack", "check_telegram"]


def check_model(base_url: str, model: str, api_key: str | None) -> str:
    """doctor's model check on these answers; its line when the endpoint took the key."""
    from wakeful.app.config import Settings
    from wakeful.llm.config import LlmSection

    # An empty api_key_env: no key was given, so none is taken from the environment.
    llm: dict[str, Any] = {"base_url": base_url, "model": model, "api_key_env": ""}
    llm["api_key"] = api_key
    try:
        # Only [llm], exactly as answered: Settings() would let WAKEFUL_LLM__* win.
        settings = Settings.model_construct(llm=LlmSection.model_validate(llm))
    except ValidationError as exc:
        raise CheckFailed(exc.errors()[0]["msg"].removeprefix("Value error, ")) from None
    finding, _skew = model_finding(settings)
    if not finding.ok:
        raise CheckFailed(finding.text)
    return finding.text


def check_data_dir(path: Path) -> str:
    """Made (only this user may enter it) if missing; doctor's check of it."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise CheckFailed(f"cannot create {path}: {exc.strerror or exc}") from None
    for finding in data_dir_findings(path):
        if not finding.ok:
            raise CheckFailed(f"{finding.text} (fix: {finding.fix})")
    return f"{path}: writable, private"


def check_bind(bind: str) -> str:
    try:
        split_bind(bind)
    except ValueError as exc:
        raise CheckFailed(f"{bind!r}: {exc}") from None
    return bind
