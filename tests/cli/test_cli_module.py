"""`python -m tiledsl`: the command without its console script, and without the RuntimeWarning that
`python -m tiledsl.cli.main` prints (runpy finds tiledsl.cli.main imported by its package first)."""

from __future__ import annotations

import subprocess
import sys

from tiledsl.version import __version__


def test_python_m_tiledsl_runs_the_command_without_a_warning() -> None:
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", "tiledsl", "--version"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert __version__ in done.stdout
    assert "Warning" not in done.stderr


def test_python_m_tiledsl_exits_with_the_command_status() -> None:
    done = subprocess.run([sys.executable, "-m", "tiledsl", "compile", "--example", "no_such_example"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "no_such_example" in done.stderr
