"""The tile's fault record (architecture §7): the first visible fault of the run.

The record is cleared by ``start`` and then takes the first fault presented to it, written at the
end of the cycle it is presented in, so it holds (``record.valid``) from the next cycle:

* the core's fault (``core``): an instruction fault decided in this cycle (visible from the
  next), else the matrix engine's fault that the core forwards (§12);
* the exchange engine's fault of this cycle's step (``xchg``), visible from c + 1 (§6, §7
  "Stop"). Its ``xchg``, ``context`` and ``cause`` members are constants of the exchange engine
  (1, null, EXCHANGE_FAULT).

Contract v2 squashes nothing issued or stepped before the stop, so every presented fault is
final. When both are candidates in one cycle the core's is taken (an exchange step and a core
fault in one cycle: not reachable, the core does not issue during the tile's exchange phase).
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
        The core's fault of this cycle (visible from the next).
    xchg : In(FaultSignature(config))
        The exchange engine's fault in this cycle's step (visible from the next).
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
            "xchg": In(FaultSignature(config)),
            "record": Out(FaultSignature(config)),
        })

    def elaborate(self, platform):
        m = Module()
        core, xchg, rec = self.core, self.xchg, self.record
        fields = [rec.valid, rec.xchg, rec.context, rec.cause, rec.pc, rec.addr]
        with m.If(self.clear):
            m.d.sync += [s.eq(0) for s in fields]
        with m.Elif(~rec.valid):
            def take(src):
                m.d.sync += [rec.valid.eq(1), rec.xchg.eq(src.xchg), rec.context.eq(src.context),
                             rec.cause.eq(src.cause), rec.pc.eq(src.pc), rec.addr.eq(src.addr)]
            with m.If(core.valid):
                take(core)
            with m.Elif(xchg.valid):
                take(xchg)
        return m
