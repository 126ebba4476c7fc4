"""Source-level names of code addresses: function (symbol table) and ``file:line`` (DWARF).

``tessera cc`` compiles with ``-g``, so every Tessera ELF carries a DWARF line program
(non-allocated sections: the loaded image is the same with or without it). A
:class:`SourceMap` reads it once with pyelftools and answers, for a pc, the function that
contains it and the source line it came from; fault and timeout reports
(:func:`tessera.toolchain.run.summarize`, :class:`tessera.toolchain.graph.EngineError`) use it.

Examples
--------
>>> sm = SourceMap.from_elf("prog.elf")                # doctest: +SKIP
>>> sm.describe(0x5c)                                  # doctest: +SKIP
'f+0x10 (prog.c:4)'
"""

from __future__ import annotations

import bisect
import io
import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SourceMap", "Location", "source_map"]


@dataclass(frozen=True)
class Location:
    """Where a code address comes from.

    Attributes
    ----------
    pc : int
    function : str or None
        The function (``STT_FUNC`` symbol) containing ``pc``, if known.
    offset : int
        ``pc`` minus the function's start (0 if unknown).
    file : str or None
        Source file of the line-table row covering ``pc`` (as the compiler recorded it,
        relative to the compilation directory when it was given relative).
    line : int or None
    """
    pc: int
    function: str | None = None
    offset: int = 0
    file: str | None = None
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.file and self.line else None
        if self.function:
            fn = self.function + (f"+{self.offset:#x}" if self.offset else "")
            return f"{fn} ({where})" if where else fn
        return where or f"{self.pc:#x}"


class SourceMap:
    """Function and line lookup for one ELF.

    Parameters
    ----------
    functions : list of (start, end, name)
        Function address ranges (``end`` exclusive), from ``STT_FUNC`` symbols.
    rows : list of (address, file, line, end_sequence)
        Line-table rows from the DWARF line programs.
    """

    def __init__(self, functions=(), rows=()):
        self._funcs = sorted(functions)
        self._fstarts = [f[0] for f in self._funcs]
        self._rows = sorted(rows, key=lambda r: (r[0], not r[3]))
        self._raddrs = [r[0] for r in self._rows]

    @classmethod
    def from_elf(cls, path) -> "SourceMap":
        """Read the symbol table and DWARF line programs of the ELF at ``path``.

        A missing or unreadable file, or one without debug info, gives a map that knows
        only what it could read (possibly nothing): reports then fall back to hex pcs.
        """
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
        try:
            raw = Path(path).read_bytes()
            elf = ELFFile(io.BytesIO(raw))
        except (OSError, ELFError, ValueError):
            return cls()
        functions = []
        symtab = elf.get_section_by_name(".symtab")
        if symtab is not None:
            for sym in symtab.iter_symbols():
                if sym["st_info"]["type"] == "STT_FUNC" and sym.name:
                    lo, size = int(sym["st_value"]), int(sym["st_size"])
                    functions.append((lo, lo + max(size, 1), sym.name))
        rows = []
        try:
            if elf.has_dwarf_info():
                dwarf = elf.get_dwarf_info()
                for cu in dwarf.iter_CUs():
                    lp = dwarf.line_program_for_CU(cu)
                    if lp is None:
                        continue
                    names = _file_names(lp)
                    v5 = lp.header.version >= 5
                    for entry in lp.get_entries():
                        st = entry.state
                        if st is None:
                            continue
                        idx = st.file if v5 else st.file - 1
                        name = names[idx] if 0 <= idx < len(names) else None
                        rows.append((int(st.address), name, int(st.line), bool(st.end_sequence)))
        except (ELFError, ValueError, KeyError, IndexError, AttributeError):
            pass            # corrupt debug info: keep the symbols
        return cls(functions, rows)

    def function(self, pc: int):
        """``(name, offset)`` of the function containing ``pc``, or None."""
        i = bisect.bisect_right(self._fstarts, pc) - 1
        if i >= 0:
            lo, hi, name = self._funcs[i]
            if lo <= pc < hi:
                return name, pc - lo
        return None

    def line(self, pc: int):
        """``(file, line)`` of the line-table row covering ``pc``, or None."""
        i = bisect.bisect_right(self._raddrs, pc) - 1
        if i < 0:
            return None
        addr, name, line, end = self._rows[i]
        if end or name is None:
            return None
        return name, line

    def locate(self, pc: int) -> Location:
        """A :class:`Location` for ``pc`` (fields None where unknown)."""
        fn = self.function(pc)
        ln = self.line(pc)
        return Location(pc, fn[0] if fn else None, fn[1] if fn else 0,
                        ln[0] if ln else None, ln[1] if ln else None)

    def describe(self, pc: int) -> str:
        """``"func+0x8 (file.c:12)"``, or as much of it as is known, or the hex pc."""
        return str(self.locate(pc))

    def __bool__(self) -> bool:
        return bool(self._funcs or self._rows)


def _file_names(lp) -> list[str]:
    """The line program's file table as display names (base name when the directory is the
    compilation directory, otherwise ``dir/name``)."""
    hdr = lp.header
    dirs = [d.decode(errors="replace") if isinstance(d, bytes) else str(d)
            for d in (hdr.get("include_directory") or [])]
    v5 = hdr.version >= 5
    out = []
    for fe in hdr.get("file_entry") or []:
        name = fe.name.decode(errors="replace") if isinstance(fe.name, bytes) else str(fe.name)
        di = fe.dir_index
        d = None
        if v5:
            d = dirs[di] if 0 < di < len(dirs) else None
        elif di > 0 and di - 1 < len(dirs):
            d = dirs[di - 1]
        out.append(name if d is None or os.path.isabs(name) else os.path.join(d, name))
    return [_short(n) for n in out]


def _short(path: str) -> str:
    """A path relative to the current directory when it lies below it, else as given."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


_CACHE: dict = {}


def source_map(image_or_path) -> SourceMap:
    """The (cached) :class:`SourceMap` of an ELF path or of an Image's ``path``."""
    path = getattr(image_or_path, "path", image_or_path)
    if path is None:
        return SourceMap()
    key = os.path.abspath(os.fspath(path))
    try:
        stamp = os.stat(key).st_mtime_ns
    except OSError:
        return SourceMap()
    hit = _CACHE.get(key)
    if hit is None or hit[0] != stamp:
        hit = (stamp, SourceMap.from_elf(key))
        _CACHE[key] = hit
    return hit[1]
