"""Run the ``tessera`` command line in a subprocess, as a user would."""

import subprocess
import sys
from pathlib import Path

__all__ = ["ROOT", "run_cli"]

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
