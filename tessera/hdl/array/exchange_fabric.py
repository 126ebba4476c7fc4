"""Exchange fabric: per-sender delay line and per-receiver source mux (architecture §6).

A tile's ``exchange.send`` already carries the word its send bus held *two* cycles before (the tile
reads the sent word from its synchronous SRAM read port and registers it, so that no SRAM output
leaves the tile, docs/rtl.md "Tile ↔ array"), so the fabric adds ``L - 2`` register stages per
sender (none for L = 2: the receivers' mux then reads the tile's register): the word of the bus of
cycle c is presented to every receiver at cycle c + L. Each receiver selects one sender with its ``src`` (combinational mux,
no queues, no arbitration); several receivers selecting the same sender is multicast.
"""

from __future__ import annotations

from amaranth.hdl import Module, Signal, Array
from amaranth.lib import wiring
from amaranth.lib.wiring import In

from tessera.spec.config import ArrayConfig

from ..interfaces import ExchangeLinkSignature
from ..interfaces import check_config

__all__ = ["ExchangeFabric"]


class ExchangeFabric(wiring.Component):
    """Delay lines plus receive muxes for N tiles.

    Parameters
    ----------
    config : ArrayConfig
        N = ``config.tiles`` senders/receivers, L = ``config.exchange_latency``.

    Members
    -------
    tiles : In(ExchangeLinkSignature(config)).array(N)
        Tile i's link: ``tiles[i].send`` its send bus of two cycles before (0 when idle),
        ``tiles[i].src`` the tile it receives from, ``tiles[i].data`` the bus of that sender
        at cycle k − L.
    clear : In(1)
        Zero the delay lines (start pulse).

    Raises
    ------
    TypeError
        If ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("ExchangeFabric", config)
        super().__init__({
            "tiles": In(ExchangeLinkSignature(config)).array(config.tiles), "clear": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        n, lat = self.config.tiles, self.config.exchange_latency
        outs = []
        for i in range(n):
            word = self.tiles[i].send
            for st in range(lat - 2):
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
        for link in self.tiles:
            m.d.comb += link.data.eq(table[link.src] if n > 1 else outs[0])
        return m
