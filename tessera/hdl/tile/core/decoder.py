"""Instruction decoder: legality (docs/architecture.md §3.1 table) and control fields.

Purely combinational. Encodings come from :mod:`tessera.spec.isa`.
"""

from amaranth import C, Cat, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.isa import INSN_EBREAK, INSN_ECALL, CustomFunct3, Opcode, SyncZone

__all__ = ["Decoder"]


class Decoder(wiring.Component):
    """Decode one 32-bit instruction word.

    Members
    -------
    insn : In(32)
        The instruction word.
    legal : Out(1)
        1 if the word is a legal encoding per docs/architecture.md §3.1 (the Zicsr CSR
        number/write check of §3.2 is *not* included: see :class:`tessera.hdl.tile.core.csr.CsrUnit`).
    rd, rs1, rs2 : Out(5)
        Register fields (bits [11:7], [19:15], [24:20]).
    funct3 : Out(3)
        Bits [14:12].
    imm : Out(32)
        The sign-extended immediate of the instruction's format (I, S, B, U or J;
        0 for R-type).
    lui, auipc, jal, jalr, branch, load, store, op_imm, op, muldiv, fence, ecall, ebreak, csr, dot4, sync : Out(1)
        One-hot instruction class (only meaningful when ``legal``); ``op`` is a non-M
        register-register ALU op, ``muldiv`` an M-extension op.
    alu_alt : Out(1)
        SUB (OP) or SRA/SRAI (bit 30) for the ALU.
    dot4_su : Out(1)
        ``dot4su`` (rs2 bytes unsigned) rather than ``dot4``.
    sync_array : Out(1)
        ``sync ARRAY`` rather than ``sync TILE``.
    writes_rd : Out(1)
        The class writes rd (the write is dropped at W when rd = x0).
    """

    insn: In(32)
    legal: Out(1)
    rd: Out(5)
    rs1: Out(5)
    rs2: Out(5)
    funct3: Out(3)
    imm: Out(32)
    lui: Out(1)
    auipc: Out(1)
    jal: Out(1)
    jalr: Out(1)
    branch: Out(1)
    load: Out(1)
    store: Out(1)
    op_imm: Out(1)
    op: Out(1)
    muldiv: Out(1)
    fence: Out(1)
    ecall: Out(1)
    ebreak: Out(1)
    csr: Out(1)
    dot4: Out(1)
    sync: Out(1)
    alu_alt: Out(1)
    dot4_su: Out(1)
    sync_array: Out(1)
    writes_rd: Out(1)

    def elaborate(self, platform):
        m = Module()
        i = self.insn
        opcode = i[0:7]
        f3 = i[12:15]
        f7 = i[25:32]
        m.d.comb += [
            self.rd.eq(i[7:12]),
            self.rs1.eq(i[15:20]),
            self.rs2.eq(i[20:25]),
            self.funct3.eq(f3),
        ]

        def is_op(code):
            return opcode == int(code)

        sync_tile_word = (int(SyncZone.TILE) << 20) | int(Opcode.CUSTOM_1)
        sync_array_word = (int(SyncZone.ARRAY) << 20) | int(Opcode.CUSTOM_1)

        m.d.comb += [
            self.lui.eq(is_op(Opcode.LUI)),
            self.auipc.eq(is_op(Opcode.AUIPC)),
            self.jal.eq(is_op(Opcode.JAL)),
            self.jalr.eq(is_op(Opcode.JALR)),
            self.branch.eq(is_op(Opcode.BRANCH)),
            self.load.eq(is_op(Opcode.LOAD)),
            self.store.eq(is_op(Opcode.STORE)),
            self.op_imm.eq(is_op(Opcode.OP_IMM)),
            self.op.eq(is_op(Opcode.OP) & (f7 != 1)),
            self.muldiv.eq(is_op(Opcode.OP) & (f7 == 1)),
            self.fence.eq(is_op(Opcode.MISC_MEM)),
            self.ecall.eq(i == INSN_ECALL),
            self.ebreak.eq(i == INSN_EBREAK),
            self.csr.eq(is_op(Opcode.SYSTEM) & (f3 != 0)),
            self.dot4.eq(is_op(Opcode.CUSTOM_0)),
            self.sync.eq(is_op(Opcode.CUSTOM_1)),
            self.dot4_su.eq(f3 == int(CustomFunct3.DOT4SU)),
            self.sync_array.eq(i[20]),
            self.alu_alt.eq(i[30] & (is_op(Opcode.OP) | (is_op(Opcode.OP_IMM) & (f3 == 5)))),
        ]
        m.d.comb += self.writes_rd.eq(
            self.lui | self.auipc | self.jal | self.jalr | self.load | self.op_imm | self.op
            | self.muldiv | self.csr | self.dot4)

        # Immediates (RISC-V Unprivileged spec, section 2.3).
        sign = i[31]
        imm_i = Cat(i[20:32], sign.replicate(20))
        imm_s = Cat(i[7:12], i[25:32], sign.replicate(20))
        imm_b = Cat(0, i[8:12], i[25:31], i[7], sign.replicate(20))
        imm_u = Cat(C(0, 12), i[12:32])
        imm_j = Cat(0, i[21:31], i[20], i[12:20], sign.replicate(12))
        with m.Switch(opcode):
            with m.Case(int(Opcode.LUI), int(Opcode.AUIPC)):
                m.d.comb += self.imm.eq(imm_u)
            with m.Case(int(Opcode.JAL)):
                m.d.comb += self.imm.eq(imm_j)
            with m.Case(int(Opcode.BRANCH)):
                m.d.comb += self.imm.eq(imm_b)
            with m.Case(int(Opcode.STORE)):
                m.d.comb += self.imm.eq(imm_s)
            with m.Case(int(Opcode.OP), int(Opcode.CUSTOM_0)):
                m.d.comb += self.imm.eq(0)
            with m.Default():
                m.d.comb += self.imm.eq(imm_i)

        # Legal-encoding table, docs/architecture.md §3.1.
        legal = self.legal
        with m.If(i[0:2] != 0b11):
            m.d.comb += legal.eq(0)
        with m.Else():
            with m.Switch(opcode):
                with m.Case(int(Opcode.LUI), int(Opcode.AUIPC), int(Opcode.JAL)):
                    m.d.comb += legal.eq(1)
                with m.Case(int(Opcode.JALR)):
                    m.d.comb += legal.eq(f3 == 0)
                with m.Case(int(Opcode.BRANCH)):
                    m.d.comb += legal.eq((f3 != 2) & (f3 != 3))
                with m.Case(int(Opcode.LOAD)):
                    m.d.comb += legal.eq((f3 == 0) | (f3 == 1) | (f3 == 2) | (f3 == 4) | (f3 == 5))
                with m.Case(int(Opcode.STORE)):
                    m.d.comb += legal.eq((f3 == 0) | (f3 == 1) | (f3 == 2))
                with m.Case(int(Opcode.OP_IMM)):
                    m.d.comb += legal.eq(
                        ((f3 != 1) & (f3 != 5))
                        | ((f3 == 1) & (f7 == 0))
                        | ((f3 == 5) & ((f7 == 0) | (f7 == 0x20))))
                with m.Case(int(Opcode.OP)):
                    m.d.comb += legal.eq(
                        (f7 == 0) | (f7 == 1) | ((f7 == 0x20) & ((f3 == 0) | (f3 == 5))))
                with m.Case(int(Opcode.MISC_MEM)):
                    m.d.comb += legal.eq(f3 == 0)
                with m.Case(int(Opcode.SYSTEM)):
                    m.d.comb += legal.eq(
                        (i == INSN_ECALL) | (i == INSN_EBREAK) | ((f3 != 0) & (f3 != 4)))
                with m.Case(int(Opcode.CUSTOM_0)):
                    m.d.comb += legal.eq(
                        (f7 == 0) & ((f3 == int(CustomFunct3.DOT4)) | (f3 == int(CustomFunct3.DOT4SU))))
                with m.Case(int(Opcode.CUSTOM_1)):
                    m.d.comb += legal.eq((i == sync_tile_word) | (i == sync_array_word))
                with m.Default():
                    m.d.comb += legal.eq(0)
        return m
