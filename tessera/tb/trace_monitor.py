"""Per-cycle collector of ``tessera_array``'s retire-trace ports (parity runs only).

The top exports, concatenated over tiles with tile 0 in the low bits (docs/rtl.md):
``trace_valid[N]``, ``trace_context``, ``trace_pc``, ``trace_insn``, ``trace_rd``,
``trace_value``, ``trace_st_mask``, ``trace_st_addr``, ``trace_st_data``. The trace shows
an instruction in the cycle after its W stage (issue cycle + ``TRACE_DELAY`` = 6).

This costs one Python wake-up per clock cycle (~40-80k cycles/s), so it is only started
for runs that compare against the golden model's trace. Records have the golden model's
trace keys; ``cycle`` counts clock edges since :meth:`TraceMonitor.start` minus ``TRACE_DELAY`` (a
*relative* issue cycle: :mod:`tessera.tb.parity` aligns it with the model by a constant offset).
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import RisingEdge

from tessera.spec import trace

__all__ = ["TraceMonitor", "TRACE_FIELDS", "W_STAGE_DELAY"]

#: Port suffixes and the trace-record key each one fills (:mod:`tessera.spec.trace`).
TRACE_FIELDS = tuple((f.port, f.key) for f in trace.TRACE_FIELDS)
#: Cycles from issue (F) to the cycle where the trace is valid (:data:`trace.TRACE_DELAY`).
W_STAGE_DELAY = trace.TRACE_DELAY


class TraceMonitor:
    """Collect retire-trace records from the DUT every clock cycle.

    Parameters
    ----------
    dut : cocotb handle
        ``tessera_array`` with ``trace_*`` ports.
    tiles : int
        Number of tiles N (the ports are N lanes wide).

    Attributes
    ----------
    records : list of dict
        One dict per retired instruction: ``cycle`` (relative issue cycle), ``tile`` and
        the :data:`TRACE_FIELDS` keys, in retirement order (tile order within a cycle).
    """

    def __init__(self, dut, tiles: int):
        self.dut = dut
        self.tiles = tiles
        self.records: list[dict] = []
        self._task = None
        self._ports = []
        for suffix, key in TRACE_FIELDS:
            h = getattr(dut, f"trace_{suffix}")
            width = len(h)
            if width % tiles:
                raise ValueError(f"trace_{suffix} is {width} bits wide, not a multiple of "
                                 f"{tiles} tiles")
            self._ports.append((key, h, width // tiles))

    def start(self) -> None:
        """Start sampling at every rising clock edge (call right before the run starts)."""
        self.records.clear()
        self._task = cocotb.start_soon(self._sample())

    def stop(self) -> None:
        """Stop sampling."""
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _sample(self) -> None:
        dut, n = self.dut, self.tiles
        valid_h = getattr(dut, f"trace_{trace.VALID_PORT}")
        edge = RisingEdge(dut.clk)
        cycle = -W_STAGE_DELAY
        while True:
            await edge
            valid = valid_h.value
            v = int(valid) if valid.is_resolvable else 0
            if v:
                vals = [(key, int(h.value), w) for key, h, w in self._ports]
                for t in range(n):
                    if v >> t & 1:
                        rec = {"cycle": cycle, "tile": t}
                        for key, word, w in vals:
                            rec[key] = (word >> (t * w)) & ((1 << w) - 1)
                        self.records.append(rec)
            cycle += 1
