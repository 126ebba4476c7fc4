"""The tile's fault record, cycle by cycle (tessera/hdl/tile/fault_record.py; architecture §7
"Stop": "a tile keeps the fault that became visible first"; docs/rtl.md "Fault record").

Expected values by hand from the module's documented timing:

* a fault of the instruction in M (``insn``), of a matrix-engine step (``eng``) or of an
  exchange step (``xchg``) decided in cycle k is visible from k + 1: ``valid`` is 0 in k and
  1 from k + 1;
* ``eng`` with ``eng_now`` is visible in k: the record takes it at the end of k when empty, or
  when it holds the exchange fault taken at the end of k - 1 (both visible from k);
* the record's fields (``record``, ``record.valid``) follow one cycle after ``valid``, from
  registers of the fault's own cycle (not the sources' values of the next cycle);
* ``clear`` (the start pulse) in cycle k: no record from k + 1, whatever was pending.

The test drives the inputs of cycle k, ticks (the end of k) and reads the outputs of k + 1.
"""

from __future__ import annotations

import pytest

from tessera.hdl.tile.fault_record import FaultRecord
from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause

from helpers.hdl_sim import simulate

CFG = ArrayConfig(tiles=1, contexts=6, sram_bytes=16 * 1024)
F = FaultCause
INSN = dict(context=3, cause=F.ILLEGAL_INSTRUCTION, pc=0x10, addr=0x20)
ENG = dict(context=5, cause=F.ENGINE_FAULT, pc=0x40, addr=0x44)
XCHG = dict(context=0, cause=F.EXCHANGE_FAULT, pc=0x80, addr=0x84)
OTHER = dict(context=1, cause=F.BREAKPOINT, pc=0x99C, addr=0x998)


def _run(events, cycles=8):
    """``events``: {cycle: {"insn": fields, "eng": fields, "eng_now": 1, "xchg": fields,
    "clear": 1}}; every source not named in a cycle has valid 0 and the OTHER fields.
    Returns [(valid, record tuple or None)] for cycles 0..cycles (values after each end)."""
    dut = FaultRecord(CFG)
    out = []

    def rec_tuple(ctx):
        r = dut.record
        if not ctx.get(r.valid):
            return None
        return (ctx.get(r.xchg), ctx.get(r.context), FaultCause(ctx.get(r.cause)),
                ctx.get(r.pc), ctx.get(r.addr))

    async def bench(ctx):
        out.append((ctx.get(dut.valid), rec_tuple(ctx)))          # cycle 0
        for k in range(cycles):
            ev = events.get(k, {})
            for name in ("insn", "eng", "xchg"):
                port = getattr(dut, name)
                fields = ev.get(name, OTHER)
                ctx.set(port.valid, int(name in ev))
                ctx.set(port.xchg, int(name == "xchg"))
                for f, v in fields.items():
                    ctx.set(getattr(port, f), v)
            ctx.set(dut.eng_now, ev.get("eng_now", 0))
            ctx.set(dut.clear, ev.get("clear", 0))
            await ctx.tick()
            out.append((ctx.get(dut.valid), rec_tuple(ctx)))      # cycle k + 1

    simulate(dut, bench)
    return out


def _t(src, xchg=0):
    return (xchg, src["context"], src["cause"], src["pc"], src["addr"])


def test_instruction_fault_visible_next_cycle_fields_one_later():
    # insn fault decided in 2: valid from 3, fields from 4; the inputs of 3.. (OTHER) and a
    # later exchange fault (5) are not taken
    o = _run({0: {"clear": 1}, 2: {"insn": INSN}, 5: {"xchg": XCHG}})
    assert [v for v, _ in o] == [0, 0, 0, 1, 1, 1, 1, 1, 1]
    assert [r for _, r in o[:4]] == [None] * 4
    assert all(r == _t(INSN) for _, r in o[4:])


def test_exchange_then_registered_engine_fault_keeps_the_engine():
    # xchg in 3 (visible 4); eng_now in 4 (visible 4 too): the engine's is kept
    o = _run({0: {"clear": 1}, 3: {"xchg": XCHG}, 4: {"eng": ENG, "eng_now": 1}})
    assert [v for v, _ in o] == [0, 0, 0, 0, 1, 1, 1, 1, 1]
    assert o[4][1] is None
    assert o[5][1] == _t(XCHG, xchg=1)            # the exchange fault's fields first (end of 4)
    assert all(r == _t(ENG) for _, r in o[6:])    # the engine's from the end of 5


def test_registered_engine_fault_wins_over_the_instruction_of_the_same_cycle():
    o = _run({0: {"clear": 1}, 2: {"insn": INSN, "eng": ENG, "eng_now": 1}})
    assert [v for v, _ in o] == [0, 0, 0, 1, 1, 1, 1, 1, 1]
    assert all(r == _t(ENG) for _, r in o[4:])


def test_exchange_fault_kept_over_a_later_instruction_or_engine_address_fault():
    o = _run({0: {"clear": 1}, 2: {"xchg": XCHG}, 3: {"insn": INSN}, 4: {"eng": ENG}})
    assert [v for v, _ in o] == [0, 0, 0, 1, 1, 1, 1, 1, 1]
    assert all(r == _t(XCHG, xchg=1) for _, r in o[4:])


@pytest.mark.parametrize("src", ["insn", "eng", "xchg"])
def test_each_source_alone(src):
    fields = dict(insn=INSN, eng=ENG, xchg=XCHG)[src]
    o = _run({0: {"clear": 1}, 1: {src: fields}})
    assert [v for v, _ in o] == [0, 0, 1, 1, 1, 1, 1, 1, 1]
    assert o[2][1] is None
    assert all(r == _t(fields, xchg=int(src == "xchg")) for _, r in o[3:])


def test_clear_drops_a_pending_record():
    # fault in 2 (valid from 3), start pulse in 3: nothing from 4, the fields never appear;
    # a new fault in 5 is recorded (valid 6, fields 7)
    o = _run({0: {"clear": 1}, 2: {"insn": INSN}, 3: {"clear": 1}, 5: {"eng": ENG}})
    assert [v for v, _ in o] == [0, 0, 0, 1, 0, 0, 1, 1, 1]
    assert [r for _, r in o[:7]] == [None] * 7
    assert o[7][1] == o[8][1] == _t(ENG)
