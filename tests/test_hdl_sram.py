"""The tile SRAM's two banks (tessera/hdl/tile/sram.py, docs/rtl.md "Tile SRAM") on the
Amaranth simulator, driven port by port: a matrix-engine write of two consecutive 8-byte words
in one cycle and the reads of those words beside it (architecture §12 "Engine cycles",
"Memory order", §6).

The rules, by hand from the contract: an engine write in cycle k behaves like a store whose M
is k (§12 "Memory order"); a fetch at t sees the stores whose M ≤ t − 1 (§4), so a port-A fetch
address of cycle k + 1 sees the write of k, and one of cycle k does not (the port is not
write-transparent: tests/test_rtl_engine.py "fetch_order" shows the same at the array level); a
load whose M is k + 1 sees the writes of cycles < k + 1 (§4); the exchange step that starts at
c sees the SRAM as after the writes of cycles < c (§6): its word is the SRAM's step window, a
register, and the window must hold every write of the cycles before c, whether the word was
then in the window, on its way through port A, or not yet read. The words of a write at a
(a multiple of 8) are a and a + 8 (§12 "Engine cycles": two consecutive aligned words, not one
aligned 16-byte block), so a ≡ 8 (mod 16) puts the first in the odd bank and the second in the
next row of the even bank.
"""

from amaranth.sim import Simulator

from tessera.hdl.tile.sram import TileSram
from tessera.spec.config import ArrayConfig

CFG = ArrayConfig(tiles=1, contexts=6, sram_bytes=16 * 1024)
OLD = [0x1111_1111_1111_1111 * (i + 1) for i in range(6)]     # words 2 .. 7 before the write
BASE = 2                                                     # word index of OLD[0] (byte 16)


def _run(bench):
    dut = TileSram(CFG)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    out = {}

    async def tb(ctx):
        for i, v in enumerate(OLD):
            ctx.set(dut.word(BASE + i), v)
        await bench(ctx, dut, out)

    sim.add_testbench(tb)
    sim.run()
    return dut, out


def _idle(ctx, dut):
    for sig in (dut.eng.wr_en, dut.eng.rd_en, dut.data.re, dut.data.we, dut.xchg.step_en,
                dut.xchg.step_load, dut.xchg.step_adv, dut.xchg.send, dut.xchg.recv,
                dut.host.we):
        ctx.set(sig, 0)


def test_engine_two_word_write_beside_fetch_and_load_reads():
    # the engine writes 16 bytes at byte 24 (word 3, odd bank row 1, and word 4, even bank
    # row 2) in cycle k, with mask 0x0FFF: all 8 bytes of word 3, bytes 0..3 of word 4 (a RAW
    # write of C = 3 lanes); new word 3 = N0, new word 4 = OLD word 4's high half | N1's low
    n0, n1 = 0xA0A1_A2A3_A4A5_A6A7, 0xB0B1_B2B3_B4B5_B6B7
    new3 = n0
    new4 = (OLD[4 - BASE] & 0xFFFF_FFFF_0000_0000) | (n1 & 0xFFFF_FFFF)

    async def bench(ctx, dut, out):
        _idle(ctx, dut)
        # cycle k: the engine write; port A and port B: no user
        ctx.set(dut.eng.wr_en, 1)
        ctx.set(dut.eng.wr_addr, 3)
        ctx.set(dut.eng.wr_addr1, 4)                 # the engine gives wr_addr + 1
        ctx.set(dut.eng.wr_data, n0 | n1 << 64)
        ctx.set(dut.eng.wr_mask, 0x0FFF)
        await ctx.tick()
        # cycle k + 1: a fetch of word 3's high half (port A) and a load of word 4's low half
        # (port B, M = k + 1)
        _idle(ctx, dut)
        ctx.set(dut.fetch.addr, 3 * 8 + 4)
        ctx.set(dut.data.re, 1)
        ctx.set(dut.data.addr, 4 * 8)
        await ctx.tick()
        out["fetch_k1"] = ctx.get(dut.fetch.data)
        out["load_k1"] = ctx.get(dut.data.rdata)
        # cycle k + 2: a load of word 4's high half (not written: bytes 12..15 of the write
        # are masked)
        _idle(ctx, dut)
        ctx.set(dut.data.re, 1)
        ctx.set(dut.data.addr, 4 * 8 + 4)
        await ctx.tick()
        out["load_k2"] = ctx.get(dut.data.rdata)
        _idle(ctx, dut)
        out["words"] = [ctx.get(dut.word(BASE + i)) for i in range(len(OLD))]

    _dut, out = _run(bench)
    assert out["fetch_k1"] == new3 >> 32             # fetch at k + 1: the write of k
    assert out["load_k1"] == n1 & 0xFFFF_FFFF        # M = k + 1: the write of k
    assert out["load_k2"] == OLD[4 - BASE] >> 32     # the masked bytes keep the old word
    # only words 3 and 4 changed (words 2, 5, 6, 7: the neighbours in both banks)
    assert out["words"] == [OLD[0], new3, new4, *OLD[3:]]


def test_fetch_in_the_write_cycle_sees_the_old_word():
    # a fetch address of the write's own cycle k reads the SRAM as before the write (a fetch
    # at t sees the writes of cycles <= t − 1); the load of the same word in k + 1 sees it
    async def bench(ctx, dut, out):
        _idle(ctx, dut)
        ctx.set(dut.eng.wr_en, 1)
        ctx.set(dut.eng.wr_addr, 2)                  # words 2 (even bank) and 3 (odd bank)
        ctx.set(dut.eng.wr_addr1, 3)
        ctx.set(dut.eng.wr_data, (1 << 128) - 1)
        ctx.set(dut.eng.wr_mask, 0xFFFF)
        ctx.set(dut.fetch.addr, 2 * 8)
        await ctx.tick()
        out["fetch_k"] = ctx.get(dut.fetch.data)
        _idle(ctx, dut)
        ctx.set(dut.fetch.addr, 3 * 8)
        ctx.set(dut.data.re, 1)
        ctx.set(dut.data.addr, 2 * 8)
        await ctx.tick()
        out["fetch_k1"] = ctx.get(dut.fetch.data)
        out["load_k1"] = ctx.get(dut.data.rdata)

    _dut, out = _run(bench)
    assert out["fetch_k"] == OLD[0] & 0xFFFF_FFFF
    assert out["fetch_k1"] == 0xFFFF_FFFF and out["load_k1"] == 0xFFFF_FFFF


def test_word_rejects_an_index_outside_the_sram():
    import pytest
    dut = TileSram(CFG)
    with pytest.raises(ValueError, match="0..2047"):
        dut.word(2048)
    assert dut.word(5) is not None
    for m in dut.banks:
        m._MustUse__silence = True
    dut._MustUse__silence = True


def test_step_window_holds_every_write_of_the_cycles_before_its_step():
    # The exchange engine's step window (sram.py docstring, docs/rtl.md "Tile SRAM"): step_data is the
    # current step's word and must be the SRAM as after the writes of all cycles before the
    # cycle it is read in (§6), whether a write hit the word while it was in the window, in
    # the port-A read pipeline (read in k - 1: the write of k - 1 is missed by the read, the
    # write of k by the data), or in the SRAM. Driven as the engine does: the program's
    # first two words (2, 3) are read at k0 and loaded at k0 + 1 (step_load); every later
    # cycle reads the two words after the next step's (pc + 16 and pc + 24: dwords a0 + 2,
    # a0 + 3 of the step of that cycle); step_adv moves the window on. step_data at each cycle,
    # by hand from the writes listed (H: host writes of one 32-bit half; E / X: engine writes).
    H1, H2, H3, H6, H7, H8 = (0x0C00_0001 * k for k in (1, 2, 3, 6, 7, 8))
    E5, X4, X5 = 0xE5E5_E5E5_5E5E_5E5E, 0x4444_4444_ABCD_0004, 0xABCD_0005_5555_5555
    old = {BASE + i: v for i, v in enumerate(OLD)}
    lo, hi = 0xFFFF_FFFF, 0xFFFF_FFFF << 32
    # (read pair d or None, load, adv, write, expected w0 in this cycle or None)
    host = lambda word, half, v: ("host", word * 8 + 4 * half, v)
    cycles = [
        ((2, 3), 0, 0, host(3, 0, H1), None),                  # k0: word 3 in the read of k0
        ((4, 5), 1, 0, host(2, 1, H2), None),                  # k0+1: word 2 read at k0
        ((4, 5), 0, 1, host(4, 1, H3), old[2] & lo | H2 << 32),            # k0+2
        ((5, 6), 0, 1, ("eng", 5, E5, 0x00FF), old[3] & hi | H1),          # k0+3
        ((6, 7), 0, 0, ("eng", 4, X4 | X5 << 64, 0xF00F), old[4] & lo | H3 << 32),   # k0+4
        ((6, 7), 0, 0, host(6, 0, H6), X4 & lo | H3 << 32),                # k0+5
        ((6, 7), 0, 1, host(6, 1, H7), X4 & lo | H3 << 32),                # k0+6
        ((7, 8), 0, 1, host(7, 1, H8), E5 & lo | X5 & hi),                 # k0+7
        ((8, 9), 0, 1, None, H7 << 32 | H6),                               # k0+8
        (None, 0, 0, None, H8 << 32 | old[7] & lo),                        # k0+9
    ]

    async def bench(ctx, dut, out):
        out["w0"] = []
        for pair, load, adv, write, _ in cycles:
            _idle(ctx, dut)
            out["w0"].append(ctx.get(dut.xchg.step_data))
            if pair is not None:
                ctx.set(dut.xchg.step_en, 1)
                ctx.set(dut.xchg.step_addr, pair[0])
                ctx.set(dut.xchg.step_addr1, pair[1])
            ctx.set(dut.xchg.step_load, load)
            ctx.set(dut.xchg.step_adv, adv)
            if write and write[0] == "host":
                ctx.set(dut.host.addr, write[1])
                ctx.set(dut.host.wdata, write[2])
                ctx.set(dut.host.we, 0xF)
            elif write:
                ctx.set(dut.eng.wr_en, 1)
                ctx.set(dut.eng.wr_addr, write[1])
                ctx.set(dut.eng.wr_addr1, write[1] + 1)
                ctx.set(dut.eng.wr_data, write[2])
                ctx.set(dut.eng.wr_mask, write[3])
            await ctx.tick()
        _idle(ctx, dut)
        out["words"] = [ctx.get(dut.word(BASE + i)) for i in range(len(OLD))]

    _dut, out = _run(bench)
    for k, (*_, want) in enumerate(cycles):
        if want is not None:
            assert out["w0"][k] == want, f"cycle k0+{k}: w0 = {out['w0'][k]:#x}, not {want:#x}"
    assert out["words"] == [old[2] & lo | H2 << 32, old[3] & hi | H1,
                            X4 & lo | H3 << 32, E5 & lo | X5 & hi, H7 << 32 | H6,
                            H8 << 32 | old[7] & lo]
