"""A plain scalar reference interpreter: one Python loop iteration per tile per instruction.

Only for benchmarking the vectorized model (scripts/bench_model.py) and as a readable second
formulation of the RV32IM + dot4 semantics. It keeps the barrel order (cycle t runs context
t mod T of every tile) but implements no barriers, exchange, CSRs other than the id/count
ones, or fault records: an unsupported instruction raises ``NotImplementedError``.
"""

from __future__ import annotations

import numpy as np

from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.timing import STATE_VISIBLE_DELAY

from .decode import Op, decode

__all__ = ["ScalarArray"]

_M = 0xFFFFFFFF


def _s(v: int) -> int:
    return v - (1 << 32) if v & 0x80000000 else v


def _s8(v: int) -> int:
    return v - 256 if v & 0x80 else v


class ScalarArray:
    """Scalar interpreter over all tiles/contexts (Python ints, bytearray SRAM).

    Parameters
    ----------
    config : ArrayConfig
    """

    def __init__(self, config: ArrayConfig):
        self.cfg = config
        self.n, self.t = config.tiles, config.contexts
        self.mem = [bytearray(config.sram_bytes) for _ in range(self.n)]
        self.regs = [[[0] * 32 for _ in range(self.t)] for _ in range(self.n)]
        self.pc = [[0] * self.t for _ in range(self.n)]
        self.halted = [[False] * self.t for _ in range(self.n)]
        self.retired = 0
        self.cycle = 0

    def write_mem(self, tile, addr, data):
        for m in (self.mem if tile is None else [self.mem[tile]]):
            m[addr:addr + len(data)] = data

    def run(self, max_cycles: int) -> int:
        """Run until every context halted or ``max_cycles``; returns the cycle count.

        When the last ``ecall`` issues at t, every context is HALTED from t + 5 and the run
        ends with ``cycle = t + 5 + D`` (architecture §7 "Stop", D = ``decision_latency``),
        unless that exceeds ``max_cycles``.
        """
        alive = sum(not h for row in self.halted for h in row)
        while self.cycle < max_cycles and alive:
            c = self.cycle % self.t
            for tile in range(self.n):
                if self.halted[tile][c]:
                    continue
                if self._step(tile, c):
                    alive -= 1
            self.cycle += 1
            if not alive:
                self.cycle = min(max_cycles, self.cycle - 1 + STATE_VISIBLE_DELAY
                                 + self.cfg.decision_latency)
        return self.cycle

    def _step(self, tile: int, c: int) -> bool:
        mem = self.mem[tile]
        x = self.regs[tile][c]
        pc = self.pc[tile][c]
        w = int.from_bytes(mem[pc:pc + 4], "little")
        op, rd, rs1, rs2, imm = decode(w)
        a, b = x[rs1], x[rs2]
        npc = (pc + 4) & _M
        val = None
        if op == Op.ADDI:
            val = (a + imm) & _M
        elif op == Op.ADD:
            val = (a + b) & _M
        elif op == Op.SUB:
            val = (a - b) & _M
        elif op == Op.XOR:
            val = a ^ b
        elif op == Op.XORI:
            val = a ^ imm
        elif op == Op.OR:
            val = a | b
        elif op == Op.AND:
            val = a & b
        elif op == Op.ANDI:
            val = a & imm
        elif op == Op.SLLI:
            val = (a << imm) & _M
        elif op == Op.SRLI:
            val = a >> imm
        elif op == Op.MUL:
            val = (a * b) & _M
        elif op == Op.LUI:
            val = imm
        elif op in (Op.DOT4, Op.DOT4SU):
            acc = x[rd]
            for i in range(4):
                bb = (b >> 8 * i) & 0xFF
                acc += _s8((a >> 8 * i) & 0xFF) * (_s8(bb) if op == Op.DOT4 else bb)
            val = acc & _M
        elif op == Op.LW:
            ad = (a + imm) & _M
            val = int.from_bytes(mem[ad:ad + 4], "little")
        elif op == Op.SW:
            ad = (a + imm) & _M
            mem[ad:ad + 4] = b.to_bytes(4, "little")
        elif op in (Op.BNE, Op.BEQ, Op.BLT, Op.BGE):
            taken = {Op.BNE: a != b, Op.BEQ: a == b, Op.BLT: _s(a) < _s(b),
                     Op.BGE: _s(a) >= _s(b)}[op]
            if taken:
                npc = (pc + imm) & _M
        elif op == Op.JAL:
            val, npc = npc, (pc + imm) & _M
        elif op == Op.CSRRS and rs1 == 0:
            val = {Csr.TILE_ID: tile, Csr.CONTEXT_ID: c, Csr.TILE_COUNT: self.n,
                   Csr.CONTEXT_COUNT: self.t}[imm]
        elif op == Op.ECALL:
            self.halted[tile][c] = True
            self.pc[tile][c] = npc
            self.retired += 1
            return True
        else:
            raise NotImplementedError(f"scalar interpreter: {op.name} at tile {tile} pc {pc:#x}")
        if val is not None and rd:
            x[rd] = val
        self.pc[tile][c] = npc
        self.retired += 1
        return False

    def regs_array(self) -> np.ndarray:
        """Registers as uint32 [N, T, 32] (to compare with the vectorized model)."""
        return np.array(self.regs, dtype=np.uint32)
