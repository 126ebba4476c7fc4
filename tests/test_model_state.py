"""Golden model: the named state records (tessera/golden_model/contexts.py, tiles.py,
schedule.py, sync.Barrier, memorder.py). Expected values come from docs/architecture.md §9
(a host start: every context RUNNING at the entry, registers, counters and CSRs 0, SRAM kept)
and §7 (the final state applies every decided change); the records' dtypes and shapes are
the ones their docstrings promise and the compiled fast engine is handed."""

import numpy as np
import pytest

from tessera.golden_model import Array
from tessera.golden_model.contexts import NEVER, Contexts
from tessera.golden_model.memorder import PortSlots, StoreRecord
from tessera.golden_model.schedule import Schedule
from tessera.golden_model.sync import CAT_COMPUTE, Barrier
from tessera.golden_model.tiles import Tiles
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


def test_tiles_schedule_barrier_after_a_host_start():
    t = Tiles.start(5)
    assert t.acc.shape == (4, 5) and t.acc.dtype == np.int64
    assert (t.category == CAT_COMPUTE).all() and (t.xphase_end == NEVER).all()
    assert not t.xphase.any() and t.faults == [None] * 5
    s = Schedule.start(5, 3)
    assert s.cycle == 0 and s.live == 15 and not s.stop and s.status is None
    assert s.running_ctx.tolist() == [True, True, True]
    b = Barrier()
    assert b.release == NEVER and not b.armed


def test_store_record_keeps_only_the_latest_cycle():
    st = StoreRecord.start(3)
    assert st.cycle == -1 and (st.word == -1).all()
    st.begin(10)
    st.word[1] = 5
    st.begin(10)                        # the same cycle: tile 1's store stays
    assert st.word.tolist() == [-1, 5, -1]
    st.begin(11)                        # a later cycle: the older stores are forgotten
    assert st.cycle == 11 and st.word.tolist() == [-1, -1, -1]


def test_port_slots_answer_only_for_their_cycle():
    p = PortSlots.start(2)
    p.ls[1, 0] = True
    p.cycle[1] = 9
    tiles = np.array([0, 1])
    assert p.at(9, tiles).tolist() == [True, False]
    assert p.at(7, tiles).tolist() == [False, False]   # parity 1, but row 1 is cycle 9


@pytest.mark.parametrize("engine", ["fast", "vector"])
def test_records_are_the_live_arrays(engine):
    # The public views are the records' arrays, and a run writes them in place (the fast
    # engine is handed their pointers): t0 of context c: li x5, 7; ecall (§4: issue at
    # i*T + c), so x5 = 7 in every context and every context halts.
    arr = Array(ArrayConfig(tiles=2, contexts=4, sram_bytes=16 * 1024), engine=engine)
    arr.write_mem(None, 0, asm.program([asm.addi(5, 0, 7), asm.ecall()]))
    regs, pc = arr.regs, arr.pc
    res = arr.run(1000)
    assert res.status == "halted"
    assert arr.regs is regs and arr.pc is pc
    assert (regs[:, :, 5] == 7).all() and (pc == 8).all()
