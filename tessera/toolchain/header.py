"""Generate ``tessera.h`` from the spec modules (never written by hand).

Every number in the header comes from :mod:`tessera.spec.instructions` (the custom
instructions' rows of the instruction table), :mod:`tessera.spec.isa` (MACs per dot4),
:mod:`tessera.spec.csr` (CSR numbers), :mod:`tessera.spec.exchange` (the exchange-step
field positions) and :mod:`tessera.spec.engine` (the matrix-engine descriptor layout, modes,
flags and constants; the struct ``tsr_mdesc`` is generated from ``DESC_FIELDS`` with a
``_Static_assert`` per offset); :func:`generate` also checks the header's exchange bit formulas against
:func:`tessera.spec.exchange.encode_step` before emitting anything.

Spec: docs/architecture.md sections 3.2 (CSRs), 3.3 (custom instructions), 6 (exchange),
11 (software conventions) and 12 (matrix engine).

Per-configuration values reach C as ``-D`` flags, like ``TSR_XLATENCY``: ``TSR_ENGINE_MACS``
(the array's ``engine_macs`` P; ``TSR_ENGINE_LANES`` = P / 8 follows) defaults to the
``ArrayConfig`` default and is set by the graph compiler for its target array.
"""

from __future__ import annotations

import hashlib
import os
import random
from pathlib import Path

from tessera.paths import cache_root

from tessera.spec import engine as es
from tessera.spec import exchange as xs
from tessera.spec import isa
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr, CSR_DESCRIPTIONS
from tessera.spec.exchange import (ADDR_BITS, SRC_BITS, STEP_BYTES, Step, XOp, encode_step)
from tessera.spec.instructions import BY_NAME, SyncZone

__all__ = ["generate", "exchange_layout", "write_header", "include_dir", "DEFAULT_STACK_BYTES",
           "engine_struct_lines"]

#: Stack bytes per context used by crt0 when ``__stack_bytes`` is not overridden (spec §11).
DEFAULT_STACK_BYTES = 1024
#: Non-allocated ELF section where ``tsr_set_xprog`` records the TSR_XLATENCY a program was
#: compiled for (architecture §11; checked by :meth:`tessera.toolchain.elf.Image.check_xlatency`).
XLATENCY_SECTION = ".tessera.xlatency"
#: Non-allocated ELF section where ``tsr_mrun`` records the TSR_ENGINE_MACS a program was
#: compiled for (architecture §11; checked by :meth:`tessera.toolchain.elf.Image.check_engine`).
ENGINE_SECTION = ".tessera.engine"


def exchange_layout() -> dict[str, int]:
    """Field positions of an exchange step (:mod:`tessera.spec.exchange`), as used by the header.

    Returns
    -------
    dict of str to int
        ``op_shift``, ``send_en_bit``, ``recv_en_bit``, ``relative_bit``, ``src_shift``,
        ``addr_mask``, ``src_mask`` and the op codes ``op_step``, ``op_idle``, ``op_end``.
    """
    if xs.ADDR_SHIFT != 0:  # the C macros place word addresses at bit 0
        raise AssertionError(f"tessera.h assumes ADDR_SHIFT = 0, not {xs.ADDR_SHIFT}")
    return {
        "op_shift": xs.OP_SHIFT,
        "op_step": int(XOp.STEP), "op_idle": int(XOp.IDLE), "op_end": int(XOp.END),
        "send_en_bit": xs.SEND_EN_BIT,
        "recv_en_bit": xs.RECV_EN_BIT,
        "relative_bit": xs.RELATIVE_BIT,
        "src_shift": xs.SRC_SHIFT,
        "addr_mask": xs.ADDR_MASK,
        "src_mask": xs.SRC_MASK,
        "run_shift": xs.RUN_SHIFT,
        "run_max": xs.MAX_RUN,
    }


def _formula_words(lay, send_en, send_addr, recv_en, relative, src, recv_addr):
    """Python twin of the C ``TSR_XSTEP`` macro (used to self-check the layout)."""
    w0 = lay["op_step"] << lay["op_shift"]
    w1 = 0
    if send_en:
        w0 |= 1 << lay["send_en_bit"] | ((send_addr >> 2) & lay["addr_mask"])
    if recv_en:
        w0 |= 1 << lay["recv_en_bit"]
        w1 = ((int(relative) << lay["relative_bit"]) | (src & lay["src_mask"]) << lay["src_shift"]
              | ((recv_addr >> 2) & lay["addr_mask"]))
    return w0, w1


def _self_check(lay) -> None:
    rng = random.Random(1234)
    amax = 1 << (ADDR_BITS + 2)
    for _ in range(200):
        se, re_, rel = rng.random() < .5, rng.random() < .5, rng.random() < .5
        sa, ra = rng.randrange(0, amax, 4), rng.randrange(0, amax, 4)
        src = rng.randrange(1 << SRC_BITS)
        step = Step.send_recv(sa if se else None, src if re_ else None, ra if re_ else None,
                              rel if re_ else False)
        want = encode_step(step)
        got = _formula_words(lay, se, sa, re_, rel, src, ra)
        if got != want:
            raise AssertionError(f"tessera.h exchange formula {got} != encode_step {want} "
                                 f"for {step}")
    for n in (1, 2, 77, lay["run_max"]):
        w0, _ = encode_step(Step.send_recv(0x40, run=n))
        if w0 != _formula_words(lay, True, 0x40, False, False, 0, 0)[0] | (n - 1) << lay["run_shift"]:
            raise AssertionError("tessera.h run-length formula disagrees with encode_step")
    for n in (1, 2, 77, 1 << ADDR_BITS):
        if encode_step(Step.idle(n)) != ((lay["op_idle"] << lay["op_shift"]) | (n - 1), 0):
            raise AssertionError("tessera.h idle formula disagrees with encode_step")


_C_TYPES = {"I": "uint32_t", "H": "uint16_t", "B": "uint8_t", "h": "int16_t"}
_C_SIZES = {"I": 4, "H": 2, "B": 1, "h": 2}


def engine_struct_lines() -> list[str]:
    """C lines of ``tsr_mdesc`` (from :data:`tessera.spec.engine.DESC_FIELDS`, ignored bytes as
    ``_pad`` arrays) and ``tsr_mparam``, with a ``_Static_assert`` per offset and the sizes.

    Raises
    ------
    AssertionError
        If the fields overlap or run past :data:`tessera.spec.engine.DESC_BYTES`.
    """
    out = ["typedef struct __attribute__((aligned(8))) {"]
    pos, npad = 0, 0
    for name, code, off in es.DESC_FIELDS:
        if off < pos:
            raise AssertionError(f"tessera.h: descriptor field {name} overlaps the previous one")
        if off > pos:
            out.append(f"    uint8_t _pad{npad}[{off - pos}];   /* ignored */")
            npad += 1
        out.append(f"    {_C_TYPES[code]} {name};")
        pos = off + _C_SIZES[code]
    if pos > es.DESC_BYTES:
        raise AssertionError("tessera.h: descriptor fields run past DESC_BYTES")
    if pos < es.DESC_BYTES:
        out.append(f"    uint8_t _pad{npad}[{es.DESC_BYTES - pos}];   /* ignored */")
    out.append("} tsr_mdesc;")
    for name, _, off in es.DESC_FIELDS:
        out.append(f'_Static_assert(__builtin_offsetof(tsr_mdesc, {name}) == {off}, '
                   f'"tsr_mdesc.{name}");')
    out.append(f'_Static_assert(sizeof(tsr_mdesc) == {es.DESC_BYTES}, "tsr_mdesc size");')
    out += ["/* One channel's parameter record at p_base + 16 m. */",
            "typedef struct { int32_t bias, multiplier, shift, _ignored; } tsr_mparam;",
            f'_Static_assert(sizeof(tsr_mparam) == {es.PARAM_BYTES}, "tsr_mparam size");']
    return out


def generate() -> str:
    """Return the text of ``tessera.h``.

    Returns
    -------
    str
        A self-contained freestanding C header (needs only ``<stdint.h>``).

    Raises
    ------
    AssertionError
        If the exchange bit formulas emitted here disagree with
        :func:`tessera.spec.exchange.encode_step` (i.e. the spec module changed shape).
    """
    lay = exchange_layout()
    _self_check(lay)
    dot4, dot4su = BY_NAME["dot4"], BY_NAME["dot4su"]
    sync_tile, sync_array = BY_NAME["sync_tile"], BY_NAME["sync_array"]
    mrun, mwait = BY_NAME["mrun"], BY_NAME["mwait"]
    if mrun.opcode != dot4.opcode or mrun.funct7 != dot4.funct7 or mwait.opcode != dot4.opcode:
        raise AssertionError("tessera.h: mrun/mwait no longer share CUSTOM_0 with dot4")
    f_mrun, f_mwait = int(mrun.funct3), int(mwait.funct3)
    if dot4.opcode != dot4su.opcode or dot4.funct7 != dot4su.funct7 \
            or sync_tile.opcode != sync_array.opcode or sync_tile.funct3 != sync_array.funct3:
        raise AssertionError("tessera.h: dot4/dot4su or the sync rows no longer share fields")
    op0, op1 = int(dot4.opcode), int(sync_tile.opcode)
    f_dot4, f_dot4su, f7_dot4 = int(dot4.funct3), int(dot4su.funct3), int(dot4.funct7)
    f_sync = int(sync_tile.funct3)
    z_tile, z_array = int(SyncZone.TILE), int(SyncZone.ARRAY)

    L = []
    w = L.append
    w("/* tessera.h -- GENERATED by tessera/toolchain/header.py from tessera/spec/instructions.py,")
    w(" * tessera/spec/isa.py, tessera/spec/csr.py")
    w(" * tessera/spec/exchange.py and tessera/spec/engine.py. Do not edit: regenerate instead.")
    w(" * Spec: docs/architecture.md sections 3.2, 3.3, 6, 11 and 12. */")
    w("#ifndef TESSERA_H")
    w("#define TESSERA_H")
    w("")
    w("#define TSR_STR_(x) #x")
    w("#define TSR_STR(x) TSR_STR_(x)")
    w("")
    w("/* ---- CSR numbers (tessera/spec/csr.py) ---- */")
    for c in Csr:
        w(f"#define TSR_CSR_{c.name} {int(c):#05x} /* {CSR_DESCRIPTIONS[c]} */")
    w("")
    w("/* ---- custom instruction encodings (tessera/spec/instructions.py) ---- */")
    w(f"#define TSR_OPCODE_CUSTOM_0 {op0:#04x}")
    w(f"#define TSR_OPCODE_CUSTOM_1 {op1:#04x}")
    w(f"#define TSR_FUNCT3_DOT4 {f_dot4}")
    w(f"#define TSR_FUNCT3_DOT4SU {f_dot4su}")
    w(f"#define TSR_FUNCT3_SYNC {f_sync}")
    w(f"#define TSR_SYNC_TILE {z_tile}")
    w(f"#define TSR_SYNC_ARRAY {z_array}")
    w(f"#define TSR_MACS_PER_DOT4 {isa.MACS_PER_DOT4}")
    w(f"#define TSR_FUNCT3_MRUN {f_mrun}")
    w(f"#define TSR_FUNCT3_MWAIT {f_mwait}")
    w(f"#define TSR_INSN_MWAIT {mwait.match:#010x}u")
    w("")
    w("/* ---- matrix engine (tessera/spec/engine.py, docs/architecture.md section 12) ---- */")
    w("/* The array's engine_macs P (0 = no engine: mrun/mwait are illegal) is per configuration:")
    w("   compile with -DTSR_ENGINE_MACS=P for the target array (the graph compiler does). */")
    w(f"#define TSR_ENGINE_MACS_DEFAULT {ArrayConfig().engine_macs}")
    w("#ifndef TSR_ENGINE_MACS")
    w("#define TSR_ENGINE_MACS TSR_ENGINE_MACS_DEFAULT")
    w("#endif")
    w(f"#define TSR_ENGINE_LANES (TSR_ENGINE_MACS / {es.VECTOR_BYTES})")
    w(f"/* tsr_mrun() records TSR_ENGINE_MACS in the non-loaded ELF section {ENGINE_SECTION}:")
    w("   the loader refuses to run the program on an array with another engine_macs (section 11).")
    w("   Define TSR_ENGINE_NOTE=0 for code whose descriptors do not depend on P. */")
    w("#ifndef TSR_ENGINE_NOTE")
    w("#define TSR_ENGINE_NOTE 1")
    w("#endif")
    w(f"#define TSR_MDESC_BYTES {es.DESC_BYTES}")
    w(f"#define TSR_MPARAM_BYTES {es.PARAM_BYTES}")
    w(f"#define TSR_ACC_DEPTH {es.ACC_DEPTH}")
    w(f"#define TSR_MVECTOR_BYTES {es.VECTOR_BYTES}")
    w(f"#define TSR_MSHIFT_MIN ({es.MIN_SHIFT})")
    w(f"#define TSR_MSHIFT_MAX {es.MAX_SHIFT}")
    for m in es.Mode:
        w(f"#define TSR_MMODE_{m.name} {int(m)}u")
    for f in es.Flag:
        w(f"#define TSR_MFLAG_{f.name} {int(f)}u")
    for name, _, off in es.DESC_FIELDS:
        w(f"#define TSR_MDESC_OFF_{name.upper()} {off}")
    w("")
    w("/* Defaults of the software conventions (docs/architecture.md section 11). */")
    w(f"#define TSR_STACK_BYTES_DEFAULT {DEFAULT_STACK_BYTES}")
    w(f"#define TSR_XLATENCY_DEFAULT {ArrayConfig().exchange_latency}")
    w("/* Exchange schedules depend on the array's latency L, which no CSR reports: compile")
    w("   programs that schedule exchange with -DTSR_XLATENCY=L for the target array. */")
    w("#ifndef TSR_XLATENCY")
    w("#define TSR_XLATENCY TSR_XLATENCY_DEFAULT")
    w("#endif")
    w(f"/* tsr_set_xprog() records TSR_XLATENCY in the non-loaded ELF section {XLATENCY_SECTION}")
    w("   (one 32-bit word per use); the loader rejects a run on an array with another L.")
    w("   Define TSR_XLATENCY_NOTE=0 for code whose exchange programs do not depend on it. */")
    w("#ifndef TSR_XLATENCY_NOTE")
    w("#define TSR_XLATENCY_NOTE 1")
    w("#endif")
    w("")
    w("/* ---- exchange-step fields (tessera/spec/exchange.py) ---- */")
    w(f"#define TSR_XSTEP_BYTES {STEP_BYTES}")
    w(f"#define TSR_XOP_SHIFT {lay['op_shift']}")
    w(f"#define TSR_XOP_STEP {lay['op_step']}u")
    w(f"#define TSR_XOP_IDLE {lay['op_idle']}u")
    w(f"#define TSR_XOP_END {lay['op_end']}u")
    w(f"#define TSR_XSEND_EN (1u << {lay['send_en_bit']})")
    w(f"#define TSR_XRECV_EN (1u << {lay['recv_en_bit']})")
    w(f"#define TSR_XRELATIVE (1u << {lay['relative_bit']})")
    w(f"#define TSR_XSRC_SHIFT {lay['src_shift']}")
    w(f"#define TSR_XSRC_MASK {lay['src_mask']:#x}u")
    w(f"#define TSR_XADDR_MASK {lay['addr_mask']:#x}u")
    w(f"#define TSR_XIDLE_MAX {lay['addr_mask'] + 1}u")
    w("/* OR TSR_XRUN(n) into a STEP's word0: n consecutive words in n cycles (addresses + 4i in")
    w("   cycle i; architecture section 6, Runs), 1 <= n <= TSR_XRUN_MAX. */")
    w(f"#define TSR_XRUN_SHIFT {lay['run_shift']}")
    w(f"#define TSR_XRUN_MAX {lay['run_max']}u")
    w("#define TSR_XRUN(n) (((uint32_t)(n) - 1u) << TSR_XRUN_SHIFT)")
    w("")
    w("/* Everything below is C only (the numbers above are also usable from .S files). */")
    w("#ifndef __ASSEMBLER__")
    w("#include <stdint.h>")
    w("")
    w("/* ---- arithmetic ---- */")
    w("/* acc + sum_{i<4} s8(a.byte[i]) * s8(b.byte[i])  (mod 2^32); counts 4 MACs. */")
    w("static inline int32_t tsr_dot4(int32_t acc, uint32_t a, uint32_t b) {")
    w(f'    __asm__(".insn r {op0:#04x}, {f_dot4}, {f7_dot4}, %0, %1, %2" : "+r"(acc) : "r"(a), "r"(b));')
    w("    return acc;")
    w("}")
    w("/* acc + sum_{i<4} s8(a.byte[i]) * u8(b.byte[i])  (mod 2^32); counts 4 MACs. */")
    w("static inline int32_t tsr_dot4su(int32_t acc, uint32_t a, uint32_t b) {")
    w(f'    __asm__(".insn r {op0:#04x}, {f_dot4su}, {f7_dot4}, %0, %1, %2" : "+r"(acc) : "r"(a), "r"(b));')
    w("    return acc;")
    w("}")
    w("")
    w("/* ---- matrix engine (section 12) ---- */")
    w("/* Start the engine command whose 64-byte, 8-aligned descriptor is at desc; retries")
    w("   (no effect) while the tile's engine is busy. The engine reads and writes the SRAM:")
    w("   the memory clobber keeps the compiler from caching data across it. */")
    w("static inline void tsr_mrun(const void *desc) {")
    w("#if TSR_ENGINE_NOTE")
    w(f'    __asm__ volatile(".pushsection {ENGINE_SECTION},\\"\\",@progbits\\n.balign 4\\n"')
    w('                     ".word " TSR_STR(TSR_ENGINE_MACS) "\\n.popsection");')
    w("#endif")
    w(f'    __asm__ volatile(".insn r {op0:#04x}, {f_mrun}, {f7_dot4}, x0, %0, x0" :: "r"(desc) : "memory");')
    w("}")
    w("/* Wait until this tile's engine is idle (every command started before has finished). */")
    w("static inline void tsr_mwait(void) {")
    w(f'    __asm__ volatile(".insn i {op0:#04x}, {f_mwait}, x0, x0, 0" ::: "memory");')
    w("}")
    for ln in engine_struct_lines():
        w(ln)
    w("")
    w("/* ---- BSP sync ---- */")
    w("/* Wait until every non-halted context of this tile is here. */")
    w("static inline void tsr_sync_tile(void) {")
    w(f'    __asm__ volatile(".insn i {op1:#04x}, {f_sync}, x0, x0, {z_tile}" ::: "memory");')
    w("}")
    w("/* Wait at the array barrier; this tile's exchange program (xprog) runs at the release. */")
    w("static inline void tsr_sync_array(void) {")
    w(f'    __asm__ volatile(".insn i {op1:#04x}, {f_sync}, x0, x0, {z_array}" ::: "memory");')
    w("}")
    w("")
    w("/* ---- CSRs ---- */")
    for fn, c in (("tile_id", Csr.TILE_ID), ("context_id", Csr.CONTEXT_ID),
                  ("tile_count", Csr.TILE_COUNT), ("context_count", Csr.CONTEXT_COUNT),
                  ("sram_bytes", Csr.SRAM_BYTES)):
        w(f"/* {CSR_DESCRIPTIONS[c]} */")
        w(f"static inline uint32_t tsr_{fn}(void) {{")
        w(f'    uint32_t v; __asm__("csrr %0, {int(c):#05x}" : "=r"(v)); return v;')
        w("}")
    for fn, lo, hi in (("cycle", Csr.CYCLE, Csr.CYCLEH), ("instret", Csr.INSTRET, Csr.INSTRETH)):
        w(f"/* 64-bit {fn}: {CSR_DESCRIPTIONS[lo]}; high/low/high read with retry. */")
        w(f"static inline uint64_t tsr_{fn}(void) {{")
        w("    uint32_t hi, lo, hi2;")
        w("    do {")
        w(f'        __asm__ volatile("csrr %0, {int(hi):#05x}" : "=r"(hi));')
        w(f'        __asm__ volatile("csrr %0, {int(lo):#05x}" : "=r"(lo));')
        w(f'        __asm__ volatile("csrr %0, {int(hi):#05x}" : "=r"(hi2));')
        w("    } while (hi != hi2);")
        w("    return ((uint64_t)hi << 32) | lo;")
        w("}")
    w(f"/* {CSR_DESCRIPTIONS[Csr.XPROG]} */")
    w("static inline void tsr_set_xprog(const void *prog) {")
    w("#if TSR_XLATENCY_NOTE")
    w(f'    __asm__ volatile(".pushsection {XLATENCY_SECTION},\\"\\",@progbits\\n.balign 4\\n"')
    w('                     ".word " TSR_STR(TSR_XLATENCY) "\\n.popsection");')
    w("#endif")
    w(f'    __asm__ volatile("csrw {int(Csr.XPROG):#05x}, %0" :: "r"(prog) : "memory");')
    w("}")
    w("static inline uint32_t tsr_get_xprog(void) {")
    w(f'    uint32_t v; __asm__ volatile("csrr %0, {int(Csr.XPROG):#05x}" : "=r"(v)); return v;')
    w("}")
    w("/* Use once at file scope to change the stack bytes per context (default")
    w("   TSR_STACK_BYTES_DEFAULT); crt0 and the loader read the __stack_bytes symbol. */")
    w("#define TSR_SET_STACK_BYTES(n) \\")
    w('    __asm__(".globl __stack_bytes\\n.set __stack_bytes, " TSR_STR(n))')
    w("/* Halt this context with exit code `code` (ecall with a0 = code). */")
    w("static inline __attribute__((noreturn)) void tsr_halt(uint32_t code) {")
    w('    register uint32_t a0 __asm__("a0") = code;')
    w('    __asm__ volatile("ecall" :: "r"(a0) : "memory");')
    w("    __builtin_unreachable();")
    w("}")
    w("")
    w("/* ---- exchange programs (tessera/spec/exchange.py) ---- */")
    w(f"/* One {STEP_BYTES}-byte step; a program is an array of them, {STEP_BYTES}-byte aligned,")
    w("   ending with TSR_XEND(). Addresses are byte addresses (pointers or integers). */")
    w(f"typedef struct {{ uint32_t w0, w1; }} __attribute__((aligned({STEP_BYTES}))) tsr_xstep_t;")
    w("#define TSR_XWORD(byte_addr) ((((uint32_t)(uintptr_t)(byte_addr)) >> 2) & TSR_XADDR_MASK)")
    w("/* Step word 0 / word 1 of a STEP: send SRAM[send_addr] if send_en; if recv_en, receive")
    w("   from tile src (absolute) or (this tile + src) mod N (relative) into recv_addr. */")
    w("#define TSR_XSTEP_W0(send_en, send_addr, recv_en) \\")
    w("    ((TSR_XOP_STEP << TSR_XOP_SHIFT) | ((send_en) ? (TSR_XSEND_EN | TSR_XWORD(send_addr)) : 0u) \\")
    w("     | ((recv_en) ? TSR_XRECV_EN : 0u))")
    w("#define TSR_XSTEP_W1(recv_en, relative, src, recv_addr) \\")
    w("    ((recv_en) ? (((relative) ? TSR_XRELATIVE : 0u) \\")
    w("                  | (((uint32_t)(src) & TSR_XSRC_MASK) << TSR_XSRC_SHIFT) \\")
    w("                  | TSR_XWORD(recv_addr)) : 0u)")
    w("#define TSR_XSTEP(send_en, send_addr, recv_en, relative, src, recv_addr) \\")
    w("    ((tsr_xstep_t){ TSR_XSTEP_W0(send_en, send_addr, recv_en), \\")
    w("                    TSR_XSTEP_W1(recv_en, relative, src, recv_addr) })")
    w("/* IDLE for n cycles (1 <= n <= TSR_XIDLE_MAX) and END. */")
    w("#define TSR_XIDLE(n) ((tsr_xstep_t){ (TSR_XOP_IDLE << TSR_XOP_SHIFT) | \\")
    w("    (((uint32_t)(n) - 1u) & TSR_XADDR_MASK), 0u })")
    w("#define TSR_XEND() ((tsr_xstep_t){ TSR_XOP_END << TSR_XOP_SHIFT, 0u })")
    w("/* Shorthands. */")
    w("#define TSR_XNOP() TSR_XSTEP(0, 0, 0, 0, 0, 0)")
    w("#define TSR_XSEND(send_addr) TSR_XSTEP(1, send_addr, 0, 0, 0, 0)")
    w("#define TSR_XRECV(src, recv_addr) TSR_XSTEP(0, 0, 1, 0, src, recv_addr)")
    w("#define TSR_XRECV_REL(off, recv_addr) TSR_XSTEP(0, 0, 1, 1, off, recv_addr)")
    w("#define TSR_XSENDRECV(send_addr, src, recv_addr) TSR_XSTEP(1, send_addr, 1, 0, src, recv_addr)")
    w("#define TSR_XSENDRECV_REL(send_addr, off, recv_addr) \\")
    w("    TSR_XSTEP(1, send_addr, 1, 1, off, recv_addr)")
    w("")
    w("#endif /* !__ASSEMBLER__ */")
    w("#endif /* TESSERA_H */")
    return "\n".join(L) + "\n"


def _cache_root() -> Path:
    return cache_root()


def write_header(directory: str | os.PathLike) -> Path:
    """Write ``tessera.h`` into ``directory`` (created if needed) and return its path."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / "tessera.h"
    text = generate()
    if not path.exists() or path.read_text() != text:
        tmp = path.with_suffix(f".h.{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return path


def include_dir() -> Path:
    """A cache directory holding the current ``tessera.h``, keyed by the header's content.

    The directory is ``$TESSERA_CACHE`` or ``$XDG_CACHE_HOME/tessera`` (default
    ``~/.cache/tessera``) plus ``include-<sha256 prefix>``, so a changed spec gives a new
    directory and concurrent builds never see a half-written header.
    """
    text = generate()
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    d = _cache_root() / f"include-{key}"
    path = d / "tessera.h"
    if not path.exists() or path.read_text() != text:
        write_header(d)
    return d


def main(argv=None) -> int:
    """``python -m tessera.toolchain.header [OUT]``: print the header or write it to OUT."""
    import sys
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        Path(argv[0]).write_text(generate())
    else:
        sys.stdout.write(generate())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
