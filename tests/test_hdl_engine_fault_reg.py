"""The matrix engine's registered data-check fault, cycle by cycle (docs/architecture.md §7
"Stop", §12 "Engine faults"; tessera/hdl/tile/matrix_engine.py ``now_q`` / ``fault_now``).

The RTL decides checks 2 and 3 of the word read by the step of cycle s in s + 1 and registers
the result at the end of s + 1; in s + 2 the register shows c_e FAULT (the scheduler's visible
state), raises the tile's ``faulted`` and is written into the fault record at the end of s + 2.
These tests watch, in every cycle of a run on the Amaranth-simulated array (1 tile, T = 6,
16 KiB, P = 32, D = 2), the scheduler's visible states, the tile's ``faulted`` output and the
retire trace, and then compare the whole run (status, cycles, record, contexts, counters) with
the golden model (``helpers.hdl_parity``). No Verilator build.

Derivations, from the contract text only (program layout of tests/helpers/model_engine.py:
context c's word j issues at (3 + j)·6 + c; context 0's ``mrun`` issued at 24 is accepted in
its M cycle x = 28, so step s of the command is at cycle 29 + s when no load, store or
exchange takes a cycle; §12 "Step schedule": steps 0..7 read the descriptor, 8 + 2m / 9 + 2m
channel m's parameter words, then the lane loads W(0..C−1, 0)):

* §7 "Stop": a fault of checks 1 and 4 of the step at cycle s is visible from s + 1, of
  checks 2 and 3 from s + 2; §12: "context c_e enters FAULT (from the cycle the fault is
  visible) and its final pc is pc_e"; the record is (c_e, engine_fault, pc_e, addr).
* One tile: D = ceil(log2 1) + 2 = 2; the stop condition first holds at v = the cycle the
  fault is visible, t_s = v + D − 1 = v + 1, cycles = v + D = v + 2. Every instruction issued
  at a cycle ≤ t_s takes effect; the ``faulted`` output of the tile is "a fault is visible".
* The other contexts are not affected by an engine fault: context 1 runs an endless
  ``addi x12, x12, 1`` / ``jal x0, -4`` loop from its word 0 (issued at 19, 25, 31, ...), so
  it is RUNNING in every cycle of the run and its instructions issued up to t_s retire (W at
  t + 5, their trace record at t + 6 = ``TRACE_DELAY``, docs/rtl.md), those issued after t_s
  do not.
"""

import pytest

from tessera.spec.trace import TRACE_DELAY

from tessera.hdl.tile.core import core as core_module
from tessera.hdl.tile.core.scheduler import Scheduler
from tessera.spec.engine import Mode
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState
from tessera.toolchain import asm

import helpers.hdl_parity as hdl_parity
from helpers.hdl_parity import model_run, rtl_run
from helpers.model_engine import (CODE, CFG, D0, P, PC_MRUN, SRAM, STD_MEM, W, good, image,
                                  issuer, params)

D = 2                          # decision latency of one tile (§7)
S0 = 29                        # cycle of step 0 (mrun accepted at x = 28)
LOOP = [asm.addi(12, 12, 1), asm.jal(0, -4)]     # context 1: RUNNING all the run


class _Recording(Scheduler):
    """The core's scheduler, remembered so that the bench can read its visible states."""
    made = []

    def __init__(self, config):
        super().__init__(config)
        _Recording.made.append(self)


def _run(monkeypatch, desc, par=None, codes=None, extra=None):
    """Run context 0's issuer of ``desc`` (channel parameters ``par`` at P, else STD_MEM's)
    with context 1 looping; return (per-cycle samples, the RTL's result, the model's)."""
    mem = dict(STD_MEM)
    mem[D0] = desc.pack()
    if par is not None:
        mem[P] = par
    mem.update(extra or {})
    codes = {0: issuer(D0), 1: LOOP, **(codes or {})}
    img = [(0, image(codes, CFG.contexts))] + sorted(mem.items())
    _Recording.made.clear()
    monkeypatch.setattr(core_module, "Scheduler", _Recording)
    samples = {}

    async def watch(ctx, dut, limit=5000):
        """``wait_done`` of helpers.hdl_sim, sampling every cycle of the run on the way."""
        (sched,) = _Recording.made
        t = dut.tiles[0]
        for k in range(limit):
            if ctx.get(dut.done):
                return k
            if ctx.get(t.run):
                cyc = ctx.get(t.cycle)
                samples[cyc] = {
                    "states": [ContextState(ctx.get(sched.states[i]))
                               for i in range(CFG.contexts)],
                    "faulted": ctx.get(t.faulted),
                }
            tr = t.trace
            if ctx.get(tr.valid):      # retire trace a cycle after W: issue = this cycle − 6
                samples.setdefault("retired", []).append(
                    (ctx.get(t.cycle) - TRACE_DELAY, ctx.get(tr.context), ctx.get(tr.pc)))
            await ctx.tick()
        raise AssertionError("done never rose")

    monkeypatch.setattr(hdl_parity, "wait_done", watch)
    got = rtl_run(CFG, [img], 2000, [], fresh=True)      # the patched Scheduler
    exp = model_run(CFG, [img], 2000, [])
    return samples, got, exp


def _check_visible_from(samples, got, exp, v, record, faulting=0):
    """Context ``faulting`` FAULT and ``faulted`` exactly from cycle v; the stop at
    t_s = v + D − 1; context 1 RUNNING and issuing to the end; the record; model parity."""
    t_s = v + D - 1
    run_cycles = sorted(k for k in samples if isinstance(k, int))
    assert run_cycles[-1] == t_s                       # the run's cycles are 0 .. t_s
    for k in run_cycles:
        st = samples[k]["states"]
        assert samples[k]["faulted"] == (k >= v), k
        if k >= 30:                                      # after the dispatch and the ecalls
            assert st[1] == ContextState.RUNNING, k
        if faulting is not None:
            want = ContextState.FAULT if k >= v else ContextState.RUNNING
            if k >= 30:
                assert st[faulting] == want, (k, st)
    # context 1's loop: every slot t ≡ 1 (mod 6) from 19 up to t_s retires, nothing later
    c1 = sorted(t for t, c, _ in samples["retired"] if c == 1 and t >= 19)
    assert c1 == list(range(19, t_s + 1, 6))
    assert got["status"] == "fault" and got["cycles"] == v + D
    t0 = got["tiles"][0]
    assert t0["fault"] == record
    # the golden model's run of the same image (written independently from the contract)
    assert (exp["status"], exp["cycles"]) == (got["status"], got["cycles"])
    assert exp["tiles"][0]["fault"] == t0["fault"]
    assert exp["tiles"][0]["counters"] == t0["counters"]
    for c in range(CFG.contexts):
        assert exp["tiles"][0]["contexts"][c] == t0["contexts"][c], c
    return t0


def _engine_record(addr):
    return {"context": 0, "cause": FaultCause.ENGINE_FAULT.label, "pc": PC_MRUN, "addr": addr}


def test_check3_tflite_shift_visible_from_s_plus_2(monkeypatch):
    # TFLITE, C = 1, channel 0's shift 31 (outside −31..30): check 3 in step 9 + 2·0 = 9 at
    # s = 29 + 9 = 38; visible from s + 2 = 40 (not 39); addr = p_base + 16·0 + 8
    s = S0 + 9
    samples, got, exp = _run(monkeypatch, good(mode=Mode.TFLITE),
                             params([0], [1 << 30], [31]))
    t0 = _check_visible_from(samples, got, exp, s + 2, _engine_record(P + 8))
    c0 = t0["contexts"][0]
    assert c0["state"] == "fault" and c0["pc"] == PC_MRUN       # c_e's final pc is pc_e
    assert t0["counters"]["macs"] == 0
    # t_s = 41: context 1 issued at 19, 25, 31, 37 (addi, jal, addi, jal): x12 = 2
    assert t0["contexts"][1]["regs"][12] == 2


def test_check2_bad_descriptor_visible_from_s_plus_2(monkeypatch):
    # TFLITE with qmin > qmax: check 2 in step 7 at s = 36, visible from 38, addr = d
    s = S0 + 7
    samples, got, exp = _run(monkeypatch, good(mode=Mode.TFLITE, qmin=5, qmax=-3))
    t0 = _check_visible_from(samples, got, exp, s + 2, _engine_record(D0))
    assert t0["contexts"][0]["pc"] == PC_MRUN


def test_instruction_fault_visible_at_s_plus_2_wins(monkeypatch):
    # check 2 in step 7 (C = 0) at s = 36, visible from 38; context 3's ebreak (its word 2)
    # issued at (3 + 2)·6 + 3 = 33, visible from 33 + 5 = 38: the same cycle. §12: "the
    # record is the instruction's and the engine fault is dropped": context 3 FAULT from 38,
    # context 0 never FAULT (it retries its mwait: RUNNING, pc of the mwait = CODE + 8)
    nop = asm.addi(0, 0, 0)
    samples, got, exp = _run(monkeypatch, good(mode=Mode.RAW, C=0),
                             codes={3: [nop, nop, asm.ebreak()]})
    rec = {"context": 3, "cause": FaultCause.BREAKPOINT.label, "pc": CODE * 4 + 8,
           "addr": CODE * 4 + 8}
    t0 = _check_visible_from(samples, got, exp, 38, rec, faulting=3)
    for k in samples:
        if isinstance(k, int) and k >= 30:
            assert samples[k]["states"][0] == ContextState.RUNNING, k
    assert t0["contexts"][0]["state"] == "running" and t0["contexts"][0]["pc"] == CODE + 8


def test_instruction_fault_decided_at_s_plus_2_comes_after(monkeypatch):
    # check 2 in step 7 (C = 0) at s = 36, visible from 38; context 4's ebreak issued at
    # (3 + 2)·6 + 4 = 34 (M in 38 = s + 2) is visible from 39: the engine fault is visible
    # first and the tile keeps it (§7 "Stop"); t_s = 39 ≥ 34, so the ebreak still faults and
    # context 4 is FAULT from 39 (with no effect, not retired); cycles = 38 + D = 40
    nop = asm.addi(0, 0, 0)
    samples, got, exp = _run(monkeypatch, good(mode=Mode.RAW, C=0),
                             codes={4: [nop, nop, asm.ebreak()]})
    t0 = _check_visible_from(samples, got, exp, 38, _engine_record(D0))
    for k in samples:
        if isinstance(k, int) and k >= 30:
            want = ContextState.FAULT if k >= 39 else ContextState.RUNNING
            assert samples[k]["states"][4] == want, k
    c4 = t0["contexts"][4]
    assert c4["state"] == "fault" and c4["pc"] == CODE * 5 + 8
    assert c4["retired"] == 3 + 2                # the dispatch and the two nops


# The address fault (check 1) of the step right after a data-checked step whose word is good:
# visible from (its cycle) + 1, as any address fault. (name: descriptor, parameters, extra
# memory, faulting step, addr)
ADDR_AFTER_CHECK = {
    # step 7 good (checked), step 8 reads p_base = P + 4: not a multiple of 8
    "param_after_desc": (good(mode=Mode.TFLITE, p_base=P + 4), None, None, 8, P + 4),
    # TFLITE, step 9 (shift 0, checked) good, step 10 = W(0, 0) at w_base = W + 4
    "wload_after_shift": (good(mode=Mode.TFLITE, w_base=W + 4), None, None, 10, W + 4),
    # FLOAT32, step 8 (multiplier 1.0, checked) good at p_base = sram_bytes − 8, step 9 reads
    # p_base + 8 = sram_bytes: out of range
    "param_after_mult": (good(mode=Mode.FLOAT32, p_base=SRAM - 8), None,
                         {SRAM - 8: params([0], [0x3F800000], [0])[:8]}, 9, SRAM),
}


@pytest.mark.parametrize("name", sorted(ADDR_AFTER_CHECK))
def test_address_fault_after_a_good_checked_step(monkeypatch, name):
    desc, par, extra, step, addr = ADDR_AFTER_CHECK[name]
    samples, got, exp = _run(monkeypatch, desc, par, extra=extra)
    _check_visible_from(samples, got, exp, S0 + step + 1, _engine_record(addr))


def test_data_fault_wins_over_the_next_steps_address_fault(monkeypatch):
    # step 7 bad (qmin > qmax, check 2, visible from 38) and step 8 at 37 would read p_base =
    # P + 4 (check 1, visible from 38 too): §12, in step order the earlier step's fault wins
    # and "a step the engine makes in cycle s + 1 after a data fault of step s has no effect
    # and no fault of its own": the record's addr is d
    samples, got, exp = _run(monkeypatch, good(mode=Mode.TFLITE, qmin=5, qmax=-3, p_base=P + 4))
    _check_visible_from(samples, got, exp, S0 + 7 + 2, _engine_record(D0))
