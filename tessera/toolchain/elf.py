"""Load a Tessera ELF: PT_LOAD segments, entry point, symbols (pyelftools).

Spec: docs/architecture.md section 11 — ELF32 little-endian RISC-V linked at address 0;
the image (all PT_LOAD segments, including their zero-filled ``.bss`` part) plus one stack
per context must fit the tile SRAM.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.elffile import ELFFile

from tessera.spec.config import ArrayConfig

from . import ToolchainError
from .header import DEFAULT_STACK_BYTES, ENGINE_SECTION, XLATENCY_SECTION

__all__ = ["Image", "Segment", "Symbol", "load_elf", "ElfError", "ProgramTooBig",
           "XLatencyMismatch", "StackSizeError", "MIN_STACK_BYTES", "STACK_ALIGN",
           "EF_RISCV_RVC", "check_stack_bytes"]

_ELF_MAGIC = b"\x7fELF"
#: ``e_flags`` bit of an ELF whose code may contain compressed (RVC, 16-bit) instructions.
EF_RISCV_RVC = 0x0001
#: Stack bytes per context: a multiple of the RISC-V psABI stack alignment ...
STACK_ALIGN = 16
#: ... and at least this many (crt0 + ``main``'s frame + a few calls; the graph compiler's rule).
MIN_STACK_BYTES = 256


class ElfError(ToolchainError):
    """The file is missing, not an ELF, or not a 32-bit little-endian RISC-V executable."""


class ProgramTooBig(ToolchainError):
    """The image plus the context stacks do not fit the tile SRAM (see :meth:`Image.check_fits`)."""


class XLatencyMismatch(ToolchainError):
    """The program was compiled for another exchange latency (see :meth:`Image.check_xlatency`)."""


class EngineMismatch(ToolchainError):
    """The program was compiled for another matrix-engine P (see :meth:`Image.check_engine`)."""


class StackSizeError(ToolchainError):
    """The per-context stack size (``__stack_bytes``) is too small or misaligned."""


def check_stack_bytes(n, where: str) -> None:
    """Raise :class:`StackSizeError` unless ``n`` is a valid stack size per context.

    Parameters
    ----------
    n : int
        Stack bytes per context (``TSR_SET_STACK_BYTES(n)``, ``compile_graph(stack_bytes=)``).
    where : str
        Prefix of the message (the program or call that set it).

    Raises
    ------
    StackSizeError
        ``n`` is not an int, is below :data:`MIN_STACK_BYTES` (0 would give every context
        the same stack) or is not a multiple of :data:`STACK_ALIGN` (the RISC-V stack
        pointer must stay 16-byte aligned).
    """
    if not isinstance(n, int) or isinstance(n, bool):
        raise StackSizeError(f"{where}: stack bytes per context must be an int, not {n!r}")
    if n < MIN_STACK_BYTES or n % STACK_ALIGN:
        why = (f"less than the minimum {MIN_STACK_BYTES}" if n < MIN_STACK_BYTES else
               f"not a multiple of {STACK_ALIGN} (the stack pointer must stay "
               f"{STACK_ALIGN}-byte aligned)")
        raise StackSizeError(
            f"{where}: stack size {n} bytes per context is {why}; use a multiple of "
            f"{STACK_ALIGN} of at least {MIN_STACK_BYTES} (TSR_SET_STACK_BYTES(n))")


@dataclass(frozen=True)
class Symbol:
    """One named ``.symtab`` entry.

    Parameters
    ----------
    name : str
    value : int
        ``st_value`` (a byte address for code and data).
    size : int
        ``st_size`` in bytes (0 when unknown, e.g. assembler labels).
    type : str
        ``st_info.type``: ``"STT_FUNC"``, ``"STT_OBJECT"``, ``"STT_NOTYPE"``, ...
    section : str or None
        Name of the section the symbol is defined in (None for absolute or undefined ones).
    """
    name: str
    value: int
    size: int
    type: str
    section: str | None


@dataclass(frozen=True)
class Segment:
    """One PT_LOAD segment.

    Parameters
    ----------
    addr : int
        Physical (load) byte address ``p_paddr``.
    data : bytes
        The file bytes (``p_filesz`` of them); written to ``addr`` by the loader.
    memsz : int
        Bytes the segment occupies in memory (≥ ``len(data)``; the tail is ``.bss``-like and
        is zeroed by crt0, not by the loader).
    """
    addr: int
    data: bytes
    memsz: int

    @property
    def end(self) -> int:
        """First byte address after the segment in memory."""
        return self.addr + self.memsz


@dataclass
class Image:
    """A loaded program.

    Attributes
    ----------
    path : str
        Where it came from (for messages).
    entry : int
        ``e_entry`` byte address (0 for programs linked by ``tessera/toolchain/link.ld``).
    segments : list of Segment
        PT_LOAD segments in file order.
    symbols : dict of str to int
        Values of the named symbols in ``.symtab`` (absolute symbols such as
        ``__stack_bytes`` included).
    xlatency : tuple of int
        The distinct ``TSR_XLATENCY`` values recorded in section ``.tessera.xlatency`` by
        ``tsr_set_xprog`` (sorted; empty if the program sets no exchange program through
        tessera.h). Architecture §11.
    flags : int
        ELF ``e_flags`` (:data:`EF_RISCV_RVC` = compressed instructions).
    symbol_table : dict of str to Symbol
        The same symbols with size, type and section (for ``--load`` and source maps).
    engine_macs : tuple of int
        The distinct ``TSR_ENGINE_MACS`` values recorded in section ``.tessera.engine`` by
        ``tsr_mrun`` (sorted; empty if the program starts no engine command through
        tessera.h). Architecture §11.
    """
    path: str
    entry: int
    segments: list[Segment]
    symbols: dict[str, int] = field(default_factory=dict)
    xlatency: tuple = ()
    flags: int = 0
    symbol_table: dict = field(default_factory=dict)
    engine_macs: tuple = ()

    @property
    def end(self) -> int:
        """First byte after the image: max of the segment ends and the ``__image_end`` symbol."""
        ends = [s.end for s in self.segments]
        if "__image_end" in self.symbols:
            ends.append(self.symbols["__image_end"])
        return max(ends, default=0)

    @property
    def stack_bytes(self) -> int:
        """Stack bytes per context: the ``__stack_bytes`` symbol, or 1 KiB (spec §11)."""
        return self.symbols.get("__stack_bytes", DEFAULT_STACK_BYTES)

    @property
    def start(self) -> int:
        """Lowest load address of the image (0 for programs linked by ``link.ld``)."""
        return min((s.addr for s in self.segments), default=0)

    def check_format(self) -> None:
        """Raise :class:`ElfError` unless the program is built the way Tessera runs it.

        Checked (architecture §11): the image is linked at address 0 (its lowest PT_LOAD
        segment starts there) and its ``e_flags`` do not announce compressed (RVC)
        instructions, which the RV32IM cores do not decode.
        """
        if self.start != 0:
            raise ElfError(
                f"{self.path}: program is linked at address {self.start:#x}, not 0; Tessera "
                f"programs are linked at address 0 (tessera cc uses tessera/toolchain/link.ld)")
        if self.flags & EF_RISCV_RVC:
            raise ElfError(
                f"{self.path}: ELF is built with compressed instructions (RVC, e_flags "
                f"{self.flags:#x}); Tessera cores are RV32IM without C: build it with "
                f"tessera cc (-mcpu=generic_rv32+m), not with the C extension")

    def check_stack(self) -> None:
        """Raise :class:`StackSizeError` unless ``__stack_bytes`` is a valid stack size
        (see :func:`check_stack_bytes`; programs without the symbol use the default)."""
        if "__stack_bytes" in self.symbols:
            check_stack_bytes(self.stack_bytes, f"{self.path}: TSR_SET_STACK_BYTES")

    def check_runnable(self, config: ArrayConfig) -> None:
        """All loader checks before a run: :meth:`check_format`, :meth:`check_stack`,
        :meth:`check_fits`, :meth:`check_xlatency` and :meth:`check_engine`."""
        self.check_format()
        self.check_stack()
        self.check_fits(config)
        self.check_xlatency(config)
        self.check_engine(config)

    def symbol(self, name: str) -> Symbol:
        """The :class:`Symbol` ``name``.

        Raises
        ------
        ElfError
            No such symbol; the message lists a few data symbols of the program.
        """
        sym = self.symbol_table.get(name)
        if sym is None:
            data = sorted(s.name for s in self.symbol_table.values()
                          if s.type == "STT_OBJECT" and not s.name.startswith("__"))
            hint = f"; its data symbols: {', '.join(data[:12])}" if data else ""
            raise ElfError(f"{self.path}: no symbol {name!r}{hint}")
        return sym

    def bytes_needed(self, config: ArrayConfig, stack_bytes: int | None = None) -> int:
        """SRAM bytes the program needs per tile: image end + ``contexts`` stacks."""
        sb = self.stack_bytes if stack_bytes is None else stack_bytes
        return self.end + config.contexts * sb

    def check_fits(self, config: ArrayConfig, stack_bytes: int | None = None) -> None:
        """Raise :class:`ProgramTooBig` unless the image and T stacks fit every tile's SRAM.

        Parameters
        ----------
        config : ArrayConfig
            The target array (its ``contexts`` and ``sram_bytes`` matter).
        stack_bytes : int, optional
            Stack bytes per context; default :attr:`stack_bytes`.

        Raises
        ------
        ProgramTooBig
            Message names the tile (every tile holds the same SPMD image, so tile 0 is the
            first that fails), the bytes needed and the bytes available.
        """
        sb = self.stack_bytes if stack_bytes is None else stack_bytes
        if not isinstance(sb, int) or sb < 0:
            raise ValueError(f"stack_bytes must be a non-negative int, not {sb!r}")
        need = self.end + config.contexts * sb
        if need > config.sram_bytes:
            raise ProgramTooBig(
                f"{self.path}: program does not fit tile 0: needs {need} bytes "
                f"(image {self.end} + {config.contexts} contexts x {sb} stack bytes), "
                f"available {config.sram_bytes} bytes of SRAM")

    def check_xlatency(self, config: ArrayConfig) -> None:
        """Raise :class:`XLatencyMismatch` if the program was built for another latency L.

        Programs that schedule exchange through tessera.h (``tsr_set_xprog``) record the
        ``TSR_XLATENCY`` they were compiled with (architecture §11); their exchange
        schedules are wrong on an array with another ``exchange_latency``. Programs with
        no record (no exchange) run on any latency.

        Raises
        ------
        XLatencyMismatch
            Message names the program, the latency it was built for and the array's.
        """
        want = config.exchange_latency
        if not self.xlatency or self.xlatency == (want,):
            return
        if len(self.xlatency) > 1:
            built = "mixed latencies " + "/".join(map(str, self.xlatency))
        else:
            built = f"exchange latency {self.xlatency[0]}"
        raise XLatencyMismatch(
            f"{self.path}: program was compiled for {built} (TSR_XLATENCY) but the array has "
            f"exchange latency {want}; recompile with `tessera cc -DTSR_XLATENCY={want}` or "
            f"run with --xlatency {self.xlatency[0]}")

    def check_engine(self, config: ArrayConfig) -> None:
        """Raise :class:`EngineMismatch` if the program was built for another engine P.

        Programs that start engine commands through tessera.h (``tsr_mrun``) record the
        ``TSR_ENGINE_MACS`` they were compiled with (architecture §11): their descriptors
        use up to P/8 channels per command, which engine-faults on a smaller engine and
        wastes lanes on a larger one, and ``mrun`` is illegal without an engine. Programs
        with no record run on any P.

        Raises
        ------
        EngineMismatch
            Message names the program, the P it was built for and the array's.
        """
        want = config.engine_macs
        if not self.engine_macs or self.engine_macs == (want,):
            return
        built = ("mixed engine_macs " + "/".join(map(str, self.engine_macs))
                 if len(self.engine_macs) > 1 else f"engine_macs {self.engine_macs[0]}")
        have = f"engine_macs {want}" if want else "no matrix engine (engine_macs 0)"
        raise EngineMismatch(
            f"{self.path}: program was compiled for {built} (TSR_ENGINE_MACS: matrix-engine "
            f"MACs per cycle) but the array has {have}; recompile with `tessera cc "
            f"--engine-macs {want}` or run with --engine-macs {self.engine_macs[0]}")

    def flat(self, size: int | None = None) -> bytes:
        """The image as one byte string from address 0 (gaps and ``.bss`` zero)."""
        n = self.end if size is None else size
        buf = bytearray(n)
        for s in self.segments:
            buf[s.addr:s.addr + len(s.data)] = s.data[:max(0, n - s.addr)]
        return bytes(buf[:n])


def load_elf(path) -> Image:
    """Read a Tessera ELF.

    Parameters
    ----------
    path : str or path-like
        The ELF file.

    Returns
    -------
    Image

    Raises
    ------
    ElfError
        The file does not exist, is not an ELF, is not ELF32, not little-endian, not
        RISC-V, is not an executable (e.g. a ``.o``), or has no PT_LOAD segment. The
        message starts with the path.
    """
    p = Path(path)
    if not p.exists():
        raise ElfError(f"{p}: no such file")
    if not p.is_file():
        raise ElfError(f"{p}: not a regular file")
    raw = p.read_bytes()
    if raw[:4] != _ELF_MAGIC:
        raise ElfError(f"{p}: not an ELF file (bad magic {raw[:4]!r})")
    if len(raw) < 6 or raw[4] != 1:
        raise ElfError(f"{p}: not a 32-bit ELF (EI_CLASS={raw[4] if len(raw) > 4 else '?'}); "
                       "Tessera runs ELF32 RISC-V programs")
    if raw[5] != 1:
        raise ElfError(f"{p}: big-endian ELF; Tessera is little-endian")
    try:
        elf = ELFFile(io.BytesIO(raw))
        machine = elf["e_machine"]
        if machine != "EM_RISCV":
            raise ElfError(f"{p}: ELF for {machine}, not RISC-V")
        if elf["e_type"] != "ET_EXEC":
            raise ElfError(f"{p}: ELF type {elf['e_type']}, expected an executable (ET_EXEC); "
                           "link it with `tessera cc`")
        segs = []
        for seg in elf.iter_segments():
            if seg["p_type"] != "PT_LOAD" or seg["p_memsz"] == 0:
                continue
            segs.append(Segment(int(seg["p_paddr"]), bytes(seg.data()), int(seg["p_memsz"])))
        symbols, table = {}, {}
        symtab = elf.get_section_by_name(".symtab")
        if symtab is not None:
            for sym in symtab.iter_symbols():
                if sym.name and sym["st_info"]["type"] != "STT_FILE":
                    symbols[sym.name] = int(sym["st_value"])
                    shndx = sym["st_shndx"]
                    sec = (elf.get_section(shndx).name if isinstance(shndx, int) and shndx > 0
                           else None)
                    table[sym.name] = Symbol(sym.name, int(sym["st_value"]),
                                             int(sym["st_size"]), sym["st_info"]["type"], sec)
        flags = int(elf.header["e_flags"])
        entry = int(elf.header["e_entry"])
        xlat, emacs = (), ()
        note = elf.get_section_by_name(XLATENCY_SECTION)
        if note is not None:
            raw_note = note.data()
            xlat = tuple(sorted({int.from_bytes(raw_note[i:i + 4], "little")
                                 for i in range(0, len(raw_note) - 3, 4)}))
        note = elf.get_section_by_name(ENGINE_SECTION)
        if note is not None:
            raw_note = note.data()
            emacs = tuple(sorted({int.from_bytes(raw_note[i:i + 4], "little")
                                  for i in range(0, len(raw_note) - 3, 4)}))
    except ElfError:
        raise
    except (ELFError, ValueError, KeyError, IndexError, OSError) as e:  # truncated / corrupt
        raise ElfError(f"{p}: corrupt ELF file ({e})") from None
    if not segs:
        raise ElfError(f"{p}: ELF has no loadable (PT_LOAD) segment")
    return Image(str(p), entry, segs, symbols, xlat, flags, table, emacs)
