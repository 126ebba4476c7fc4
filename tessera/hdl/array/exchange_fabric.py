"""Exchange fabric: per-sender delay line and per-receiver source mux (architecture §6).

A tile's ``x_send`` already carries the word its send bus held in the *previous* cycle (the tile
reads the sent word from its synchronous SRAM read port, docs/rtl.md "Tile ↔ array"), so the
fabric adds ``L - 1`` register stages per sender: the word of the bus of cycle c is presented to
every receiver at cycle c + L. Each receiver selects one sender with ``x_src`` (combinational mux,
no queues, no arbitration); several receivers selecting the same sender is multicast.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Array
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig

__all__ = ["ExchangeFabric"]


class ExchangeFabric(wiring.Component):
    """Delay lines plus receive muxes for N tiles.

    Parameters
    ----------
    config : ArrayConfig
        N = ``config.tiles`` senders/receivers, L = ``config.exchange_latency``.

    Members
    -------
    send : In(32 * N)
        Sender i's ``x_send`` (bits 32i..32i+31): its send bus of the previous cycle (0 when idle).
    src : In(tile_bits * N)
        Receiver i's source tile index (bits tile_bits*i ..).
    data : Out(32 * N)
        Receiver i's word: the bus of sender ``src[i]`` at cycle k − L.
    clear : In(1)
        Zero the delay lines (start pulse).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        if not isinstance(config, ArrayConfig):
            raise TypeError(f"ExchangeFabric needs an ArrayConfig, not {config!r}")
        self.config = config
        n, tb = config.tiles, config.tile_bits
        super().__init__({
            "send": In(32 * n), "src": In(tb * n), "data": Out(32 * n), "clear": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        n, tb, lat = self.config.tiles, self.config.tile_bits, self.config.exchange_latency
        outs = []
        for i in range(n):
            word = self.send[32 * i:32 * (i + 1)]
            for st in range(lat - 1):
                r = Signal(32, name=f"dl{i}_{st}")
                with m.If(self.clear):
                    m.d.sync += r.eq(0)
                with m.Else():
                    m.d.sync += r.eq(word)
                word = r
            w = Signal(32, name=f"bus{i}")
            m.d.comb += w.eq(word)
            outs.append(w)
        table = Array(outs)
        for i in range(n):
            sel = self.src[tb * i:tb * (i + 1)]
            m.d.comb += self.data[32 * i:32 * (i + 1)].eq(table[sel] if n > 1 else outs[0])
        return m
