"""Writing command outputs (``--json OUT``): one place for the ``-`` = stdout rule and the
one-line error on an unwritable path."""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["write_output"]


def write_output(dest, text: str, *, option: str = "--json", error=OSError) -> None:
    """Write ``text`` (plus a newline) to the file ``dest``, or to stdout when ``dest`` is ``-``.

    Parameters
    ----------
    dest : str or os.PathLike
        Output path, or ``"-"`` for standard output.
    text : str
    option : str
        Option name used in the error message.
    error : type of Exception
        Exception class raised (with a one-line message) when the file cannot be written, so
        each command raises its own usage error.
    """
    if str(dest) == "-":
        sys.stdout.write(text + "\n")
        return
    try:
        Path(dest).write_text(text + "\n")
    except OSError as e:
        raise error(f"cannot write {option} {dest}: {e.strerror}") from None
