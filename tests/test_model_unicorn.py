"""Cross-check of the golden model against unicorn (an independent RV32IM emulator).

Random RV32IM streams (ALU reg/imm incl. M corner values, lui/auipc, loads/stores into a
per-context window, forward branches and jal) run on every context of two tiles (each tile a
different stream, so tiles execute different words in the same cycle); final registers and
windows must equal unicorn's.
"""

import random

import numpy as np
import pytest

import unicorn  # noqa: E402  (a dependency in pyproject.toml)
from unicorn import UC_ARCH_RISCV, UC_MODE_RISCV32, Uc  # noqa: E402
from unicorn import riscv_const as rc  # noqa: E402

from tessera.golden_model import Array  # noqa: E402
from tessera.toolchain import asm  # noqa: E402
from tessera.spec.config import ArrayConfig  # noqa: E402
from tessera.spec.csr import Csr  # noqa: E402

SRAM = 64 * 1024
WIN_BASE = 0x8000              # above the code of a 5000-instruction stream
WIN = 0x1000
T = 6                      # contexts per tile (T >= 6, contract v2)
BASE = 31                    # load/store base register, never an ALU operand
SPECIAL = [0, 1, 0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0xFFFF8000, 0x80, 0xFF]

R_OPS = ["add", "sub", "sll", "slt", "sltu", "xor", "srl", "sra", "or_", "and_",
         "mul", "mulh", "mulhsu", "mulhu", "div", "divu", "rem", "remu"]
I_OPS = ["addi", "slti", "sltiu", "xori", "ori", "andi"]
SH_OPS = ["slli", "srli", "srai"]
LOADS = {"lb": 1, "lh": 2, "lw": 4, "lbu": 1, "lhu": 2}
STORES = {"sb": 1, "sh": 2, "sw": 4}
BRANCHES = ["beq", "bne", "blt", "bge", "bltu", "bgeu"]


def random_program(seed: int, n: int):
    """Return (words, body_start, end_pc): a prologue, n random instructions, then ecall."""
    rng = random.Random(seed)
    pro = [asm.csrr(BASE, Csr.CONTEXT_ID), asm.slli(BASE, BASE, 12),
           *asm.li(30, WIN_BASE), asm.add(BASE, BASE, 30)]
    body_start = len(pro) * 4
    init = []
    for r in range(1, 31):
        v = rng.choice(SPECIAL) if rng.random() < 0.4 else rng.randrange(1 << 32)
        init += asm.li(r, v)
    body = []
    reg = lambda: rng.randrange(1, 31)          # noqa: E731
    src = lambda: rng.randrange(0, 31)          # noqa: E731  (x0 allowed as a source)
    total = n
    for i in range(total):
        remaining = total - i  # instructions after this one, up to the ecall
        kind = rng.random()
        if kind < 0.35:
            body.append(getattr(asm, rng.choice(R_OPS))(reg() if rng.random() > 0.05 else 0,
                                                       src(), src()))
        elif kind < 0.55:
            body.append(getattr(asm, rng.choice(I_OPS))(reg(), src(), rng.randrange(-2048, 2048)))
        elif kind < 0.62:
            body.append(getattr(asm, rng.choice(SH_OPS))(reg(), src(), rng.randrange(32)))
        elif kind < 0.66:
            body.append(asm.lui(reg(), rng.randrange(1 << 20)))
        elif kind < 0.68:
            body.append(asm.auipc(reg(), rng.randrange(1 << 20)))
        elif kind < 0.78:
            name = rng.choice(list(LOADS))
            size = LOADS[name]
            body.append(getattr(asm, name)(reg(), rng.randrange(0, 2048 // size) * size, BASE))
        elif kind < 0.88:
            name = rng.choice(list(STORES))
            size = STORES[name]
            body.append(getattr(asm, name)(src(), rng.randrange(0, 2048 // size) * size, BASE))
        elif kind < 0.97:
            off = 4 * rng.randrange(1, min(16, remaining) + 1)
            body.append(getattr(asm, rng.choice(BRANCHES))(src(), src(), off))
        else:
            off = 4 * rng.randrange(1, min(16, remaining) + 1)
            body.append(asm.jal(reg(), off))
    words = pro + init + body + [asm.ecall()]
    assert len(words) * 4 <= WIN_BASE, "program would overlap the data windows"
    return words, body_start, len(words) * 4 - 4


def unicorn_run(words, start, end, window: bytes):
    uc = Uc(UC_ARCH_RISCV, UC_MODE_RISCV32)
    uc.mem_map(0, SRAM)
    uc.mem_write(0, asm.program(words))
    uc.mem_write(WIN_BASE, window)
    uc.reg_write(rc.UC_RISCV_REG_X31, WIN_BASE)
    uc.emu_start(start, end)
    assert uc.reg_read(rc.UC_RISCV_REG_PC) == end
    regs = [0] + [uc.reg_read(getattr(rc, f"UC_RISCV_REG_X{i}")) for i in range(1, 32)]
    return regs, bytes(uc.mem_read(WIN_BASE, WIN))


def check_seed(seed: int, n: int, tiles: int = 2):
    """``tiles`` = 1 exercises the model's uniform (one word for all tiles) path; 2 tiles run
    different streams, exercising the grouped path."""
    progs = [random_program(seed * 7919 + t, n) for t in range(tiles)]
    cfg = ArrayConfig(tiles=tiles, contexts=T, sram_bytes=SRAM)
    arr = Array(cfg)
    wrng = np.random.default_rng(seed)
    window = wrng.integers(0, 256, WIN, dtype=np.uint8).tobytes()
    for t, (words, _, _) in enumerate(progs):
        arr.write_mem(t, 0, asm.program(words))
        for c in range(T):
            arr.write_mem(t, WIN_BASE + c * WIN, window)
    res = arr.run(20 * (n + 200) * T)
    assert res.status == "halted", (res.status, [tt.fault for tt in res.tiles])
    for t, (words, start, end) in enumerate(progs):
        regs, mem = unicorn_run(words, start, end, window)
        for c in range(T):
            got = arr.regs[t, c].tolist()
            exp = list(regs)
            exp[BASE] = WIN_BASE + c * WIN
            assert got == exp, f"seed {seed} tile {t} context {c}: regs differ at " \
                f"{[i for i in range(32) if got[i] != exp[i]]}"
            assert int(arr.pc[t, c]) == end + 4
            assert arr.read_mem(t, WIN_BASE + c * WIN, WIN) == mem, \
                f"seed {seed} tile {t} context {c}: window differs"


@pytest.mark.parametrize("seed", range(5))
def test_unicorn_random_rv32im(seed):
    check_seed(seed, 2000)


@pytest.mark.parametrize("seed", range(100, 103))
def test_unicorn_random_rv32im_single_tile(seed):
    check_seed(seed, 2000, tiles=1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5, 45))
def test_unicorn_random_rv32im_slow(seed):
    check_seed(seed, 5000)
