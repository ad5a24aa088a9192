"""The session guard of tests/conftest.py fails a run whose test touched the host's wakeful
state, in one process and on xdist's workers alike (scripts/check.sh runs ``-n 2``).

An inner pytest runs a probe test that makes ``~/.local/state/wakeful`` appear, with
``HOME`` pointing into this test's temporary root: the host's own home is never touched.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

PROBE = """\
from pathlib import Path


def test_makes_the_user_state_directory() -> None:
    (Path.home() / ".local" / "state" / "wakeful").mkdir(parents=True)


def test_touches_nothing() -> None:
    pass
"""

# Only the guard's two hooks: the probe needs none of the suite's fixtures.
CONFTEST = "from tests.conftest import pytest_sessionfinish, pytest_sessionstart  # noqa: F401\n"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "two workers"])
def test_a_test_that_makes_the_user_state_appear_fails_the_run(
    tmp_path: Path, workers: list[str]
) -> None:
    probe = tmp_path / "probe"
    probe.mkdir()
    (probe / "test_probe.py").write_text(PROBE)
    (probe / "conftest.py").write_text(CONFTEST)
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(ROOT)}
    for name in [n for n in env if n.startswith("PYTEST_")]:
        del env[name]  # an outer xdist worker's: the inner run has its own controller
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *workers]
    result = subprocess.run(
        [*command, "--rootdir", str(probe), "-c", os.devnull, str(probe)],
        cwd=probe,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "2 passed" in result.stdout, result.stdout + result.stderr
    assert "the tests changed the host's wakeful state" in result.stdout, result.stdout
    assert f"{home}/.local/state/wakeful: None -> ('dir'" in result.stdout, result.stdout
    assert result.returncode == pytest.ExitCode.TESTS_FAILED, result.stdout
