"""Verilator lint of generated Verilog (``tessera gen --lint``).

The RTL package only generates (:mod:`tessera.hdl.gen`); running Verilator is a tool step and
lives here, next to the Verilator locator (:mod:`tessera.tb.verilator_env`). The waivers are
:data:`tessera.hdl.gen.LINT_WAIVERS`, the same the testbench builds use.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tessera.hdl.gen import LINT_WAIVERS, TOP, GenError

from .verilator_env import VerilatorNotFound, ensure

__all__ = ["lint"]


def lint(verilog_path, *, log_path=None, top: str = TOP) -> str:
    """Run ``verilator --lint-only`` (warnings fatal, except :data:`LINT_WAIVERS`) on a file.

    Parameters
    ----------
    verilog_path : str or os.PathLike
        The Verilog file (e.g. ``generate(...)["verilog"]``).
    log_path : str or os.PathLike, optional
        Also write Verilator's output there.
    top : str
        Top module (default ``tessera_array``).

    Returns
    -------
    str
        Verilator's output (empty when clean).

    Raises
    ------
    GenError
        Verilator is missing or reports an error (the message holds its output).
    """
    try:
        inst = ensure()
    except VerilatorNotFound as e:
        raise GenError(str(e)) from None
    cmd = [str(inst.executable), "--lint-only",
           *[f"-Wno-{w}" for w in LINT_WAIVERS], "--top-module", top, str(verilog_path)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())
    text = p.stdout + p.stderr
    if log_path is not None:
        Path(log_path).write_text(text)
    if p.returncode != 0:
        raise GenError(f"verilator lint of {verilog_path} failed:\n{text}")
    return text
