"""Issue 10, finding 6: under umask 022 the database and outputs/ were world-readable
and a 0755 data dir drew no warning."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog.testing

from wakeful.kernel.data_dir_perms import secure_data_dir
from wakeful.store.sqlite import SqliteStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def umask_022() -> Iterator[None]:
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("umask_022")
async def test_data_dir_files_are_private_and_an_open_dir_warns(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o755)
    (data_dir / "old-backup.sqlite").write_text("x")
    with structlog.testing.capture_logs() as logged:
        exposed = secure_data_dir(data_dir)
    assert exposed == [data_dir, data_dir / "old-backup.sqlite"]
    [warning] = [e for e in logged if e["log_level"] == "warning"]
    assert f"chmod -R go-rwx {data_dir}" == warning["fix"]
    store = await SqliteStore(data_dir / "wakeful.sqlite").open()
    await store.aclose()
    (data_dir / "outputs").mkdir()
    (data_dir / "outputs" / "full.txt").write_text("secret output")
    for path in [*data_dir.glob("wakeful.sqlite*"), data_dir / "outputs"]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0, path
    assert stat.S_IMODE((data_dir / "outputs" / "full.txt").stat().st_mode) == 0o600
    os.chmod(data_dir, 0o700)
    os.chmod(data_dir / "old-backup.sqlite", 0o600)
    with structlog.testing.capture_logs() as logged:
        assert secure_data_dir(data_dir) == []
    assert logged == []
