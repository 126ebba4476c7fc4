"""The tile's fault record (architecture §7): the first fault of the run, core or exchange.

The record is cleared by ``start`` and then takes the first fault:

* a core fault is final when it is seen (in X): every earlier fault was seen earlier;
* an exchange fault in the step of cycle c is final in c + 1 unless the run ended before c (a
  core fault issued at c − 1, or the run's last ``ecall`` issued at c − 1, both seen at
  c + 1: ``xcommit`` low). So the exchange event goes through a one-cycle register. Its
  ``xchg``, ``context`` and ``cause`` members are constants of the exchange engine (1, null,
  EXCHANGE_FAULT), so only ``valid``, ``pc`` and ``addr`` need registering.

When both are candidates in one cycle the core fault is taken (``xcommit`` is low then
anyway: that core fault ends the run before the exchange step).
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
        The core's fault in X this cycle.
    xchg : In(FaultSignature(config))
        The exchange engine's fault in this cycle's step.
    xcommit : In(1)
        The exchange step of the previous cycle belongs to the run.
    record : Out(FaultSignature(config))
        The record (``record.valid`` = 0: none).

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("FaultRecord", config)
        super().__init__({
            "clear": In(1), "core": In(FaultSignature(config)),
            "xchg": In(FaultSignature(config)), "xcommit": In(1),
            "record": Out(FaultSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        core, xchg, rec = self.core, self.xchg, self.record
        xf_q = Signal()
        xf_pc = Signal(32)
        xf_addr = Signal(32)
        fields = [rec.valid, rec.xchg, rec.context, rec.cause, rec.pc, rec.addr]
        with m.If(self.clear):
            m.d.sync += [s.eq(0) for s in fields] + [xf_q.eq(0)]
        with m.Else():
            m.d.sync += [xf_q.eq(xchg.valid), xf_pc.eq(xchg.pc), xf_addr.eq(xchg.addr)]
            with m.If(~rec.valid):
                with m.If(core.valid):
                    m.d.sync += [rec.valid.eq(1), rec.xchg.eq(core.xchg),
                                 rec.context.eq(core.context), rec.cause.eq(core.cause),
                                 rec.pc.eq(core.pc), rec.addr.eq(core.addr)]
                with m.Elif(xf_q & self.xcommit):
                    m.d.sync += [rec.valid.eq(1), rec.xchg.eq(xchg.xchg),
                                 rec.context.eq(xchg.context), rec.cause.eq(xchg.cause),
                                 rec.pc.eq(xf_pc), rec.addr.eq(xf_addr)]
        return m
