"""cocotb-side host driver for ``tessera_array``: clock, reset, AXI4-Lite master, run control.

Everything goes through the array's AXI4-Lite slave port (``s_axil_*``), using the host map
in :mod:`tessera.spec.hostmap` (docs/architecture.md §9): images are written into the tiles'
SRAM windows (no simulator-memory poking), ENTRY / MAX_CYCLES / CONTROL start the run, the
driver sleeps until ``done`` rises (no Python per cycle), and the final state is read back
from the control and tile register blocks into a :class:`tessera.result.RunResult`.

Only importable inside a cocotb simulation (it imports ``cocotb``).
"""

from __future__ import annotations

import logging

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, First, RisingEdge, Timer
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiResp

from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.spec.hostmap import (MAGIC, ContextReg, Ctrl, Status, TileReg, context_reg_addr,
                             sram_addr, tile_reg_addr)
from tessera.spec.result import not_arrived as result_not_arrived
from tessera.spec.result import (ContextResult, ContextState, Fault, RunResult, RunStatus,
                            TileResult)

__all__ = ["TesseraHost", "HostError", "RESP_NAMES", "not_arrived_tiles"]

RESP_NAMES = {0: "OKAY", 1: "EXOKAY", 2: "SLVERR", 3: "DECERR"}
_STATUS_TO_RUN = {Status.HALTED: RunStatus.HALTED, Status.FAULT: RunStatus.FAULT,
                  Status.TIMEOUT: RunStatus.TIMEOUT}


class HostError(RuntimeError):
    """The array answered a host access with an error, or did not finish in time."""


def not_arrived_tiles(tiles: list[TileResult]) -> list[int]:
    """Tiles not arrived at the ARRAY barrier, from final context states (architecture §7).

    Thin wrapper over :func:`tessera.spec.result.not_arrived`, the single definition.
    """
    return result_not_arrived([[c.state for c in t.contexts] for t in tiles])


class TesseraHost:
    """Drive a ``tessera_array`` DUT like the host would.

    Parameters
    ----------
    dut : cocotb handle
        The ``tessera_array`` top (ports ``clk``, ``rst``, ``s_axil_*``, ``done``).
    config : ArrayConfig
        The configuration the DUT was built with (checked against the geometry
        registers by :meth:`check_geometry`).
    period_ns : int
        Clock period in ns.
    """

    def __init__(self, dut, config: ArrayConfig, period_ns: int = 10):
        self.dut = dut
        self.config = config
        self.period_ns = period_ns
        self.clock = Clock(dut.clk, period_ns, unit="ns")
        # cocotbext-axi logs every transaction at INFO: far too slow and noisy for images.
        logging.getLogger(f"cocotb.{dut._name}").setLevel(logging.WARNING)
        self.axi = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil"), dut.clk, dut.rst)
        self.entry = 0
        self.max_cycles = 0
        self._clock_running = False

    # -- bring-up -------------------------------------------------------------------
    async def reset(self, cycles: int = 5) -> None:
        """Start the clock and hold ``rst`` high for ``cycles`` cycles."""
        if not self._clock_running:
            self.clock.start(start_high=False)
            self._clock_running = True
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, cycles)
        self.dut.rst.value = 0
        await ClockCycles(self.dut.clk, 2)

    async def check_geometry(self) -> None:
        """Read MAGIC / TILES / CONTEXTS / SRAM_BYTES / XLATENCY and compare with ``config``.

        Raises
        ------
        HostError
            A register disagrees with the configuration (wrong build?).
        """
        cfg = self.config
        expect = {Ctrl.MAGIC: MAGIC, Ctrl.TILES: cfg.tiles, Ctrl.CONTEXTS: cfg.contexts,
                  Ctrl.SRAM_BYTES: cfg.sram_bytes, Ctrl.XLATENCY: cfg.exchange_latency}
        for reg, want in expect.items():
            got = await self.read32(reg)
            if got != want:
                raise HostError(f"host register {reg.name} reads {got:#x}, expected {want:#x}")

    # -- raw AXI accesses ---------------------------------------------------------------
    async def write_raw(self, addr: int, data: bytes) -> int:
        """Write ``data`` at byte address ``addr``; return the (worst) AXI response code."""
        r = await self.axi.write(addr, bytes(data))
        return int(r.resp)

    async def read_raw(self, addr: int, length: int) -> tuple[bytes, int]:
        """Read ``length`` bytes at ``addr``; return ``(data, worst response code)``."""
        r = await self.axi.read(addr, length)
        return bytes(r.data), int(r.resp)

    async def write32(self, addr: int, value: int) -> None:
        """Write one 32-bit register; raises :class:`HostError` on a non-OKAY response."""
        resp = await self.write_raw(addr, (value & 0xFFFFFFFF).to_bytes(4, "little"))
        if resp != AxiResp.OKAY:
            raise HostError(f"AXI write of {value:#x} to {addr:#010x} got {RESP_NAMES[resp]}")

    async def read_words(self, addr: int, n: int) -> list[int]:
        """Read ``n`` consecutive words; raises :class:`HostError` on a non-OKAY response."""
        data, resp = await self.read_raw(addr, 4 * n)
        if resp != AxiResp.OKAY:
            raise HostError(f"AXI read of {n} word(s) at {addr:#010x} got {RESP_NAMES[resp]}")
        return [int.from_bytes(data[4 * i:4 * i + 4], "little") for i in range(n)]

    async def read32(self, addr: int) -> int:
        return (await self.read_words(addr, 1))[0]

    async def read64(self, addr: int) -> int:
        lo, hi = await self.read_words(addr, 2)
        return lo | hi << 32

    # -- program loading and run control -------------------------------------------
    async def load(self, segments) -> None:
        """Write image segments into tile SRAM through the host port.

        Parameters
        ----------
        segments : iterable of (tile, offset, bytes)
            ``offset`` is a byte offset in the tile's SRAM. Segments are padded to whole
            words with the bytes already in SRAM (byte strobes do that).

        Raises
        ------
        HostError
            A tile index or address range is outside the array, or the port answered an
            error (e.g. SLVERR because the array is running).
        """
        cfg = self.config
        for tile, offset, data in segments:
            if not 0 <= tile < cfg.tiles:
                raise HostError(f"image segment for tile {tile}: array has {cfg.tiles} tiles")
            if offset < 0 or offset + len(data) > cfg.sram_bytes:
                raise HostError(f"image segment [{offset:#x}, {offset + len(data):#x}) of tile "
                                f"{tile} does not fit the {cfg.sram_bytes}-byte SRAM")
            chunk = 4096
            for i in range(0, len(data), chunk):
                resp = await self.write_raw(sram_addr(tile, offset + i), data[i:i + chunk])
                if resp != AxiResp.OKAY:
                    raise HostError(f"loading tile {tile} SRAM at {offset + i:#x} got "
                                    f"{RESP_NAMES[resp]}")

    async def start(self, entry: int = 0, max_cycles: int = 0) -> None:
        """Set ENTRY and MAX_CYCLES and write 1 to CONTROL (architecture §9)."""
        self.entry, self.max_cycles = entry, max_cycles
        await self.write32(Ctrl.ENTRY, entry)
        await self.write32(Ctrl.MAX_CYCLES_LO, max_cycles & 0xFFFFFFFF)
        await self.write32(Ctrl.MAX_CYCLES_HI, max_cycles >> 32)
        await self.write32(Ctrl.CONTROL, 1)

    async def wait_done(self, guard_cycles: int | None = None) -> None:
        """Sleep until ``done`` rises (one trigger, no per-cycle Python).

        Parameters
        ----------
        guard_cycles : int, optional
            Give up after this many cycles; default ``max_cycles + 100000`` (or 10^7 when
            no limit was set).

        Raises
        ------
        HostError
            ``done`` did not rise in time.
        """
        if guard_cycles is None:
            guard_cycles = (self.max_cycles or 10_000_000) + 100_000
        if int(self.dut.done.value) == 1:
            return
        guard = Timer(guard_cycles * self.period_ns, unit="ns")
        fired = await First(RisingEdge(self.dut.done), guard)
        if fired is guard:
            raise HostError(f"tessera_array did not raise done within {guard_cycles} cycles")

    async def collect(self, backend: str = "rtl") -> RunResult:
        """Read status, cycles, counters, fault records and context state into a RunResult.

        Raises
        ------
        HostError
            STATUS is not a final status (the run has not ended) or a read failed.
        """
        cfg = self.config
        st = Status(await self.read32(Ctrl.STATUS))
        if st not in _STATUS_TO_RUN:
            raise HostError(f"collect() while STATUS is {st.name}; the run has not ended")
        cycles = await self.read64(Ctrl.CYCLES_LO)
        tiles = []
        for t in range(cfg.tiles):
            cw = await self.read_words(tile_reg_addr(t, TileReg.COMPUTE_LO), 14)
            c64 = lambda i: cw[i] | cw[i + 1] << 32  # noqa: E731
            counters = {"compute": c64(0), "sync": c64(2), "exchange": c64(4),
                        "retired": c64(6), "macs": c64(8), "halted": c64(10),
                        "engine": c64(12)}
            fw = await self.read_words(tile_reg_addr(t, TileReg.FAULT_VALID), 5)
            fault = None
            if fw[0] & 1:
                fault = Fault(context=None if fw[1] == 0xFFFFFFFF else fw[1],
                              cause=FaultCause(fw[2]), pc=fw[3], addr=fw[4])
            contexts = []
            for c in range(cfg.contexts):
                head = await self.read_words(context_reg_addr(t, c, ContextReg.STATE), 4)
                regs = await self.read_words(context_reg_addr(t, c, ContextReg.REGS), 32)
                state = ContextState(head[0])
                contexts.append(ContextResult(
                    context=c, state=state, pc=head[1],
                    exit_code=regs[10] if state == ContextState.HALTED else None,
                    retired=head[2] | head[3] << 32, regs=regs))
            tiles.append(TileResult(tile=t, counters=counters, fault=fault, contexts=contexts))
        status = _STATUS_TO_RUN[st]
        not_arrived = not_arrived_tiles(tiles) if status == RunStatus.TIMEOUT else []
        return RunResult(config=cfg, status=status, cycles=cycles, tiles=tiles,
                         not_arrived=not_arrived, backend=backend)

    async def run(self, segments, entry: int = 0, max_cycles: int = 0) -> RunResult:
        """Load ``segments``, start at ``entry``, wait for ``done`` and collect the result."""
        await self.load(segments)
        await self.start(entry, max_cycles)
        await self.wait_done()
        return await self.collect()
