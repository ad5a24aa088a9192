"""A file replaced whole: a failure at any step leaves the old file as it was and nothing
beside it; the mode asked for (a secret's) or the old file's is the new file's."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from wakeful.cli.main import main
from wakeful.kernel.atomic_file import write_atomic


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def failing(name: str) -> Callable[..., Any]:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise OSError(5, f"{name} failed (an I/O error)")

    return fail


def test_the_new_text_replaces_the_old_and_nothing_is_left_beside(tmp_path: Path) -> None:
    path = tmp_path / "wakeful.toml"
    write_atomic(path, "first\n")
    write_atomic(path, "second, longer than the first\n")
    assert path.read_text(encoding="utf-8") == "second, longer than the first\n"
    assert [p.name for p in tmp_path.iterdir()] == ["wakeful.toml"]


@pytest.mark.parametrize("step", ["fsync", "replace"])
def test_a_failure_mid_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, step: str
) -> None:
    """The write has happened (the temporary holds the new text) when fsync or the rename
    fails, as when the process dies there: the file still holds all of the old text."""
    path = tmp_path / "wakeful.toml"
    path.write_text("[llm]\nmodel = 'old'\n", encoding="utf-8")
    monkeypatch.setattr(os, step, failing(step))
    with pytest.raises(OSError, match=f"{step} failed") as failure:
        write_atomic(path, "[llm]\nmodel = 'new'\n" * 1000)
    monkeypatch.undo()
    assert failure.value.filename == str(path)  # the file the user knows, not the temporary
    assert path.read_text(encoding="utf-8") == "[llm]\nmodel = 'old'\n"
    assert [p.name for p in tmp_path.iterdir()] == ["wakeful.toml"]


def test_a_secret_is_private_from_its_first_byte_whatever_the_old_mode(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("old\n")
    path.chmod(0o644)
    old_umask = os.umask(0)  # the most permissive umask: the mode asked for still holds
    try:
        write_atomic(path, "secret\n", mode=0o600)
    finally:
        os.umask(old_umask)
    assert mode_of(path) == 0o600 and path.read_text() == "secret\n"


def test_without_a_mode_an_old_file_keeps_its_own_and_a_new_one_gets_the_umasks(
    tmp_path: Path,
) -> None:
    kept = tmp_path / "kept.toml"
    kept.write_text("old\n")
    kept.chmod(0o640)
    write_atomic(kept, "new\n")
    assert mode_of(kept) == 0o640
    old_umask = os.umask(0o027)
    try:
        write_atomic(tmp_path / "new.toml", "new\n")
    finally:
        os.umask(old_umask)
    assert mode_of(tmp_path / "new.toml") == 0o640  # 0o666 less the umask, as write_text


def test_a_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    real = tmp_path / "real.toml"
    real.write_text("old\n")
    link = tmp_path / "wakeful.toml"
    link.symlink_to(real)
    write_atomic(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"


def test_init_force_that_fails_mid_write_keeps_the_old_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`wakeful init --force` over a config: one line naming the file, the config intact."""
    path = tmp_path / "wakeful.toml"
    path.write_text("# mine\n")
    monkeypatch.setattr(os, "replace", failing("replace"))
    assert main(["init", "--path", str(path), "--force"]) == 1
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert f"cannot write {path}: replace failed" in err and err.count("\n") == 1
    assert path.read_text() == "# mine\n"
    assert [p.name for p in tmp_path.iterdir()] == ["wakeful.toml"]
