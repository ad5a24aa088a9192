"""`wakeful open`: the web page's log-in link, opened in a browser on a desktop.

The link carries a one-time code the running daemon gives for the admin token (good
for one log-in within two minutes), never the token itself: a link stays in the
browser's history. A browser is started only where one can be seen: a graphical
session, not over SSH, never in CI.
"""

from __future__ import annotations

import os
import sys
import webbrowser
from collections.abc import Mapping
from urllib.parse import quote

import httpx

from wakeful.app.config import Settings
from wakeful.cli.client import CliError, base_url


def login_url(settings: Settings) -> str:
    server = settings.server
    data_dir = settings.daemon.data_dir_path()
    token = server.client_admin_token(data_dir)
    if token is None:
        raise CliError(
            f"no admin token at {data_dir / 'admin-token'} yet: is `wakeful run` running? "
            "It writes the token at its first start; give `wakeful open` its config (-c)",
            exit_code=1,
        )
    base = base_url(server.host_port())
    try:
        answer = httpx.post(
            f"{base}/api/login-codes", headers={"Authorization": f"Bearer {token}"}, timeout=5
        )
    except httpx.HTTPError:
        raise CliError(
            f"nothing answers at {base}: start the daemon with `wakeful run` (the log-in "
            "link is made by the running daemon)",
            exit_code=1,
        ) from None
    if answer.status_code != 200:
        raise CliError(f"the daemon at {base} gave no log-in code ({answer.status_code})")
    return f"{base}/login?code={quote(str(answer.json()['code']), safe='')}"


def has_display(env: Mapping[str, str], platform: str = sys.platform) -> bool:
    """Is there a screen a browser would show up on?"""
    if env.get("CI") or env.get("WAKEFUL_NO_BROWSER"):
        return False
    if platform == "darwin":
        return not env.get("SSH_CONNECTION")
    return bool(env.get("DISPLAY") or env.get("WAYLAND_DISPLAY"))


def open_page(settings: Settings, *, browser: bool) -> int:
    url = login_url(settings)
    print(url)
    print("(good for one log-in within two minutes)", file=sys.stderr)
    if browser and has_display(os.environ):
        webbrowser.open(url)
    return 0
