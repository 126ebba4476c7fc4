"""``tessera exec``: load an ELF into every tile, run it on a backend, summarise, write JSON.

Spec: docs/architecture.md sections 7 (status, exit codes), 10 (run result JSON) and 11
(loader checks).
"""

from __future__ import annotations

import json
from pathlib import Path

from tessera.backends import run_program_io
from tessera.spec.config import ArrayConfig, preset as lookup_preset
from tessera.output import write_output
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState, RunResult, RunStatus

from . import ToolchainError
from .elf import Image, load_elf

__all__ = ["resolve_config", "exec_program", "summarize", "DEFAULT_PRESET", "DEFAULT_MAX_CYCLES",
           "UsageError", "parse_load", "resolve_loads", "signed32", "TRACE_BACKENDS",
           "describe_pc", "format_ranges"]

DEFAULT_PRESET = "small"
DEFAULT_MAX_CYCLES = 1_000_000
#: At most this many per-tile rows (groups of identical tiles) are printed by the summary.
SUMMARY_MAX_TILES = 16
#: Backends that can write ``--trace`` (the golden model's retire trace).
TRACE_BACKENDS = ("model",)
#: Cycles simulated between two flushes of the trace to its file.
TRACE_CHUNK_CYCLES = 4096


class UsageError(ToolchainError):
    """Bad command-line input (unknown preset, out-of-range number, ...): CLI exit 2."""


def resolve_config(preset: str | None = None, *, tiles=None, contexts=None, sram_bytes=None,
                   xlatency=None, engine_macs=None) -> ArrayConfig:
    """Build the target :class:`ArrayConfig` from a preset name and/or explicit fields.

    Parameters
    ----------
    preset : str, optional
        A name from :data:`tessera.spec.config.PRESETS`; default ``small`` when no field is given,
        otherwise the :class:`ArrayConfig` defaults.
    tiles, contexts, sram_bytes, xlatency, engine_macs : int, optional
        Override the preset's ``tiles``, ``contexts``, ``sram_bytes``, ``exchange_latency``,
        ``engine_macs`` (0 = no matrix engine).

    Raises
    ------
    UsageError
        Unknown preset or a field out of range (message from :class:`ArrayConfig`).
    """
    overrides = {k: v for k, v in (("tiles", tiles), ("contexts", contexts),
                                   ("sram_bytes", sram_bytes), ("exchange_latency", xlatency),
                                   ("engine_macs", engine_macs))
                 if v is not None}
    try:
        if preset is not None:
            base = lookup_preset(preset)
        elif overrides:
            base = ArrayConfig()
        else:
            base = lookup_preset(DEFAULT_PRESET)
        return base.replace(**overrides) if overrides else base
    except (ValueError, TypeError) as e:
        raise UsageError(str(e)) from None


def signed32(v: int | None) -> int | None:
    """A 32-bit register value (e.g. an exit code) as a signed int; None stays None."""
    if v is None:
        return None
    v = int(v) & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


def parse_load(spec: str) -> tuple[int | None, str, str]:
    """Parse a ``--load TILE:SYMBOL=FILE`` argument.

    Parameters
    ----------
    spec : str
        ``TILE`` is a tile index or ``all`` (every tile); ``SYMBOL`` a data symbol of the
        program's ``.noinit`` section; ``FILE`` a binary file (its bytes are written as is).

    Returns
    -------
    (tile or None for all tiles, symbol, file path)

    Raises
    ------
    UsageError
        The argument does not have the form ``TILE:SYMBOL=FILE``.
    """
    form = f"--load {spec!r}: expected TILE:SYMBOL=FILE (e.g. 0:input=data.bin or all:input=data.bin)"
    head, eq, path = spec.partition("=")
    tile_s, colon, sym = head.partition(":")
    if not eq or not colon or not path or not sym.strip() or not tile_s.strip():
        raise UsageError(form)
    tile_s, sym = tile_s.strip(), sym.strip()
    if tile_s == "all":
        return None, sym, path
    try:
        tile = int(tile_s, 0)
    except ValueError:
        raise UsageError(f"{form}; tile {tile_s!r} is not a number") from None
    return tile, sym, path


def resolve_loads(image: Image, config: ArrayConfig, specs) -> list[tuple[int, int, bytes]]:
    """Turn ``--load`` arguments into preload writes ``(tile, addr, data)``.

    Each symbol must be a data object in the program's ``.noinit`` section (data the host
    places per tile before the start; architecture §11 — ``.bss`` would be zeroed by crt0)
    and the file must not be larger than the symbol. A shorter file fills the start of the
    symbol; the rest keeps its previous content (zero on a fresh array).

    Raises
    ------
    UsageError
        Bad form, tile out of range, unknown symbol, symbol not in ``.noinit``, file
        missing/unreadable, or file larger than the symbol (each message names the
        argument and what is wrong).
    """
    from .elf import ElfError
    out = []
    for spec in specs or ():
        tile, name, path = parse_load(spec)
        where = f"--load {spec}"
        if tile is not None and not 0 <= tile < config.tiles:
            raise UsageError(f"{where}: tile {tile} out of range 0..{config.tiles - 1}")
        try:
            sym = image.symbol(name)
        except ElfError as e:
            raise UsageError(f"{where}: {e}") from None
        if sym.section != ".noinit":
            where_now = sym.section or "no section"
            raise UsageError(
                f"{where}: symbol {name!r} is in {where_now}, not .noinit; declare it "
                f"__attribute__((section(\".noinit\"))) so crt0 leaves it alone"
                + (" (.bss is zeroed by crt0 after the load)" if where_now == ".bss" else ""))
        try:
            data = Path(path).read_bytes()
        except OSError as e:
            raise UsageError(f"{where}: cannot read {path}: {e.strerror}") from None
        if len(data) > sym.size:
            raise UsageError(f"{where}: {path} has {len(data)} bytes but symbol {name!r} has "
                             f"{sym.size} bytes")
        for t in (range(config.tiles) if tile is None else (tile,)):
            out.append((t, sym.value, data))
    return out


def _run_traced(config, image, max_cycles, preload, readback, trace_out):
    """Run on the golden model with its retire trace on, streaming JSON lines to ``trace_out``."""
    from tessera.golden_model import Array
    from .disasm import disasm
    arr = Array(config, trace=True)
    for seg in image.segments:
        if seg.data:
            arr.write_mem(None, seg.addr, bytes(seg.data))
    for tile, addr, data in preload:
        arr.write_mem(tile, addr, bytes(data))
    arr.start(entry=image.entry)
    try:
        fh = open(trace_out, "w", encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write --trace {trace_out}: {e.strerror}") from None
    with fh:
        limit = 0
        while True:
            limit = min(max_cycles, limit + TRACE_CHUNK_CYCLES)
            result = arr.run(limit)
            for rec in arr.trace:
                rec = dict(rec)
                rec["asm"] = disasm(int(rec["insn"]), pc=int(rec["pc"]))
                fh.write(json.dumps(rec) + "\n")
            arr.trace.clear()
            if RunStatus(result.status) != RunStatus.TIMEOUT or limit >= max_cycles:
                break
    data = [bytes(arr.read_mem(tile, addr, n)) for tile, addr, n in readback]
    result.backend = "model"
    return result, data


def exec_program(program, config: ArrayConfig, *, backend: str = "model",
                 max_cycles: int = DEFAULT_MAX_CYCLES, json_out=None, preload=(),
                 readback=(), trace_out=None) -> tuple[RunResult, list[bytes]]:
    """Load ``program`` SPMD into every tile, run it and optionally write the JSON result.

    Parameters
    ----------
    program : str, path-like or Image
        ELF path or an already loaded :class:`tessera.toolchain.elf.Image`.
    config : ArrayConfig
    backend : str
        Backend name (:mod:`tessera.backends`).
    max_cycles : int
        Cycle limit, ≥ 1.
    json_out : str or path-like, optional
        Where to write ``RunResult.to_json()`` (architecture §10); ``-`` for stdout.
    preload, readback
        See :func:`tessera.backends.run_program_io`.
    trace_out : str or path-like, optional
        Write the golden model's retire trace here, one JSON object per retired instruction
        (keys of :attr:`tessera.golden_model.Array.trace` plus ``asm``, the disassembly),
        in retire order. Only for ``backend="model"`` (:data:`TRACE_BACKENDS`).

    Returns
    -------
    (RunResult, list of bytes)

    Raises
    ------
    ElfError, ProgramTooBig, StackSizeError, XLatencyMismatch
        The loader checks of :meth:`tessera.toolchain.elf.Image.check_runnable`.
    UsageError
        ``max_cycles`` < 1, or a trace on a backend that cannot trace.
    tessera.backends.BackendError
        Unknown/unavailable backend.
    """
    image = program if isinstance(program, Image) else load_elf(program)
    image.check_runnable(config)
    if not isinstance(max_cycles, int) or max_cycles < 1:
        raise UsageError(f"--max-cycles must be a positive integer, not {max_cycles!r}")
    if trace_out is not None:
        if backend not in TRACE_BACKENDS:
            raise UsageError(f"--trace needs --backend model (the golden model's retire trace); "
                             f"the {backend} backend records no per-instruction trace here")
        result, data = _run_traced(config, image, max_cycles, preload, readback, trace_out)
    else:
        result, data = run_program_io(backend, config, image, max_cycles, preload=preload,
                                      readback=readback)
    if json_out is not None:
        write_output(json_out, result.dumps(), error=UsageError)
    return result, data


def describe_pc(pc: int, image=None) -> str:
    """``0x5c`` plus `` in f+0x10 (prog.c:4)`` when ``image``'s ELF knows the address."""
    text = f"{int(pc):#x}"
    if image is not None:
        from .debuginfo import source_map
        loc = source_map(image).locate(int(pc))
        if loc.function or loc.line:
            text += f" in {loc}"
    return text


def _tile_cells(t) -> tuple[str, list[str]]:
    cells = [str(signed32(c.exit_code)) if c.exit_code is not None else c.to_json()["state"]
             for c in t.contexts]
    label = ("exit codes" if all(c.exit_code is not None for c in t.contexts)
             else "context states")   # running/waiting contexts (timeout) have no code
    return label, cells


def summarize(result: RunResult, *, max_tiles: int = SUMMARY_MAX_TILES, image=None) -> str:
    """A short human summary: status, cycles, faults, where contexts stopped, exit codes.

    Parameters
    ----------
    result : RunResult
    max_tiles : int
        At most this many per-tile rows; consecutive tiles with the same exit codes (or
        context states) share one row (``tiles 4-63: ...``), and when rows are left out the
        summary says how many tiles it did not show.
    image : Image, optional
        The program; fault and timeout pcs then name the function and ``file:line``.

    Exit codes are shown as signed 32-bit values (``return -1`` shows ``-1``); the JSON
    keeps the register value (architecture §10).
    """
    cfg = result.config
    status = RunStatus(result.status)
    lines = [f"status: {status.value}   cycles: {result.cycles}   "
             f"array: {cfg.name} ({cfg.tiles} tile{'s' if cfg.tiles != 1 else ''} x "
             f"{cfg.contexts} contexts, "
             f"{cfg.sram_bytes // 1024} KiB, L={cfg.exchange_latency})   backend: {result.backend}"]
    retired = sum(int(t.counters["retired"]) for t in result.tiles)
    macs = sum(int(t.counters["macs"]) for t in result.tiles)
    lines.append(f"retired: {retired}   macs: {macs}")
    for t in result.tiles:
        if t.fault is not None:
            f = t.fault.to_json()
            ctx = "none (exchange)" if f["context"] is None else f["context"]
            lines.append(f"tile {t.tile}: FAULT {f['cause']} context={ctx} "
                         f"pc={describe_pc(f['pc'], image if f['context'] is not None else None)} "
                         f"addr={f['addr']:#x}")
            if f["cause"] == FaultCause.STACK_OVERFLOW.label:
                lines.append("  " + stack_overflow_text(cfg, f["context"], f["addr"], image))
    if status == RunStatus.TIMEOUT:
        running = [(t.tile, c) for t in result.tiles for c in t.contexts
                   if c.state == ContextState.RUNNING]
        lines.append(f"timeout: the run did not end within {result.cycles} cycles "
                     f"(--max-cycles); {len(running)} context(s) still running"
                     + (":" if running else ""))
        for tile, c in running[:8]:
            lines.append(f"  tile {tile} context {c.context} at pc={describe_pc(c.pc, image)}")
        if len(running) > 8:
            lines.append(f"  ... and {len(running) - 8} more running contexts (see --json)")
    if result.not_arrived:
        lines.append(f"not arrived at the ARRAY barrier: tiles {format_ranges(result.not_arrived)}")
    rows = []
    for t in result.tiles:
        label, cells = _tile_cells(t)
        if rows and rows[-1][2] == label and rows[-1][3] == cells and rows[-1][1] == t.tile - 1:
            rows[-1][1] = t.tile
        else:
            rows.append([t.tile, t.tile, label, cells])
    for lo, hi, label, cells in rows[:max_tiles]:
        which = f"tile {lo}" if lo == hi else f"tiles {lo}-{hi}"
        lines.append(f"{which}: {label} [{', '.join(cells)}]")
    if len(rows) > max_tiles:
        hidden = sum(hi - lo + 1 for lo, hi, _, _ in rows[max_tiles:])
        lines.append(f"... exit codes of {hidden} more tile(s) (tiles {rows[max_tiles][0]}-"
                     f"{rows[-1][1]}) not shown; --json has every context")
    return "\n".join(lines)


def stack_overflow_text(cfg, context: int, addr: int, image=None) -> str:
    """Explain a ``stack_overflow`` fault of ``context`` (architecture §7, crt0 of §11).

    Parameters
    ----------
    cfg : ArrayConfig
    context : int
    addr : int
        The fault address: the value sp would have received.
    image : Image, optional
        Gives the stack size (``__stack_bytes``); the crt0 default (1 KiB) otherwise.

    Returns
    -------
    str
        E.g. ``stack overflow: context 2's stack is 1024 bytes [0xf400, 0xf800); sp would
        have become 0xf3f0, 16 bytes below it``.
    """
    from .header import DEFAULT_STACK_BYTES
    size = image.stack_bytes if image is not None and hasattr(image, "stack_bytes") \
        else DEFAULT_STACK_BYTES
    top = cfg.sram_bytes - context * size
    lo = top - size
    below = lo - addr
    depth = f", {below} bytes below it" if 0 < below < cfg.sram_bytes else ""
    return (f"stack overflow: context {context}'s stack is {size} bytes [{lo:#x}, {top:#x}) "
            f"(crt0 sets stack_limit = {lo:#x}); sp would have become {addr:#x}{depth}. "
            "Reduce the frame (large local arrays, deep recursion) or raise the stack size "
            "(TSR_SET_STACK_BYTES(n) / compile_graph(stack_bytes=n))")


def format_ranges(tiles) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    out, tiles = [], sorted(tiles)
    i = 0
    while i < len(tiles):
        j = i
        while j + 1 < len(tiles) and tiles[j + 1] == tiles[j] + 1:
            j += 1
        out.append(str(tiles[i]) if i == j else f"{tiles[i]}-{tiles[j]}")
        i = j + 1
    return ", ".join(out)


def load_json(path) -> dict:
    """Read a JSON run result written by :func:`exec_program` (helper for tests/tools)."""
    return json.loads(Path(path).read_text())
