"""What the ``wakeful`` command sets up before it imports anything (wakeful/cli/entry.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture
def plugin_site(tmp_path: Path) -> Path:
    """An installed pydantic plugin (an entry point in the ``pydantic`` group) that
    leaves a mark when pydantic loads it."""
    site = tmp_path / "site"
    info = site / "markplugin-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: markplugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nmark = markplugin:plugin\n")
    (site / "markplugin.py").write_text(
        "import os, pathlib\n"
        "pathlib.Path(os.environ['MARK_FILE']).write_text('loaded')\n"
        "class _Plugin:\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None\n"
        "plugin = _Plugin()\n"
    )
    return site


def _run(site: Path, tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """``wakeful run`` on a config it refuses: the refusal comes from validating the
    config's pydantic models, so pydantic has looked for plugins by then (or not)."""
    config = tmp_path / "wakeful.toml"
    config.write_text('[server]\nbind = "not an address"\n')
    clean = {k: v for k, v in os.environ.items() if not k.startswith("PYDANTIC_")}
    path = os.pathsep.join([str(site), *sys.path])
    return subprocess.run(
        [sys.executable, "-m", "wakeful", "-c", str(config), "run"],
        env={**clean, "PYTHONPATH": path, "MARK_FILE": str(tmp_path / "mark"), **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_pydantic_plugins_are_not_looked_for(plugin_site: Path, tmp_path: Path) -> None:
    result = _run(plugin_site, tmp_path)
    assert result.returncode == 2 and "server.bind" in result.stderr, result.stderr
    assert not (tmp_path / "mark").exists()


def test_an_operator_who_sets_the_variable_gets_the_plugins(
    plugin_site: Path, tmp_path: Path
) -> None:
    result = _run(plugin_site, tmp_path, PYDANTIC_DISABLE_PLUGINS="")
    assert result.returncode == 2 and "server.bind" in result.stderr, result.stderr
    assert (tmp_path / "mark").read_text() == "loaded"
