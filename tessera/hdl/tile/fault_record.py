"""The tile's fault record (architecture §7): the first visible fault, core, engine or exchange.

The record is cleared by ``start`` and then takes the first fault that becomes visible on the
tile (contract v2, §7 "Stop": "a tile keeps the fault that became visible first"):

* the core's ``fault`` in cycle k — the instruction in M (issued at k - 4, visible from k + 1)
  or, if none, the matrix engine's step fault of cycle k (visible from k + 1; the core already
  drops it when an instruction fault of the same cycle exists, §12);
* the exchange engine's ``fault`` of the step of cycle c (visible from c + 1).

Each is written at the end of its cycle, so ``record.valid`` is high exactly from the cycle the
first fault is visible. The exception is the core's fault with ``core_now`` (the matrix
engine's registered data-check fault of step s, presented in s + 2 and visible from s + 2):
it is written at the end of s + 2 if the record is empty, or if the record is the exchange
engine's fault written at the end of s + 1 (visible from s + 2 too: §7 "Stop" keeps the
engine's of the two; an instruction fault written then wins, and the core already drops the
engine fault in that case). The tile's "fault visible" output is ``record.valid | core_now``.
Every fault of a cycle <= t_s takes effect (no commit condition in v2). The core's own faults
and the exchange engine's never come in the same cycle (a tile in its exchange phase has no
instruction in M and its matrix engine does not step), but the engine's registered fault of
the step just before the phase comes in the phase's second cycle, visible one cycle before an
exchange fault of that cycle: the core's is taken.
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
    core : In(FaultSignature(config))
        The core's fault decided this cycle (instruction in M or matrix-engine step).
    core_now : In(1)
        The core's fault is visible in this cycle (the matrix engine's registered fault).
    xchg : In(FaultSignature(config))
        The exchange engine's fault in this cycle's step.
    record : Out(FaultSignature(config))
        The record (``record.valid`` = 0: none), from the cycle its fault is visible.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("FaultRecord", config)
        super().__init__({
            "clear": In(1), "core": In(FaultSignature(config)), "core_now": In(1),
            "xchg": In(FaultSignature(config)),
            "record": Out(FaultSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        core, xchg, rec = self.core, self.xchg, self.record
        fields = [rec.valid, rec.xchg, rec.context, rec.cause, rec.pc, rec.addr]
        x_new = Signal()      # the record is the exchange fault taken at the end of the last cycle

        def take(src):
            return [rec.valid.eq(1), rec.xchg.eq(src.xchg), rec.context.eq(src.context),
                    rec.cause.eq(src.cause), rec.pc.eq(src.pc), rec.addr.eq(src.addr)]

        m.d.sync += x_new.eq(0)
        with m.If(self.clear):
            m.d.sync += [s.eq(0) for s in fields]
        with m.Elif(~rec.valid):
            with m.If(core.valid):
                m.d.sync += take(core)
            with m.Elif(xchg.valid):
                m.d.sync += take(xchg)
                m.d.sync += x_new.eq(1)
        with m.Elif(core.valid & self.core_now & x_new):
            # the engine's registered fault and the exchange fault written in the previous
            # cycle are visible from the same cycle: the engine's is kept (§7 "Stop")
            m.d.sync += take(core)
        return m
