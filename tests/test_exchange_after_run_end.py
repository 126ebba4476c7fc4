"""Regression: an exchange step one cycle after the run's last cycle leaves no fault record
(docs/architecture.md §7: a run that ends at the end of cycle C − 1 has no effect of any step
at cycles ≥ C). It kills the mutant that records an exchange fault without the ``xcommit``
check (tessera/hdl/tile/fault_record.py, before the package move hdl/tile.py;
docs/verification.md, "Mutation score"), which survived ``make test``.

Both backends (golden model and the Verilator RTL) on the ``small`` preset (N = 4, T = 6,
L = 3, D = ceil(log2 4) + 2 = 4, so the RTL build is the one the other RTL tests use).
Timing, derived by hand from architecture §4–§7 (contract v2: state changes visible from
t + 5; the stop condition first holding at v ends the run with cycles = v + D, every step of
cycles <= t_s = v + D − 1 taking effect):

* tile 0: ``sync ARRAY; ebreak`` (or ``ecall``). Context c issues the sync at t = c; the last
  (c = 5, t = 5) is visible from 10: tile 0 is arrived from 10.
* tile 1: ``addi x9, x0, 0x400; csrw xprog, x9; sync ARRAY; ecall`` (or, in the ``ecall`` case,
  ``addi; csrw; ecall``): context c issues the third instruction at t = c + 12; the last at 17,
  visible from 22. Tile 1 is arrived from 22 (waiting, or every context halted).
* tiles 2, 3: ``ecall`` (every context halted from 10: arrived, never blocking).
* k* = 22, release r = 26. Tile 0 has xprog = 0: e = r, RUNNING from 27. Tile 1 runs its
  program (STEP/END one cycle each): step j at cycle 26 + j.
* ``ebreak``: the first issue after 26 is context 27 mod 6 = 3 at 27 (pc 4): fault,
  visible from 32, t_s = 35, cycles = 36; tile 0's other contexts issue the same ebreak at
  28..32 (faults recorded too; the tile keeps context 3's, the first visible): record
  {context 3, breakpoint, pc 4, addr 4}. Tile 1's steps j = 0..9 (cycles 26..35) belong to
  the run, j = 10 (cycle 36) does not.
* ``ecall``: tile 0's contexts issue ``ecall`` at 27 (ctx 3), 28, ..., 32 (ctx 2); tiles 1..3
  are halted, so every context is HALTED from 37: status halted, cycles = 37 + 4 = 41; tile
  1's steps j = 0..14 (cycles 26..40) belong to the run, j = 15 (cycle 41) does not.

The faulting step reads absolute source 7 ≥ N (exchange_fault, pc = its address 0x400 + 8j,
addr = 7, architecture §6); the other steps only send. The ``last`` case puts the faulting step
in the run's last cycle (35 = t_s): both tiles have a fault record.
"""

import struct
from types import SimpleNamespace

import pytest

from tessera.toolchain import asm
from tessera.backends import run_program
from tessera.spec.config import PRESETS
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, encode_program

CFG = PRESETS["small"]
XPROG = 0x400


def _code(words):
    return b"".join(struct.pack("<I", w) for w in words)


def _preload(end, bad_step, n_steps):
    a = asm
    t0 = [a.sync_array(), a.ebreak() if end == "ebreak" else a.ecall()]
    if end == "ebreak":
        t1 = [a.addi(9, 0, XPROG), a.csrw(Csr.XPROG, 9), a.sync_array(), a.ecall()]
    else:
        t1 = [a.addi(9, 0, XPROG), a.csrw(Csr.XPROG, 9), a.ecall()]
    steps = [Step.send_recv(None, 7, 0x680) if j == bad_step else Step.send_recv(0x600)
             for j in range(n_steps)] + [Step.end()]
    pre = [(0, 0, _code(t0)), (1, 0, _code(t1)), (1, XPROG, encode_program(steps))]
    pre += [(t, 0, _code([a.ecall()])) for t in (2, 3)]
    return pre


CASES = {
    # name: (end, faulting step j, steps before END, status, cycles, tile 1 fault)
    "ebreak_after": ("ebreak", 10, 12, "fault", 36, None),
    "ebreak_last": ("ebreak", 9, 12, "fault", 36,
                    {"context": None, "cause": "exchange_fault", "pc": XPROG + 72, "addr": 7}),
    "ecall_after": ("ecall", 15, 17, "halted", 41, None),
}


@pytest.mark.parametrize("backend", ["model", pytest.param("rtl", marks=pytest.mark.rtl)])
@pytest.mark.parametrize("case", list(CASES))
def test_exchange_step_after_run_end(backend, case):
    end, bad, n, status, cycles, t1_fault = CASES[case]
    image = SimpleNamespace(entry=0, segments=[])
    res = run_program(backend, CFG, image, 200, preload=_preload(end, bad, n)).to_json()
    assert (res["status"], res["cycles"]) == (status, cycles)
    faults = [t["fault"] for t in res["tiles"]]
    t0_fault = ({"context": 3, "cause": "breakpoint", "pc": 4, "addr": 4}
                if end == "ebreak" else None)
    assert faults == [t0_fault, t1_fault, None, None]
