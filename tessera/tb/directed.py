"""Directed test programs (jobs for :mod:`tessera.tb.cocotb_array`) with hand-computed expectations.

Each builder returns ``(job, expect)`` where ``expect`` maps ``(tile, context, reg)`` to the
value that register must hold at the end, computed here by hand from the ISA spec
(RISC-V Unprivileged 20191213 and docs/architecture.md) -- independently of both the RTL
and the golden model. Parity tests additionally compare everything against the model.

Every context starts at pc 0. Programs use ``csrr t0, context_id`` to give each context
different data when useful.
"""

from __future__ import annotations

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, encode_program
from tessera.spec.faults import FaultCause

__all__ = ["alu_job", "muldiv_job", "loadstore_job", "branch_job", "csr_job", "dot4_job",
           "fault_job", "ring_shift_job", "all_gather_job", "tile_sync_job", "spin_job",
           "FAULT_CASES", "u32"]

M = 0xFFFFFFFF


def u32(v: int) -> int:
    return v & M


def _job(name, words, cfg: ArrayConfig, max_cycles=20000, extra=()):
    code = asm.program(words)
    segs = [[t, 0, code.hex()] for t in range(cfg.tiles)] + [list(e) for e in extra]
    return {"name": name, "segments": segs, "entry": 0, "max_cycles": max_cycles}


def _all_ctx(cfg, regs: dict):
    return {(t, c, r): u32(v) for t in range(cfg.tiles) for c in range(cfg.contexts)
            for r, v in regs.items()}


def alu_job(cfg: ArrayConfig):
    """RV32I register/immediate ALU ops on corner operands."""
    a, b = 0x80000000, 0xFFFFFFFF          # INT_MIN, -1
    w = asm.li(5, a) + asm.li(6, b) + asm.li(7, 0x12345678) + asm.li(28, 33)
    exp = {}
    ops = [(asm.add, u32(a + b)), (asm.sub, u32(a - b)), (asm.slt, 1), (asm.sltu, 1),
           (asm.xor, a ^ b), (asm.or_, a | b), (asm.and_, a & b)]
    rd = 8
    for op, v in ops:
        w.append(op(rd, 5, 6))
        exp[rd] = v
        rd += 1
    # shifts use the low 5 bits of rs2 (33 -> 1)
    w += [asm.sll(rd, 7, 28), asm.srl(rd + 1, 5, 28), asm.sra(rd + 2, 5, 28)]
    exp.update({rd: u32(0x12345678 << 1), rd + 1: a >> 1, rd + 2: 0xC0000000})
    rd += 3
    w += [asm.addi(rd, 5, -1), asm.slti(rd + 1, 6, 0), asm.sltiu(rd + 2, 6, -1),
          asm.xori(rd + 3, 7, -1), asm.ori(rd + 4, 0, 0x7FF), asm.andi(rd + 5, 7, 0xF0),
          asm.slli(rd + 6, 7, 31), asm.srli(rd + 7, 6, 31), asm.srai(rd + 8, 5, 31),
          asm.lui(rd + 9, 0xFFFFF), asm.auipc(rd + 10, 1)]
    auipc_pc = 4 * (len(w) - 1)
    exp.update({rd: 0x7FFFFFFF, rd + 1: 1, rd + 2: 0, rd + 3: u32(~0x12345678),
                rd + 4: 0x7FF, rd + 5: 0x70, rd + 6: 0, rd + 7: 1, rd + 8: M,
                rd + 9: 0xFFFFF000, rd + 10: auipc_pc + 0x1000})
    w += [asm.addi(0, 5, 1), asm.ecall()]                      # x0 stays 0
    exp[0] = 0
    return _job("alu", w, cfg), _all_ctx(cfg, exp)


def muldiv_job(cfg: ArrayConfig):
    """M extension incl. division by zero and INT_MIN / -1 (spec table 7.1)."""
    imin, m1, x = 0x80000000, M, 0x7654321
    w = asm.li(5, imin) + asm.li(6, m1) + asm.li(7, x) + asm.li(28, 0)
    exp = {}
    cases = [(asm.mul, 5, 6, imin), (asm.mulh, 5, 6, 0), (asm.mulhsu, 6, 7, M),
             (asm.mulhu, 6, 6, 0xFFFFFFFE), (asm.div, 7, 28, M), (asm.divu, 7, 28, M),
             (asm.rem, 7, 28, x), (asm.remu, 7, 28, x), (asm.div, 5, 6, imin),
             (asm.rem, 5, 6, 0), (asm.divu, 5, 6, 0), (asm.remu, 5, 6, imin),
             (asm.div, 6, 7, 0), (asm.rem, 6, 7, M), (asm.mulh, 5, 5, 0x40000000)]
    # mulhsu(-1, x) = high word of -x (64-bit) = 0xFFFFFFFF for 0 < x < 2^32
    for i, (op, r1, r2, v) in enumerate(cases):
        w.append(op(8 + i, r1, r2))
        exp[8 + i] = v
    w.append(asm.ecall())
    return _job("muldiv", w, cfg), _all_ctx(cfg, exp)


def loadstore_job(cfg: ArrayConfig):
    """Byte/half/word stores into a per-context window, then sign/zero-extending loads."""
    data = 0x2000
    w = [asm.csrrs(5, Csr.CONTEXT_ID, 0), asm.slli(5, 5, 4)] + asm.li(6, data)
    w += [asm.add(6, 6, 5)] + asm.li(7, 0x80F17F82)
    w += [asm.sw(7, 0, 6), asm.sb(7, 4, 6), asm.sb(7, 7, 6), asm.sh(7, 10, 6),
          asm.lb(8, 0, 6), asm.lbu(9, 0, 6), asm.lh(10, 2, 6), asm.lhu(11, 2, 6),
          asm.lw(12, 0, 6), asm.lw(13, 4, 6), asm.lw(14, 8, 6), asm.lb(15, 3, 6),
          asm.lbu(16, 1, 6), asm.ecall()]
    exp = {8: 0xFFFFFF82, 9: 0x82, 10: 0xFFFF80F1, 11: 0x80F1, 12: 0x80F17F82,
           13: 0x82000082, 14: 0x7F820000, 15: 0xFFFFFF80, 16: 0x7F}
    return _job("loadstore", w, cfg), _all_ctx(cfg, exp)


def branch_job(cfg: ArrayConfig):
    """Taken / not-taken branches of every kind, jal / jalr link values."""
    w = asm.li(5, 0x80000000) + asm.li(6, 1) + [asm.addi(20, 0, 0)]
    # each branch, if taken, skips "addi x20, x20, 1<<i"
    kinds = [(asm.beq, 5, 5, True), (asm.bne, 5, 5, False), (asm.blt, 5, 6, True),
             (asm.bge, 5, 6, False), (asm.bltu, 5, 6, False), (asm.bgeu, 5, 6, True)]
    expect20 = 0
    for i, (op, r1, r2, taken) in enumerate(kinds):
        w += [op(r1, r2, 8), asm.addi(20, 20, 1 << i)]
        if not taken:
            expect20 |= 1 << i
    jal_at = 4 * len(w)
    w += [asm.jal(21, 8), asm.addi(20, 20, 0x100)]          # skipped
    jalr_at = 4 * len(w) + 4
    w += asm.li(7, jalr_at + 12) if len(asm.li(7, jalr_at + 12)) == 1 else []
    w += [asm.jalr(22, 7, 1), asm.addi(20, 20, 0x200), asm.addi(20, 20, 0x400)]
    # target = (x7 + 1) & ~1 = jalr_at + 12: skips both addis
    w += [asm.ecall()]
    exp = {20: expect20, 21: jal_at + 4, 22: jalr_at + 4}
    return _job("branch", w, cfg), _all_ctx(cfg, exp)


def csr_job(cfg: ArrayConfig):
    """Identification CSRs, xprog read/write, instret."""
    w = [asm.csrrs(8, Csr.TILE_ID, 0), asm.csrrs(9, Csr.CONTEXT_ID, 0),
         asm.csrrs(10, Csr.TILE_COUNT, 0), asm.csrrs(11, Csr.CONTEXT_COUNT, 0),
         asm.csrrs(12, Csr.SRAM_BYTES, 0), asm.csrrs(13, Csr.INSTRET, 0),
         asm.csrrs(14, Csr.INSTRETH, 0), asm.csrrs(15, Csr.CYCLEH, 0),
         asm.csrrs(16, Csr.CYCLE, 0), asm.ecall()]
    exp = {}
    for t in range(cfg.tiles):
        for c in range(cfg.contexts):
            e = {8: t, 9: c, 10: cfg.tiles, 11: cfg.contexts, 12: cfg.sram_bytes, 13: 5,
                 14: 0, 15: 0,
                 # the 9th instruction of context c issues at cycle 8*T + c (no stalls, §4)
                 16: 8 * cfg.contexts + c}
            exp.update({(t, c, r): v for r, v in e.items()})
    return _job("csr", w, cfg), exp


def dot4_job(cfg: ArrayConfig):
    """dot4 / dot4su with extreme bytes and a non-zero accumulator."""
    a, b = 0x807F01FF, 0x80FF7F02   # bytes (lsb first) a: -1,1,127,-128  b: 2,127,-1,-128
    w = asm.li(5, a) + asm.li(6, b) + asm.li(8, 1000) + asm.li(9, 0xFFFFFFFF)
    w += [asm.dot4(8, 5, 6), asm.dot4su(9, 5, 6), asm.ecall()]
    sa = [-1, 1, 127, -128]
    sb = [2, 127, -1, -128]
    ub = [2, 127, 255, 128]
    exp = {8: u32(1000 + sum(x * y for x, y in zip(sa, sb))),
           9: u32(-1 + sum(x * y for x, y in zip(sa, ub)))}
    return _job("dot4", w, cfg), _all_ctx(cfg, exp)


def spin_job(cfg: ArrayConfig, max_cycles: int = 2000):
    """Every context loops forever (``j .``): ends by timeout."""
    return _job("spin", [asm.jal(0, 0)], cfg, max_cycles=max_cycles), {}


#: name -> (words of context 1 after `csrr t0, context_id; bne t0, x1?, ...`), cause, addr fn
def _fault_prog(cfg, words):
    """Context 1 runs ``words`` (after 2 setup words); every other context ecalls."""
    head = [asm.csrrs(5, Csr.CONTEXT_ID, 0), asm.addi(6, 0, 1), asm.beq(5, 6, 8), asm.ecall()]
    return head + words


FAULT_CASES = {
    # name: (words after the head, cause, addr(cfg, pc)); the faulting pc is 16 + 4*(len-1)
    "illegal": ([0x0000100F], FaultCause.ILLEGAL_INSTRUCTION, lambda cfg, pc: 0x0000100F),
    "ebreak": ([asm.ebreak()], FaultCause.BREAKPOINT, lambda cfg, pc: pc),
    "misaligned_load": ([asm.lw(7, 2, 0)], FaultCause.MISALIGNED_LOAD, lambda cfg, pc: 2),
    "access_fault_load": ([asm.lui(7, 0x80000), asm.lb(8, 4, 7)],
                          FaultCause.ACCESS_FAULT_LOAD, lambda cfg, pc: 0x80000004),
    "misaligned_store": ([asm.sh(7, 0x101, 0)], FaultCause.MISALIGNED_STORE,
                         lambda cfg, pc: 0x101),
    "access_fault_store": ([asm.sw(7, -4, 0)], FaultCause.ACCESS_FAULT_STORE,
                           lambda cfg, pc: 0xFFFFFFFC),
    "misaligned_fetch": ([asm.jal(1, 6)], FaultCause.MISALIGNED_FETCH, lambda cfg, pc: pc + 6),
    "access_fault_fetch": ([asm.lui(7, 0x10000), asm.jalr(0, 7, 0)],
                           FaultCause.ACCESS_FAULT_FETCH, lambda cfg, pc: 0x10000000),
    "csr_write_ro": ([asm.csrrw(7, Csr.TILE_ID, 5)], FaultCause.ILLEGAL_INSTRUCTION,
                     lambda cfg, pc: asm.csrrw(7, Csr.TILE_ID, 5)),
    "csr_unlisted": ([asm.csrrs(7, 0x300, 0)], FaultCause.ILLEGAL_INSTRUCTION,
                     lambda cfg, pc: asm.csrrs(7, 0x300, 0)),
}


def fault_job(cfg: ArrayConfig, name: str):
    """Context 1 of every tile executes the faulting case ``name``.

    Returns ``(job, expect_fault)`` with ``expect_fault = (context, cause, pc, addr)``; the
    fault-fetch cases fault at the *target* fetch (pc = target) for access faults.
    """
    words, cause, addr_fn = FAULT_CASES[name]
    prog = _fault_prog(cfg, words)
    pc = 4 * (len(prog) - 1)
    if name == "access_fault_fetch":
        pc = 0x10000000                    # taken normally; the fetch at the target faults
    return _job(f"fault-{name}", prog, cfg), (1, cause, pc, addr_fn(cfg, 4 * (len(prog) - 1)))


def tile_sync_job(cfg: ArrayConfig):
    """Contexts reach ``sync TILE`` after different delays; all read ``cycle`` right after."""
    w = [asm.csrrs(5, Csr.CONTEXT_ID, 0)]
    # delay loop: context c spins 3*c iterations
    w += [asm.slli(6, 5, 1), asm.add(6, 6, 5), asm.beq(6, 0, 12), asm.addi(6, 6, -1),
          asm.jal(0, -8), asm.sync_tile(), asm.csrrs(8, Csr.CYCLE, 0), asm.ecall()]
    return _job("tile-sync", w, cfg), {}


def _exchange_prelude(prog_at: int, word_at: int):
    """Context 0: store (100 + tile_id) at word_at, set xprog, sync ARRAY, load results."""
    return ([asm.csrrs(5, Csr.CONTEXT_ID, 0), asm.beq(5, 0, 8), asm.ecall(),
             asm.csrrs(6, Csr.TILE_ID, 0), asm.addi(7, 6, 100)] + asm.li(8, word_at)
            + [asm.sw(7, 0, 8)] + asm.li(9, prog_at) + [asm.csrrw(0, Csr.XPROG, 9),
                                                         asm.sync_array()])


def ring_shift_job(cfg: ArrayConfig):
    """Every tile sends its word to tile+1 (relative source N-1); a0 = received word."""
    n, lat = cfg.tiles, cfg.exchange_latency
    prog_at, word_at, recv_at = 0x1000, 0x1800, 0x1804
    steps = [Step.send_recv(send_addr=word_at)]
    if lat > 1:
        steps.append(Step.idle(lat - 1))
    steps += [Step.send_recv(recv_src=n - 1, recv_addr=recv_at, relative=True), Step.end()]
    xp = encode_program(steps)
    w = _exchange_prelude(prog_at, word_at) + asm.li(11, recv_at) + [asm.lw(10, 0, 11),
                                                                      asm.ecall()]
    extra = [[t, prog_at, xp.hex()] for t in range(n)]
    exp = {(t, 0, 10): 100 + (t - 1) % n for t in range(n)}
    return _job("ring-shift", w, cfg, extra=extra), exp


def all_gather_job(cfg: ArrayConfig):
    """Tile j sends its word at step j; every tile receives source j at step j + L into
    slot j. a0..a(N-1) (x10..) = the gathered words."""
    n, lat = cfg.tiles, cfg.exchange_latency
    prog_at, word_at, gather_at = 0x1000, 0x1800, 0x1900
    extra = []
    for t in range(n):
        steps = []
        for s in range(n + lat):
            send = word_at if s == t else None
            j = s - lat
            if 0 <= j < n:
                steps.append(Step.send_recv(send_addr=send, recv_src=j,
                                            recv_addr=gather_at + 4 * j))
            elif send is not None:
                steps.append(Step.send_recv(send_addr=send))
            else:
                steps.append(Step.idle(1))
        extra.append([t, prog_at, encode_program(steps).hex()])
    w = _exchange_prelude(prog_at, word_at) + asm.li(20, gather_at)
    w += [asm.lw(10 + j, 4 * j, 20) for j in range(n)] + [asm.ecall()]
    exp = {(t, 0, 10 + j): 100 + j for t in range(n) for j in range(n)}
    return _job("all-gather", w, cfg, extra=extra), exp
