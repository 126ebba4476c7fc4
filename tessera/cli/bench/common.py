"""Shared types of the benchmark harness: a :class:`Section` of results and a :class:`Goal`.

Every benchmark module returns one :class:`Section`: a table (``columns`` + ``rows``), the goals
it reports against, free-text notes and the exact command that reproduces it. Sections are plain
data (JSON-serialisable through :meth:`Section.to_json`); rendering lives in
:mod:`tessera.cli.bench.suite`.
"""

from __future__ import annotations

import dataclasses
import math
import platform
import time
from dataclasses import dataclass, field

__all__ = ["BenchError", "Goal", "Section", "fmt", "Timer", "machine_info", "save_figure"]


class BenchError(Exception):
    """A benchmark cannot run here or got inconsistent results (one-line message)."""


@dataclass
class Goal:
    """One benchmark goal and how the run measured against it.

    Attributes
    ----------
    goal : str
        What is wanted, e.g. ``"golden model ≥ 5 M tile-instr/s at 1216 tiles"``.
    measured : str
        The measured figure, human readable.
    met : bool or None
        True (met), False (short), None (not measured in this run).
    why : str
        For a short goal: the measured cause, in one sentence (optional).
    """
    goal: str
    measured: str
    met: bool | None
    why: str = ""


@dataclass
class Section:
    """Results of one benchmark.

    Attributes
    ----------
    name : str
        Benchmark name (``tessera bench --only NAME``).
    title : str
        Heading used in docs/performance.md.
    command : str
        Command that reproduces the figures.
    columns : list of (key, header)
        Table columns: row dict key and Markdown header.
    rows : list of dict
        Table rows (numbers or strings).
    goals : list of Goal
    notes : list of str
        Paragraphs printed under the table (method, caveats, shortfalls).
    data : dict
        Extra JSON-ready data (e.g. series used by plots).
    plots : list of str
        File names of plots written (relative to the plots directory).
    seconds : float
        Wall time of the benchmark.
    error : str or None
        Set when the benchmark failed; the other fields may be partial.
    """
    name: str
    title: str
    command: str
    columns: list = field(default_factory=list)
    rows: list = field(default_factory=list)
    goals: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    data: dict = field(default_factory=dict)
    plots: list = field(default_factory=list)
    seconds: float = 0.0
    error: str | None = None

    def to_json(self) -> dict:
        """JSON-ready dict (goals as dicts)."""
        d = dataclasses.asdict(self)
        d["columns"] = [list(c) for c in self.columns]
        return d


def save_figure(fig, outdir, name: str) -> str:
    """Lay out, write ``outdir/name`` (PNG) and close a matplotlib figure; returns ``name``."""
    import matplotlib.pyplot as plt
    fig.tight_layout()
    fig.savefig(f"{outdir}/{name}")
    plt.close(fig)
    return name


def fmt(v) -> str:
    """Format a table cell: floats with 3 significant digits, big ints with thin separators."""
    if v is None:
        return "–"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "–"
        if v == 0:
            return "0"
        a = abs(v)
        if a >= 1e6:
            return f"{v / 1e6:.3g} M"
        if a >= 1000:
            return f"{v:,.0f}"
        return f"{v:.3g}"
    return str(v)


class Timer:
    """Context manager measuring wall time (``.s`` seconds after exit)."""

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.s = 0.0
        return self

    def __exit__(self, *exc):
        self.s = time.perf_counter() - self.t0
        return False


def machine_info() -> dict:
    """Python version, CPU count, load average and platform (context for every figure)."""
    import os
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    import numpy
    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "cpus": os.cpu_count(), "cpu": cpu, "load_avg_1min": load,
            "platform": platform.platform()}
