"""Run the ``tessera`` command line in a subprocess, as a user would."""

import subprocess
import sys
from pathlib import Path

__all__ = ["ROOT", "run_cli", "one_line_error"]

#: The checkout (commands run from here unless ``cwd`` is given).
ROOT = Path(__file__).resolve().parents[2]


def run_cli(*args, cwd=None, timeout=600):
    """``python -m tessera.cli ARGS`` with captured text output.

    Parameters
    ----------
    *args : str or path
        Command-line arguments.
    cwd : path, optional
        Working directory (default: the checkout).
    timeout : float
        Seconds before :class:`subprocess.TimeoutExpired`.

    Returns
    -------
    subprocess.CompletedProcess
    """
    return subprocess.run([sys.executable, "-m", "tessera.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or ROOT, timeout=timeout)


def one_line_error(r, *needles, code=2):
    """Assert ``r`` failed with exit ``code`` and exactly one stderr line (no traceback)
    containing every needle; return that line."""
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)
    return lines[0]
