"""Seeded random instruction streams for every context of every tile.

Layout of one tile's SRAM (all contexts start at ``entry = 0``)::

    0x0000   dispatch: t0 = context_id; t1 = table[t0]; jalr x0, 0(t1)
    table    T words: the start address of each context's block
    blocks   per context: init (corner values, window base in x31, loop counter in x30),
             a random body of ``body_len`` words run ``iterations`` times (one backward
             loop branch), then ``ecall`` -- or, with ``fault``, a faulting instruction
             in one chosen context
    windows  per context a ``WINDOW_BYTES`` data window (random initial bytes in the image)

The body mixes RV32IM ALU / M ops (operands often refreshed with corner values 0, 1, -1,
INT_MIN, INT_MAX), loads and stores into the context's own window (x31 + aligned offset),
forward branches of every kind, forward ``jal``, CSR reads (and ``xprog`` writes), ``dot4`` /
``dot4su`` and ``fence``. x30 (loop counter) and x31 (window base) are never written by the
body. Every memory location a program reads is part of its image, so a program's behaviour
does not depend on what an earlier program left in SRAM.

Tiles get different streams (a different seed per tile) unless ``spmd=True``.

With ``engine=True`` (configurations with a matrix engine, architecture §12) the top
``ENGINE_BYTES`` of each tile hold a pool of valid random engine commands (descriptors of
every mode and flag, random strides of either sign, C ≤ M, short loop nests; their parameter
records, streamed and stationary operands) and an output area they write; the bodies then also
issue ``mrun`` of a random pool descriptor, ``mwait`` and loads from the output area (so the
engine's results reach the trace). ``fault="engine"`` ends one context with the ``mrun`` of a
bad descriptor (one of the checks of §12 "Engine faults") and an ``mwait``.
"""

from __future__ import annotations

import math
import random
import struct
from dataclasses import dataclass, field

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.faults import FaultCause
from tessera.spec.instructions import (FUNCT3_MEM_UNSIGNED_BIT, INSTRUCTIONS, Instruction, Kind,
                                       is_division)
from tessera.spec.engine import ChannelParams, Descriptor, Flag, Mode, command_steps
from tessera.spec.isa import DIV_TURNS

__all__ = ["RandomProgram", "generate", "CORNERS", "FAULT_KINDS", "WINDOW_BYTES",
           "ENGINE_BYTES", "engine_region"]

WINDOW_BYTES = 256
CORNERS = (0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0x80000001, 0xFFFFFFFE, 0x00008000,
           0xFFFF8000, 0x000000FF, 0x00000080)
#: Fault kinds for ``fault=``; each maps to the architectural cause it must raise.
FAULT_KINDS = {
    "illegal": FaultCause.ILLEGAL_INSTRUCTION,
    "ebreak": FaultCause.BREAKPOINT,
    "misaligned_load": FaultCause.MISALIGNED_LOAD,
    "access_fault_load": FaultCause.ACCESS_FAULT_LOAD,
    "misaligned_store": FaultCause.MISALIGNED_STORE,
    "access_fault_store": FaultCause.ACCESS_FAULT_STORE,
    "misaligned_fetch": FaultCause.MISALIGNED_FETCH,
    "access_fault_fetch": FaultCause.ACCESS_FAULT_FETCH,
}
_LOOP, _BASE = 30, 31
#: Bytes of the engine area at the top of each tile's SRAM (``engine=True``).
ENGINE_BYTES = 8192
_E_DESCS = 12              # pool descriptors (64 bytes each) + 1 bad one
_E_A, _E_W, _E_PAR, _E_DESC, _E_OUT = 0, 3072, 4608, 5120, 6144   # offsets in the area
#: K_GATHER tables (16 bytes per pool descriptor, k1 < 2) after the bad descriptor
_E_GATHER = _E_DESC + 64 * (_E_DESCS + 1)
_E_A_BYTES, _E_W_BYTES, _E_OUT_BYTES = 3072, 1536, 2048
#: With ``engine=True`` the bodies do not write these: x29 = the output area's base, x28 = a
#: pool descriptor address (only ever set by ``addi x28, x29, -1024 + 64k``), so a forward
#: branch into the middle of an engine sequence still runs a valid command.
_E_OUTREG, _E_DREG = 29, 28


def engine_region(config: ArrayConfig) -> tuple[int, int]:
    """(base, bytes) of the engine area (``engine=True``): operands, parameters, descriptors,
    the output area at base + 6144."""
    return config.sram_bytes - ENGINE_BYTES, ENGINE_BYTES


def _nest_span(base, strides_counts):
    """(lowest, highest) address of base + Σ i·s over i < n for (s, n) pairs."""
    lo = hi = base
    for s, n in strides_counts:
        d = s * (n - 1)
        lo, hi = lo + min(d, 0), hi + max(d, 0)
    return lo, hi


def finite_f32(word: int) -> int:
    """``word`` (int32) with bit 30 cleared if its exponent field is 255, so that as a FLOAT32
    multiplier (§12) it is finite and the command does not fault."""
    return word & ~(1 << 30) if (word >> 23) & 0xFF == 0xFF else word


def _engine_desc(rng: random.Random, cfg: ArrayConfig, base: int, k: int,
                 gather: list) -> Descriptor:
    """A random valid descriptor whose reads stay in the operand areas and whose writes stay
    in the output area; its parameter records at the k-th parameter slot; a ``K_GATHER``
    descriptor appends its table's (address, bytes) to ``gather``."""
    M = cfg.engine_lanes
    while True:
        c = rng.randint(1, M)
        mode = rng.choice((Mode.RAW, Mode.TFLITE, Mode.FLOAT32))
        flags = rng.randrange(4)
        j0, j1 = rng.choice(((1, 1), (rng.randint(1, 6), rng.randint(1, 3)),
                             (rng.randint(1, 12), 1)))
        k0, k1 = rng.randint(1, 3), rng.randint(1, 2)
        a_s0, a_s1 = 8 * rng.randint(-12, 12), 8 * rng.randint(-40, 40)
        ak_s1 = 8 * rng.randint(-8, 8)
        w_sm = 8 * rng.randint(-8, 8)
        ow = (c + 1) // 2 if mode == Mode.RAW else 1
        if mode == Mode.RAW:
            c_s0, c_s1 = 8 * rng.choice((ow, ow, -ow, rng.randint(-6, 6))), 8 * rng.randint(-30, 30)
            c_off = 0
        else:
            c_s0, c_s1 = 8 * rng.randint(-3, 3), 8 * rng.randint(-20, 20)
            c_off = rng.randint(0, 8 - c)
        # operand placement: pick bases so that every address is inside its area
        a_lo, a_hi = _nest_span(0, [(a_s0, j0), (a_s1, j1), (ak_s1, k1), (8, k0)])
        w_lo, w_hi = _nest_span(0, [(w_sm, c), (8, k0 * k1)])
        o_lo, o_hi = _nest_span(0, [(c_s0, j0), (c_s1, j1)])
        o_hi += 8 * ow
        if (a_hi - a_lo + 8 > _E_A_BYTES or w_hi - w_lo + 8 > _E_W_BYTES
                or o_hi - o_lo + 8 > _E_OUT_BYTES):
            continue
        a_base = base + _E_A - a_lo + 8 * rng.randrange((_E_A_BYTES - (a_hi - a_lo) - 8) // 8 + 1)
        w_base = base + _E_W - w_lo + 8 * rng.randrange((_E_W_BYTES - (w_hi - w_lo) - 8) // 8 + 1)
        c_base = (base + _E_OUT - o_lo
                  + 8 * rng.randrange((_E_OUT_BYTES - (o_hi - o_lo) - 8) // 8 + 1) + c_off)
        outu = bool(flags & Flag.OUT_UNSIGNED)
        lo, hi = (0, 255) if outu else (-128, 127)
        qa, qb = sorted((rng.randint(lo, hi), rng.randint(lo, hi)))
        if rng.random() < 0.2:
            qa, qb = lo, hi
        if rng.random() < 0.25:       # K_GATHER: the k1 offsets k1·ak_s1 in random order
            offs = [i * ak_s1 for i in range(k1)]
            rng.shuffle(offs)
            gt = base + _E_GATHER + 16 * k
            gather.append((gt, b"".join(struct.pack("<Ii", o & 0xFFFF_FFFF, rng.randint(
                -(1 << 31), (1 << 31) - 1)) for o in offs)))
            ak_s1, flags = gt, flags | Flag.K_GATHER
        return Descriptor(a_base=a_base, a_s0=a_s0, a_s1=a_s1, ak_s1=ak_s1, w_base=w_base,
                          w_sm=w_sm, c_base=c_base, c_s0=c_s0, c_s1=c_s1,
                          p_base=base + _E_PAR + 16 * M * (k % 2), J0=j0, J1=j1, K0=k0, K1=k1,
                          C=c, mode=mode, flags=flags, zp=rng.randint(lo, hi), qmin=qa, qmax=qb)


def _engine_bad(rng: random.Random, cfg: ArrayConfig, good: Descriptor, base: int):
    """(descriptor bytes, extra (addr, bytes) writes) of a command that faults (§12 checks)."""
    kind = rng.choice(("C", "J", "mode", "flags", "qrange", "shift", "fmult", "write", "read"))
    d = dict(good.__dict__)
    extra = []
    if kind == "C":
        d["C"] = rng.choice((0, cfg.engine_lanes + 1))
    elif kind == "J":
        d.update(J0=rng.choice((0, 17, 300)), J1=rng.choice((0, 16, 20)))
    elif kind == "mode":
        d["mode"] = rng.choice((3, 4, 255))
    elif kind == "flags":
        d["flags"] = d["flags"] | 8 << rng.randrange(5)
    elif kind == "qrange":
        d.update(mode=rng.choice((Mode.TFLITE, Mode.FLOAT32)), qmin=100,
                 qmax=rng.choice((-5, 300)))
    elif kind == "shift":
        d.update(mode=Mode.TFLITE, p_base=base + _E_PAR + 16 * cfg.engine_lanes * 2)
        recs = [ChannelParams(bias=1, multiplier=1 << 30, shift=0) for _ in range(d["C"])]
        recs[-1] = ChannelParams(bias=1, multiplier=1 << 30, shift=rng.choice((31, -32, 1000)))
        extra.append((d["p_base"], b"".join(r.pack() for r in recs)))
    elif kind == "fmult":        # FLOAT32: a binary32 infinity or NaN multiplier (check 3)
        d.update(mode=Mode.FLOAT32, p_base=base + _E_PAR + 16 * cfg.engine_lanes * 2)
        recs = [ChannelParams(bias=1, multiplier=0x3F000000, shift=0) for _ in range(d["C"])]
        bad = rng.choice((0x7F800000, 0xFF800000, 0x7FC00001, 0xFFFFFFFF))
        recs[-1] = ChannelParams(bias=1, multiplier=bad - (bad >> 31 << 32), shift=0)
        extra.append((d["p_base"], b"".join(r.pack() for r in recs)))
    elif kind == "write":
        d["c_base"] = rng.choice((cfg.sram_bytes, 0xFFFF_FFF8))
    else:
        d["a_base"] = rng.choice((cfg.sram_bytes, d["a_base"] + 4, 0x8000_0000))
    return Descriptor(**d).pack(), extra
_DEST = [r for r in range(1, 30)]


def _ops(kind: Kind, pick=lambda row: True, key=None) -> tuple:
    """The assembler functions of the table rows of ``kind`` (table order, or by ``key``)."""
    rows = [row for row in INSTRUCTIONS if row.kind is kind and pick(row)]
    return tuple(getattr(asm, row.py_name) for row in sorted(rows, key=key or rows.index))


def _shift(row: Instruction) -> bool:
    return any(o.name == "shamt" for o in row.operands)


def _mem_size(row: Instruction) -> int:
    return 1 << (row.funct3 & ~(1 << FUNCT3_MEM_UNSIGNED_BIT))


# Instruction groups, from the instruction table (a new row of one of these kinds is generated
# without a change here).
_R_OPS = _ops(Kind.OP)
_M_OPS = _ops(Kind.MULDIV)
_I_OPS = _ops(Kind.OP_IMM, lambda row: not _shift(row))
_SH_OPS = _ops(Kind.OP_IMM, _shift)
_BRANCHES = _ops(Kind.BRANCH)
_DOT4 = _ops(Kind.DOT4)
#: (function, access bytes) of the loads and stores; loads by size, signed before unsigned.
_LOADS = tuple((getattr(asm, row.py_name), _mem_size(row)) for row in sorted(
    (row for row in INSTRUCTIONS if row.kind is Kind.LOAD), key=lambda r: (_mem_size(r), r.funct3)))
_STORES = tuple((getattr(asm, row.py_name), _mem_size(row))
                for row in INSTRUCTIONS if row.kind is Kind.STORE)
_READ_CSRS = (Csr.CYCLE, Csr.CYCLEH, Csr.INSTRET, Csr.INSTRETH, Csr.TILE_ID, Csr.CONTEXT_ID,
              Csr.TILE_COUNT, Csr.CONTEXT_COUNT, Csr.SRAM_BYTES, Csr.XPROG)
_ILLEGAL_WORDS = (0x00000000, 0xFFFFFFFF, 0x0000100F, 0x00200073, 0x0000002B | 2 << 20,
                  0x0200000B | 2 << 12)


@dataclass
class RandomProgram:
    """A generated program.

    Attributes
    ----------
    config : ArrayConfig
    seed : int
    segments : list of (tile, addr, bytes)
        Everything to write into SRAM before the start (code, table and windows).
    entry : int
        Start pc of every context (0).
    static_instructions : int
        Words of random body over all tiles and contexts (x iterations ~ instructions run).
    fault : tuple or None
        ``(tile, context, kind)`` of the planted fault, or None.
    max_cycles : int
        A generous cycle limit for running it.
    """
    config: ArrayConfig
    seed: int
    segments: list = field(default_factory=list)
    entry: int = 0
    static_instructions: int = 0
    fault: tuple | None = None
    max_cycles: int = 0

    def job(self, name: str | None = None, *, trace: bool = False) -> dict:
        """The program as a :mod:`tessera.tb.cocotb_array` job."""
        return {"name": name or f"rand-{self.seed}",
                "segments": [[t, a, d.hex()] for t, a, d in self.segments],
                "entry": self.entry, "max_cycles": self.max_cycles, "trace": trace}


def _body(rng: random.Random, n: int, cfg: ArrayConfig, engine_base: int | None = None) -> list[int]:
    """``n`` random words; forward branches / jal never jump past word ``n``."""
    out: list[int] = []
    dests = _DEST if engine_base is None else [r for r in _DEST if r not in (_E_OUTREG, _E_DREG)]

    def room() -> int:
        return n - len(out)

    def src() -> int:
        return rng.randrange(32)

    while room() > 0:
        k = rng.random()
        rd = rng.choice(dests)
        if engine_base is not None and rng.random() < 0.05 and room() >= 2:
            e = rng.random()
            if e < 0.45:                       # mrun of a pool descriptor
                out += [asm.addi(_E_DREG, _E_OUTREG, _E_DESC - _E_OUT + 64 * rng.randrange(_E_DESCS)),
                        asm.mrun(_E_DREG)]
            elif e < 0.7:
                out.append(asm.mwait())
            else:                              # load from the engine's output area
                op, size = rng.choice(_LOADS)
                out.append(op(rd, rng.randrange(0, min(_E_OUT_BYTES, 2048), size), _E_OUTREG))
            continue
        if k < 0.12 and room() >= 3:          # corner operand refresh
            r = rng.choice(dests)
            words = asm.li(r, rng.choice(CORNERS))
            if len(words) <= room():
                out += words
            continue
        if k < 0.30:
            out.append(rng.choice(_R_OPS)(rd, src(), src()))
        elif k < 0.45:
            out.append(rng.choice(_M_OPS)(rd, src(), src()))
        elif k < 0.55:
            imm = rng.choice((0, -1, 2047, -2048, rng.randint(-2048, 2047)))
            out.append(rng.choice(_I_OPS)(rd, src(), imm))
        elif k < 0.59:
            out.append(rng.choice(_SH_OPS)(rd, src(), rng.randrange(32)))
        elif k < 0.61:
            out.append((asm.lui if rng.random() < 0.5 else asm.auipc)(rd, rng.randrange(1 << 20)))
        elif k < 0.69:                         # load from the own window
            op, size = rng.choice(_LOADS)
            out.append(op(rd, rng.randrange(0, WINDOW_BYTES, size), _BASE))
        elif k < 0.77:                         # store to the own window
            op, size = rng.choice(_STORES)
            out.append(op(src(), rng.randrange(0, WINDOW_BYTES, size), _BASE))
        elif k < 0.84 and room() >= 2:         # forward branch over 0..room-2 words
            skip = rng.randint(0, min(12, room() - 1))
            out.append(rng.choice(_BRANCHES)(src(), src(), 4 * (skip + 1)))
        elif k < 0.86 and room() >= 2:         # forward jal with link
            skip = rng.randint(0, min(6, room() - 1))
            out.append(asm.jal(rng.choice(dests + [0]), 4 * (skip + 1)))
        elif k < 0.91:
            csr = rng.choice(_READ_CSRS)
            out.append(asm.csrrs(rd, csr, 0) if rng.random() < 0.8 else asm.csrrsi(rd, csr, 0))
        elif k < 0.92:
            out.append(asm.csrrw(rng.choice(dests + [0]), Csr.XPROG, src()))
        elif k < 0.99:
            out.append(_DOT4[int(rng.random() * len(_DOT4))](rd, src(), src()))
        else:
            out.append(asm.fence())
    return out


def _fault_words(rng: random.Random, kind: str, cfg: ArrayConfig) -> list[int]:
    s = cfg.sram_bytes
    if kind == "illegal":
        return [rng.choice(_ILLEGAL_WORDS)]
    if kind == "ebreak":
        return [asm.ebreak()]
    if kind == "misaligned_load":
        return [rng.choice((asm.lw(5, 2, _BASE), asm.lh(5, 1, _BASE), asm.lhu(5, 3, _BASE)))]
    if kind == "access_fault_load":
        return asm.li(5, s + 4 * rng.randrange(16)) + [asm.lw(6, 0, 5)]
    if kind == "misaligned_store":
        return [rng.choice((asm.sw(5, 1, _BASE), asm.sh(5, 3, _BASE)))]
    if kind == "access_fault_store":
        return asm.li(5, 0xFFFFFFFC) + [asm.sb(6, 0, 5)]
    if kind == "misaligned_fetch":
        return [asm.jalr(1, _BASE, 2)]
    if kind == "access_fault_fetch":
        return asm.li(5, s) + [asm.jalr(0, 5, 0)]
    raise ValueError(f"unknown fault kind {kind!r}; choose one of {', '.join(FAULT_KINDS)}")


def generate(config: ArrayConfig, seed: int, *, total: int = 10_000, body_len: int | None = None,
             fault: str | bool | None = None, spmd: bool = False,
             engine: bool = False) -> RandomProgram:
    """Generate a random program for every (tile, context) of ``config``.

    Parameters
    ----------
    config : ArrayConfig
    seed : int
        Everything is a function of ``(config, seed, options)``.
    total : int
        Target number of body instructions issued over all contexts of tile 0
        (static body words x iterations, ≥ this).
    body_len : int, optional
        Body words per context (default: what fits, at most 400).
    fault : str, True or None
        Plant a fault at the end of one random (tile, context): a key of
        :data:`FAULT_KINDS`, or ``True`` for a random kind.
    spmd : bool
        Same streams on every tile (default: a different stream per tile).
    engine : bool
        Mix matrix-engine commands into the bodies (needs ``engine_macs`` > 0; see the module
        docstring); ``fault="engine"`` plants a faulting command.

    Returns
    -------
    RandomProgram

    Raises
    ------
    ValueError
        Unknown fault kind, or the program cannot fit the SRAM.
    """
    cfg, T = config, config.contexts
    rng = random.Random(f"tessera-randprog-{seed}")
    fault_at = None
    if engine and not cfg.engine_macs:
        raise ValueError("engine=True needs a configuration with engine_macs > 0")
    if fault == "engine" and not engine:
        raise ValueError("fault='engine' needs engine=True")
    if fault:
        kind = rng.choice(sorted(FAULT_KINDS)) if fault is True else fault
        if kind not in FAULT_KINDS and kind != "engine":
            raise ValueError(f"unknown fault kind {kind!r}; choose one of {', '.join(FAULT_KINDS)}")
        fault_at = (rng.randrange(cfg.tiles), rng.randrange(T), kind)
    overhead = 8 + T + T * 40                       # dispatch, table, per-context init/tail
    windows = T * WINDOW_BYTES
    e_base = engine_region(cfg)[0] if engine else None
    usable = e_base if engine else cfg.sram_bytes
    fit = (usable - windows) // 4 - overhead
    if body_len is None:
        body_len = min(400, fit // T)
    if body_len < 8 or body_len * T > fit:
        raise ValueError(f"random program with {T} bodies of {body_len} words does not fit "
                         f"{cfg.sram_bytes} bytes of SRAM")
    iterations = max(1, math.ceil(total / (T * body_len * 0.85)))
    prog = RandomProgram(cfg, seed, fault=fault_at)
    max_div = 0
    max_eng = 0
    max_steps = 0
    for tile in range(cfg.tiles):
        trng = random.Random(f"tessera-randprog-{seed}-{0 if spmd else tile}")
        # dispatch: t0 = context_id * 4; t1 = table[t0]; jump
        table_at = 6 * 4
        dispatch = [asm.csrrs(5, Csr.CONTEXT_ID, 0), asm.slli(5, 5, 2),
                    asm.lw(6, table_at, 5), asm.jalr(0, 6, 0), asm.nop(), asm.nop()]
        assert len(dispatch) * 4 == table_at
        words: list[int] = dispatch + [0] * T
        # first pass to know sizes: build blocks with placeholder window base, then patch
        bodies = [_body(trng, body_len, cfg, e_base) for _ in range(T)]
        max_eng = max([max_eng] + [sum(w in (asm.mwait(),) or w & 0x707F == 0x200B for w in b)
                                   for b in bodies])
        max_div = max([max_div] + [sum(map(is_division, b)) for b in bodies])
        corners = [[trng.choice(CORNERS) for _ in range(6)] for _ in range(T)]
        exit_codes = [trng.randrange(1 << 32) for _ in range(T)]
        fault_words = {}
        e_segs = []
        if engine:
            gtabs: list = []
            descs = [_engine_desc(trng, cfg, e_base, k, gtabs) for k in range(_E_DESCS)]
            max_steps = max([max_steps] + [command_steps(d) for d in descs])
            dbytes = b"".join(d.pack() for d in descs)
            M = cfg.engine_lanes
            params = b"".join(ChannelParams(
                bias=trng.choice((0, 1, -1, trng.randint(-(1 << 31), (1 << 31) - 1),
                                  trng.randint(-5000, 5000))),
                multiplier=finite_f32(trng.choice((
                    trng.randint(1 << 30, (1 << 31) - 1), trng.randint(-(1 << 31), (1 << 31) - 1),
                    -(1 << 31), trng.randint(100, 140) << 23 | trng.randrange(1 << 23)))),
                shift=trng.randint(-31, 30)).pack() for _ in range(4 * M))
            e_segs = [(e_base + _E_DESC, dbytes), (e_base + _E_PAR, params),
                      (e_base + _E_A, bytes(trng.randrange(256) for _ in range(_E_A_BYTES))),
                      (e_base + _E_W, bytes(trng.randrange(256) for _ in range(_E_W_BYTES))),
                      (e_base + _E_OUT, bytes(trng.randrange(256) for _ in range(_E_OUT_BYTES)))]
            e_segs += gtabs
        if fault_at and fault_at[0] == tile:
            if fault_at[2] == "engine":
                bad, extra = _engine_bad(trng, cfg, descs[0], e_base)
                at = e_base + _E_DESC + 64 * _E_DESCS
                e_segs += [(at, bad)] + extra
                fault_words[fault_at[1]] = asm.li(5, at) + [asm.mrun(5), asm.mwait(),
                                                            asm.ecall()]
            else:
                fault_words[fault_at[1]] = _fault_words(trng, fault_at[2], cfg)

        def block(c: int, base: int) -> list[int]:
            init = asm.li(_BASE, base) + asm.li(_LOOP, iterations)
            if engine:
                init += asm.li(_E_OUTREG, e_base + _E_OUT) + [
                    asm.addi(_E_DREG, _E_OUTREG, _E_DESC - _E_OUT)]
            for i, v in enumerate(corners[c]):
                init += asm.li(10 + i, v)
            body = bodies[c]
            tail = [asm.addi(_LOOP, _LOOP, -1), asm.bne(_LOOP, 0, -4 * (len(body) + 1))]
            tail += asm.li(10, exit_codes[c])
            tail += fault_words.get(c, [asm.ecall()])
            return init + body + tail

        # sizes do not depend on the base value's magnitude beyond li length: use a fixed-size li
        code_words = len(words) + sum(len(block(c, 0x12345678)) for c in range(T))
        data_base = (code_words * 4 + WINDOW_BYTES - 1) // WINDOW_BYTES * WINDOW_BYTES
        if data_base + windows > usable:
            raise ValueError(f"random program needs {data_base + windows} bytes, SRAM has "
                             f"{cfg.sram_bytes}")
        for c in range(T):
            base = data_base + c * WINDOW_BYTES
            b = block(c, base)
            if len(asm.li(_BASE, base)) == 1:     # keep the layout of the sizing pass
                b = [asm.nop()] + b
            words[len(dispatch) + c] = len(words) * 4
            words += b
        assert len(words) == code_words
        code = asm.program(words)
        data = bytes(trng.randrange(256) for _ in range(windows))
        prog.segments.append((tile, 0, code))
        prog.segments.append((tile, data_base, data))
        prog.segments += [(tile, a, d) for a, d in e_segs]
        prog.static_instructions += T * body_len * iterations
    # every context issues at most (init + iterations*body + tail) instructions, one per T
    # cycles; a division takes DIV_TURNS slots (architecture §4)
    per_ctx = 60 + iterations * (body_len + 2 + (DIV_TURNS - 1) * max_div)
    prog.max_cycles = T * per_ctx + 1000
    if engine:
        # an mrun / mwait may wait for the commands of every context; the engine advances at
        # least once per T cycles while a context retries (a retry is not a LOAD/STORE)
        prog.max_cycles += iterations * max_eng * T * (max_steps + 8) * T * T
    return prog
