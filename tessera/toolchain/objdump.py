"""``tessera objdump``: disassemble a Tessera ELF with its symbols (and source lines).

Every executable section is disassembled word by word with
:func:`tessera.toolchain.disasm.disasm`; each function or label symbol starts a block
``00000040 <main>:``, branch and jump targets name their symbol (``<f+0x10>``), and with
``source=True`` each instruction whose source line changes is preceded by ``file:line``
(DWARF line program, :mod:`tessera.toolchain.debuginfo`).
"""

from __future__ import annotations

import bisect
import io
import re
from pathlib import Path

from .debuginfo import SourceMap
from .disasm import disasm
from .elf import load_elf

__all__ = ["objdump"]

_TARGET = re.compile(r"^(?:jal|b\w+) .*,(0x[0-9a-f]+)$")


def _labels(image) -> tuple[list[int], list[str]]:
    """Code labels (functions and untyped symbols) sorted by address."""
    pairs = sorted({(s.value, s.name) for s in image.symbol_table.values()
                    if s.type in ("STT_FUNC", "STT_NOTYPE") and s.section is not None
                    and not s.name.startswith(".L") and not s.name.startswith("$")})
    return [a for a, _ in pairs], [n for _, n in pairs]


def objdump(path, *, source: bool = False) -> str:
    """The disassembly of the ELF at ``path`` as text.

    Parameters
    ----------
    path : str or path-like
        A Tessera ELF (as accepted by :func:`tessera.toolchain.elf.load_elf`).
    source : bool
        Interleave ``file:line`` lines from the DWARF line program.

    Returns
    -------
    str

    Raises
    ------
    ElfError
        Not a readable Tessera ELF (message from :func:`load_elf`).
    """
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile
    image = load_elf(path)
    raw = Path(path).read_bytes()
    elf = ELFFile(io.BytesIO(raw))
    addrs, names = _labels(image)
    by_addr: dict[int, list[str]] = {}
    for a, n in zip(addrs, names):
        by_addr.setdefault(a, []).append(n)
    smap = SourceMap.from_elf(path) if source else None

    def sym_of(target: int) -> str | None:
        i = bisect.bisect_right(addrs, target) - 1
        if i < 0:
            return None
        off = target - addrs[i]
        return names[i] + (f"+{off:#x}" if off else "")

    out = [f"{path}:     file format elf32-littleriscv (Tessera RV32IM), entry {image.entry:#x}"]
    for sec in elf.iter_sections():
        if not sec["sh_flags"] & SH_FLAGS.SHF_EXECINSTR or sec["sh_type"] == "SHT_NOBITS":
            continue
        base, data = int(sec["sh_addr"]), sec.data()
        out += ["", f"Disassembly of section {sec.name}:"]
        last_line = None
        for off in range(0, len(data) - len(data) % 4, 4):
            pc = base + off
            for n in by_addr.get(pc, ()):
                out += ["", f"{pc:08x} <{n}>:"]
            if smap is not None:
                ln = smap.line(pc)
                if ln is not None and ln != last_line:
                    out.append(f"; {ln[0]}:{ln[1]}")
                    last_line = ln
            w = int.from_bytes(data[off:off + 4], "little")
            text = disasm(w, pc)
            m = _TARGET.match(text)
            if m:
                tgt = int(m.group(1), 16)
                s = sym_of(tgt)
                if s:
                    text += f" <{s}>"
            out.append(f"{pc:8x}:\t{w:08x}\t{text}")
        if len(data) % 4:
            out.append(f"{base + len(data) - len(data) % 4:8x}:\t"
                       f"({len(data) % 4} trailing byte(s) not disassembled)")
    return "\n".join(out) + "\n"

