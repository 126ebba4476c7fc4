"""Golden model: the named state records (tessera/golden_model/contexts.py, tiles.py,
schedule.py, sync.Barrier, memorder.py). Expected values come from docs/architecture.md §9
(a host start: every context RUNNING at the entry, registers, counters and CSRs 0, SRAM kept),
§7 (the final state applies every decided change; a faulting context enters FAULT and stays
FAULT, docs/design/contract-v2.md §6 point 6; no stop decided at a start) and §4 / §12
(contract v2: data-memory effects in M = t + 4, a LOAD/STORE owns the SRAM data ports in its M
cycle); the records' dtypes and shapes are the ones their docstrings promise and the compiled
fast engine is handed."""

import numpy as np
import pytest

from tessera.golden_model import Array
from tessera.golden_model.contexts import NEVER, Contexts
from tessera.golden_model.memorder import (PORT_RING, LoadWork, MStageQueue, PortSlots,
                                           StoreWork)
from tessera.golden_model.schedule import Schedule
from tessera.golden_model.sync import CAT_COMPUTE, Barrier
from tessera.golden_model.tiles import FAULT_RING, Tiles
from tessera.spec.config import ArrayConfig
from tessera.spec.result import ContextState
from tessera.toolchain import asm


def test_contexts_after_a_host_start():
    c = Contexts.start(3, 4, 0x40)
    shapes = {"regs": ((3, 4, 32), np.uint32), "pc": ((3, 4), np.uint32),
              "state": ((3, 4), np.uint8), "pend_cycle": ((3, 4), np.int64),
              "pend_state": ((3, 4), np.uint8), "retired": ((3, 4), np.uint64),
              "exit_code": ((3, 4), np.uint32), "div_turn": ((3, 4), np.uint8),
              "div_word": ((3, 4), np.uint32), "div_any": ((4,), np.bool_),
              "stack_limit": ((3, 4), np.uint32)}
    for name, (shape, dtype) in shapes.items():
        a = getattr(c, name)
        assert a.shape == shape and a.dtype == dtype and a.flags.c_contiguous, name
    assert (c.pc == 0x40).all()                                   # §9: pc = entry
    assert (c.state == int(ContextState.RUNNING)).all()
    assert (c.pend_cycle == NEVER).all()                          # nothing pending
    assert not c.regs.any() and not c.retired.any() and not c.stack_limit.any()
    with pytest.raises(AttributeError):                           # frozen layout
        c.regs = np.zeros((3, 4, 32), np.uint32)


def test_final_state_applies_decided_changes():
    c = Contexts.start(2, 2, 0)
    # tile 1 context 0 decided to halt at cycle 7 (not yet visible); §7's final state shows it
    c.pend_cycle[1, 0] = 7
    c.pend_state[1, 0] = int(ContextState.HALTED)
    fs = c.final_state()
    assert fs.tolist() == [[0, 0], [int(ContextState.HALTED), 0]]
    assert c.state[1, 0] == int(ContextState.RUNNING)             # the visible state is kept
    # a context that is FAULT stays FAULT: a HALTED decided earlier (an ecall issued before
    # an engine fault of the same context became visible) does not override it
    c.state[0, 1] = int(ContextState.FAULT)
    c.pend_cycle[0, 1] = 9
    c.pend_state[0, 1] = int(ContextState.HALTED)
    assert c.final_state()[0, 1] == int(ContextState.FAULT)


def test_tiles_schedule_barrier_after_a_host_start():
    t = Tiles.start(5)
    assert t.acc.shape == (4, 5) and t.acc.dtype == np.int64
    assert (t.category == CAT_COMPUTE).all() and (t.xphase_end == NEVER).all()
    assert not t.xphase.any() and t.faults == [None] * 5
    assert (t.fault_vis == NEVER).all() and t.fault_vis.dtype == np.int64     # no record
    assert t.insn_fault_vis.shape == (5, FAULT_RING) and (t.insn_fault_vis == -1).all()
    s = Schedule.start(5, 3)
    assert s.cycle == 0 and s.live == 15 and s.stop_at == NEVER and s.status is None
    assert s.running_ctx.tolist() == [True, True, True]
    b = Barrier()
    assert b.release == NEVER and not b.armed


def test_m_stage_queue_orders_work_by_its_m_cycle():
    # an instruction issued at t acts on memory in M = t + 4 (§4): a store issued at 10 and a
    # load issued at 11 are queued for 14 and 15; two items of one M cycle keep their order
    q = MStageQueue.start()
    assert not q
    tiles = np.array([0, 2])
    st = StoreWork(tiles, np.array([8, 8], np.uint32), np.array([1, 2], np.uint32), 4)
    ld = LoadWork(1, tiles, 5, np.array([8, 8], np.uint32), 4, False, None)
    q.add(15, ld)
    q.add(14, st)
    q.add(14, ld)
    assert q and q.pop(13) is None
    assert [(m, [type(i).__name__ for i in w]) for m, w in q.drain()] == \
        [(14, ["StoreWork", "LoadWork"]), (15, ["LoadWork"])]
    assert not q                                  # drained


def test_port_slots_answer_only_for_their_cycle():
    # ring of PORT_RING (> Stage.M = 4) issue cycles: the word issued at k - 4 is still known
    # at k; an older row that was reused answers None for its old cycle
    assert PORT_RING > 4
    p = PortSlots.start(3)
    assert p.at(0) is None                                  # nothing recorded yet
    p.record(9, np.array([0, 2]), np.array([True, False]))
    assert p.at(9).tolist() == [True, False, False]         # tile 1 issued nothing at 9
    assert p.at(9 - PORT_RING) is None                      # same row, other cycle
    p.record(9 + PORT_RING, np.array([1]), np.array([True]))
    assert p.at(9) is None and p.at(9 + PORT_RING).tolist() == [False, True, False]


@pytest.mark.parametrize("engine", ["fast", "vector"])
def test_records_are_the_live_arrays(engine):
    # The public views are the records' arrays, and a run writes them in place (the fast
    # engine is handed their pointers): t0 of context c: li x5, 7; ecall (§4: issue at
    # i*T + c), so x5 = 7 in every context and every context halts.
    arr = Array(ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024), engine=engine)
    arr.write_mem(None, 0, asm.program([asm.addi(5, 0, 7), asm.ecall()]))
    regs, pc = arr.regs, arr.pc
    res = arr.run(1000)
    assert res.status == "halted"
    assert arr.regs is regs and arr.pc is pc
    assert (regs[:, :, 5] == 7).all() and (pc == 8).all()
