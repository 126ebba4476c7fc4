"""Pure-Python tests of the tb tools that need no Verilator: random program generator,
parity comparators and the rtl backend's JSON round trip."""

import struct

import pytest

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig, PRESETS
from tessera.toolchain.disasm import disasm


def _words(code: bytes):
    return struct.unpack(f"<{len(code) // 4}I", code)


def _rd(w):
    return (w >> 7) & 31


def _writes_rd(w):
    op = w & 0x7F
    return op in (0x37, 0x17, 0x6F, 0x67, 0x03, 0x13, 0x33, 0x0B) or (op == 0x73 and (w >> 12) & 7)


@pytest.mark.parametrize("preset", ["tiny", "small"])
def test_randprog_shape(preset):
    from tessera.tb.randprog import generate, WINDOW_BYTES
    cfg = PRESETS[preset]
    p = generate(cfg, 7)
    tiles = {t for t, _, _ in p.segments}
    assert tiles == set(range(cfg.tiles))
    # ≥ 10k body instructions per seed (per tile, over its contexts)
    assert p.static_instructions >= 10_000 * cfg.tiles
    for tile in range(cfg.tiles):
        (code,) = [d for t, a, d in p.segments if t == tile and a == 0]
        (data_at,) = [a for t, a, d in p.segments if t == tile and a != 0]
        assert len(code) <= data_at and data_at + cfg.contexts * WINDOW_BYTES <= cfg.sram_bytes
        ws = _words(code)
        T = cfg.contexts
        table = ws[6:6 + T]
        ecalls = [i for i, w in enumerate(ws) if w == asm.ecall()]
        assert len(ecalls) == T                           # every context ends with ecall
        for c in range(T):
            start = table[c] // 4
            end = ecalls[c] if c == T - 1 else table[c + 1] // 4 - 1
            assert ws[end] == asm.ecall()
            for i in range(start, end):
                w = ws[i]
                assert not disasm(w, 4 * i).startswith(".word"), (i, hex(w))
                # x30 (loop counter) and x31 (window base) are written only by init / loop tail
                if _writes_rd(w) and _rd(w) in (30, 31):
                    assert i < start + 4 or disasm(w).startswith("addi t5,t5,-1"), disasm(w)
                op = w & 0x7F
                if op == 0x63:                            # branches: forward, or the loop
                    imm = ((w >> 31) & 1) << 12 | ((w >> 7) & 1) << 11 | ((w >> 25) & 0x3F) << 5 \
                        | ((w >> 8) & 0xF) << 1
                    imm -= (1 << 13) if imm >> 12 else 0
                    target = i + imm // 4
                    assert start <= target <= end, (i, disasm(w, 4 * i))
                if op == 0x6F:
                    assert 0 < (w >> 21 & 0x3FF) * 2 < 64        # short forward jal


def test_randprog_deterministic_and_seeded():
    from tessera.tb.randprog import generate
    cfg = PRESETS["tiny"]
    a, b, c = generate(cfg, 3), generate(cfg, 3), generate(cfg, 4)
    assert a.segments == b.segments
    assert a.segments != c.segments


@pytest.mark.parametrize("kind", ["illegal", "ebreak", "misaligned_load", "access_fault_load",
                                  "misaligned_store", "access_fault_store", "misaligned_fetch",
                                  "access_fault_fetch"])
def test_randprog_fault_planted(kind):
    from tessera.tb.randprog import generate
    cfg = PRESETS["tiny"]
    p = generate(cfg, 11, fault=kind)
    tile, ctx, k = p.fault
    assert k == kind and tile == 0 and 0 <= ctx < cfg.contexts
    ws = _words(p.segments[0][2])
    assert sum(w == asm.ecall() for w in ws) == cfg.contexts - 1


def test_randprog_rejects_bad_fault():
    from tessera.tb.randprog import generate
    with pytest.raises(ValueError, match="unknown fault kind"):
        generate(PRESETS["tiny"], 1, fault="meltdown")


def test_compare_results_reports_paths():
    from tessera.tb.parity import compare_results
    a = {"status": "halted", "tiles": [{"contexts": [{"regs": [0, 1, 2]}]}]}
    b = {"status": "halted", "tiles": [{"contexts": [{"regs": [0, 1, 3]}]}]}
    assert compare_results(a, a) == []
    assert compare_results(a, b) == ["tiles[0].contexts[0].regs[2]: model 0x2, rtl 0x3"]


def _rec(cycle, ctx, pc, insn, rd=0, value=0, mask=0, addr=0, data=0, tile=0):
    return {"cycle": cycle, "tile": tile, "context": ctx, "pc": pc, "insn": insn, "rd": rd,
            "value": value, "store_mask": mask, "store_addr": addr, "store_data": data}


def test_compare_traces_offset_and_divergence():
    from tessera.tb.parity import compare_traces
    add = asm.addi(5, 0, 1)
    model = [_rec(c, c % 4, 4 * (c // 4), add, rd=5, value=1) for c in range(40)]
    rtl = [dict(r, cycle=r["cycle"] + 17) for r in model]    # relative cycles
    # value of a non-writing record and unmasked store bytes are ignored
    rtl[3]["rd"], rtl[3]["value"] = 5, 1
    assert compare_traces(model, rtl) is None
    bad = [dict(r) for r in rtl]
    bad[25]["value"] = 2
    msg = compare_traces(model, bad)
    assert "#25" in msg and "differing fields: value" in msg and "addi t0,zero,1" in msg
    assert msg.count("tile 0 ctx 1") >= 6                     # context history shown
    late = [dict(r) for r in rtl]
    late[30]["cycle"] += 1
    assert "differing fields: cycle" in compare_traces(model, late)
    assert "<trace ended>" in compare_traces(model, rtl[:-1])


def test_store_normalisation():
    from tessera.tb.parity import normalise_record
    r = normalise_record(_rec(0, 0, 0, asm.sb(5, 0, 6), mask=0b0010, addr=0x101,
                              data=0xAABBCCDD))
    assert r["store_data"] == 0x0000CC00
    r = normalise_record(_rec(0, 0, 0, asm.addi(0, 0, 0), mask=0, addr=5, data=7))
    assert (r["store_addr"], r["store_data"]) == (0, 0)


def test_result_json_round_trip():
    from tessera.tb.backend import result_from_json
    from tessera.spec.faults import FaultCause
    from tessera.spec.result import (ContextResult, ContextState, Fault, RunResult, RunStatus,
                                TileResult)
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=16384)
    ctxs = [ContextResult(c, ContextState.HALTED if c else ContextState.FAULT, 4 * c,
                          7 if c else None, c, list(range(32))) for c in range(6)]
    tile = TileResult(0, {"compute": 1, "sync": 2, "exchange": 3, "halted": 4, "retired": 5,
                          "macs": 6, "engine": 7}, Fault(0, FaultCause.BREAKPOINT, 8, 8), ctxs)
    r = RunResult(cfg, RunStatus.FAULT, 10, [tile])
    assert result_from_json(r.to_json()).to_json() == r.to_json()
