"""Golden-model decoder legality vs a direct transcription of docs/architecture.md §3.1/§3.2
(tests/isa_contract.py),
on random words biased towards the legal opcodes; and agreement with tessera.toolchain.disasm."""

import random

from tessera.golden_model.decode import Op, decode
from tessera.toolchain.disasm import disasm

from isa_contract import CSRS, legal


def test_random_words_legality():
    rng = random.Random(3)
    ops = [0x37, 0x17, 0x6F, 0x67, 0x63, 0x03, 0x23, 0x13, 0x33, 0x0F, 0x73, 0x0B, 0x2B]
    n_legal = 0
    for i in range(40_000):
        r = rng.random()
        w = rng.getrandbits(32)
        if r < 0.85:
            w = (w & ~0x7F) | rng.choice(ops)
        if r < 0.3:  # make small fields likely (f7 in {0,1,0x20}, CSR numbers, sync words)
            w = (w & 0x01FFFFFF) | (rng.choice([0, 1, 0x20, 0x40]) << 25)
        if 0.3 <= r < 0.4:
            w = (rng.choice(sorted(CSRS) + [0x123, 0xC01]) << 20) | (w & 0xFFFFF)
            w = (w & ~0x7F) | 0x73
        if 0.4 <= r < 0.42:
            w = rng.choice([0x2B, 0x0010002B, 0x0020002B, 0x73, 0x00100073, 0x00200073])
        exp = legal(w)
        d = decode(w)
        assert (d.op != Op.ILLEGAL) == exp, hex(w)
        n_legal += exp
        text = disasm(w)
        if exp:
            assert not text.startswith(".word"), hex(w)
        elif not ((w & 0x7F) == 0x73 and ((w >> 12) & 7) in (1, 2, 3, 5, 6, 7)):
            # disasm prints CSR instructions with bad numbers / RO writes; all else is .word
            assert text == f".word {w:#010x}", hex(w)
    assert 10_000 < n_legal < 35_000     # the sample covers both sides
