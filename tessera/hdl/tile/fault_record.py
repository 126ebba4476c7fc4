"""The tile's fault record (architecture §7): the first visible fault, core, engine or exchange.

The record is cleared by ``start`` and then takes the first fault that becomes visible on the
tile (contract v2, §7 "Stop": "a tile keeps the fault that became visible first"):

* the core's ``insn`` fault in cycle k — the instruction in M (issued at k - 4, visible from
  k + 1) — or its ``eng`` fault, the matrix engine's step fault of cycle k (visible from k + 1;
  the core already drops it when an instruction fault of the same cycle exists, §12);
* the exchange engine's ``fault`` of the step of cycle c (visible from c + 1).

The decision which fault the record keeps is made at the end of its cycle, so ``valid`` is high
exactly from the cycle the first fault is visible. The exception is the core's ``eng`` fault
with ``eng_now`` (the matrix engine's registered data-check fault of step s, presented in s + 2
and visible from s + 2): it is taken at the end of s + 2 if the record is empty, or if the
record is the exchange engine's fault taken at the end of s + 1 (visible from s + 2 too: §7
"Stop" keeps the engine's of the two; an instruction fault taken then wins, and the core
already drops the engine fault in that case). The tile's "fault visible" output is
``valid | eng_now``. Every fault of a cycle <= t_s takes effect (no commit condition in v2).
The core's own faults and the exchange engine's never come in the same cycle (a tile in its
exchange phase has no instruction in M and its matrix engine does not step), but the engine's
registered fault of the step just before the phase comes in the phase's second cycle, visible
one cycle before an exchange fault of that cycle: the core's is taken.

The record's fields (``record``) follow one cycle later, from registers: every source's fields
are registered in every cycle without a clock enable, and the fields are copied from the taken
source's register at the end of the next cycle, so that no fault decision drives the ~100
clock enables or data multiplexers of the record (it ended the tile's worst paths,
docs/synthesis.md). ``record.valid`` is ``valid`` one cycle later: the host reads a complete
record, from the cycle after the fault is visible. A run's last fault is visible by
C + COMMIT_DELAY - 1 and STATUS leaves RUNNING at C + COMMIT_DELAY + D - 1 >= C + COMMIT_DELAY
+ 1 (D >= 2, :mod:`tessera.hdl.array.array`), so the record is complete when STATUS is final.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig

from ..interfaces import FaultSignature
from ..interfaces import check_config

__all__ = ["FaultRecord"]


class FaultRecord(wiring.Component):
    """First fault since ``start``, held for the host (FAULT_* tile registers).

    Parameters
    ----------
    config : ArrayConfig
        Gives ``context_bits``.

    Members
    -------
    clear : In(1)
        The start pulse: no record from the next cycle on.
    insn : In(FaultSignature(config))
        The core's fault of the instruction in M, decided this cycle.
    eng : In(FaultSignature(config))
        The core's matrix-engine fault taken this cycle (never with ``insn`` unless
        ``eng_now``).
    eng_now : In(1)
        ``eng`` is visible in this cycle (the matrix engine's registered fault).
    xchg : In(FaultSignature(config))
        The exchange engine's fault in this cycle's step.
    valid : Out(1)
        A fault is recorded: from the cycle the first fault is visible.
    record : Out(FaultSignature(config))
        The record (``record.valid`` = 0: none), from the cycle after its fault is visible.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("FaultRecord", config)
        super().__init__({
            "clear": In(1), "insn": In(FaultSignature(config)),
            "eng": In(FaultSignature(config)), "eng_now": In(1),
            "xchg": In(FaultSignature(config)),
            "valid": Out(1), "record": Out(FaultSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        insn, eng, xchg, rec, valid = self.insn, self.eng, self.xchg, self.record, self.valid
        names = ("xchg", "context", "cause", "pc", "addr")

        # stage 1 (end of the fault's cycle): which source is kept, and every source's fields
        take = {s: Signal(name=f"take_{s}") for s in ("insn", "eng", "xchg")}
        held = {}
        for src_name, src in (("insn", insn), ("eng", eng), ("xchg", xchg)):
            held[src_name] = regs = {f: Signal.like(getattr(src, f), name=f"{src_name}_{f}_q")
                                     for f in names}
            m.d.sync += [regs[f].eq(getattr(src, f)) for f in names]
        # take["xchg"]: the exchange fault was taken at the end of the last cycle
        with m.If(self.clear):
            m.d.sync += [valid.eq(0), *[t.eq(0) for t in take.values()]]
        with m.Else():
            t_insn = insn.valid & ~valid       # an engine fault of this cycle wins in stage 2
            t_eng = eng.valid & (~valid | (self.eng_now & take["xchg"]))
            t_xchg = xchg.valid & ~insn.valid & ~eng.valid & ~valid
            m.d.sync += [valid.eq(valid | insn.valid | eng.valid | xchg.valid),
                         take["insn"].eq(t_insn), take["eng"].eq(t_eng),
                         take["xchg"].eq(t_xchg)]

        # stage 2 (end of the next cycle): the kept source's fields, from its registers; the
        # engine's first (an instruction fault comes with an engine fault only when that one
        # is visible now, and it is kept, §12)
        with m.If(self.clear):
            m.d.sync += [rec.valid.eq(0), *[getattr(rec, f).eq(0) for f in names]]
        for src_name in ("eng", "insn", "xchg"):
            with m.Elif(take[src_name]):
                m.d.sync += [rec.valid.eq(1),
                             *[getattr(rec, f).eq(held[src_name][f]) for f in names]]
        return m
