"""The links between the RTL blocks, each an :class:`amaranth.lib.wiring.Signature` declared once.

Every signature is written from the side that starts a transfer or produces the values (the
*initiator*): the core for instruction fetch and data memory, the host port for host/debug
access, the bus master for AXI4-Lite, the producer for the fault record, the retire trace and
the exchange link. The other side declares the member ``In(...)`` (the flipped signature), and
the two are wired with :func:`amaranth.lib.wiring.connect` (docs/rtl.md, "Interfaces").

=========================  ==========================  =====================================
signature                  initiator (``Out``)         target (``In``)
=========================  ==========================  =====================================
:class:`FetchSignature`    core ``fetch``              tile SRAM ``fetch`` (port A)
:class:`MemorySignature`   core ``mem``; host port     tile SRAM ``data`` (port B, write
                           ``tiles[i].sram``           port); tile SRAM ``host``
:class:`FaultSignature`    core ``fault``; engine      fault record ``core`` / ``xchg``;
                           ``fault``; record           host port ``tiles[i].fault``
:class:`TraceSignature`    core ``trace``              tile ``trace`` → array ``trace``
:class:`DebugSignature`    host port ``tiles[i].dbg``  core ``dbg``
:class:`HostTileSignature` host port ``tiles[i]``      tile ``host``
:class:`ExchangeLinkSignature` tile ``exchange``       fabric ``tiles[i]``
:class:`ExchangeSramSignature` engine ``sram``         tile SRAM ``xchg`` (ports A, B, W)
:class:`MatrixEngineSignature` core ``eng``          matrix engine ``core``
:class:`EngineSramSignature` matrix engine ``sram``  tile SRAM ``eng`` (port B, write port)
:class:`AXI4LiteSignature` host (outside the array)    array and host port ``s_axil``
=========================  ==========================  =====================================

The retire trace, the fault record and the debug read-back carry architectural values
(``ContextState``, ``FaultCause``), so those members have the enum as their shape.
"""

from __future__ import annotations

import enum

from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from tessera.spec.config import ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.spec.engine import ENGINE_WRITE_WORDS
from tessera.spec.result import COUNTER_NAMES, ContextState
from tessera.spec.trace import TRACE_FIELDS, VALID_PORT

__all__ = ["FetchSignature", "MemorySignature", "FaultSignature", "TraceSignature",
           "TRACE_MEMBERS", "check_config", "CounterSignature", "DebugSignature", "HostTileSignature",
           "ExchangeLinkSignature", "ExchangeSramSignature", "MatrixEngineSignature",
           "EngineSramSignature", "AXI4LiteSignature", "AxiResp"]


def check_config(who: str, config) -> ArrayConfig:
    """``config`` if it is an :class:`ArrayConfig`, else :class:`TypeError` naming ``who``."""
    if not isinstance(config, ArrayConfig):
        raise TypeError(f"{who} needs an ArrayConfig, not {config!r}")
    return config


def _check_width(who: str, name: str, value, lo: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < lo:
        raise ValueError(f"{who}: {name} must be an int ≥ {lo}, not {value!r}")
    return value


class FetchSignature(wiring.Signature):
    """Instruction fetch of a core (docs/rtl.md "Core ↔ tile"); synchronous read.

    Members
    -------
    en : Out(1)
        Fetch in this cycle (the pc is word aligned and inside the SRAM).
    addr : Out(32)
        Byte address of the word.
    data : In(32)
        The fetched word, in the cycle after the request.
    """

    def __init__(self):
        super().__init__({"en": Out(1), "addr": Out(32), "data": In(32)})

    def __eq__(self, other):
        return type(other) is type(self)

    def __repr__(self):
        return "FetchSignature()"


class MemorySignature(wiring.Signature):
    """Word access to a tile SRAM with byte enables; synchronous read.

    Used by the core's loads and stores (``addr_width`` = 32, the byte address A) and by the
    host port's SRAM window (``addr_width`` = ``sram_addr_bits``).

    Parameters
    ----------
    addr_width : int, keyword-only
        Width of ``addr`` (a byte address; the SRAM uses its word index).

    Members
    -------
    re : Out(1)
        Read the word at ``addr``; data in the next cycle.
    we : Out(4)
        Byte enables of a write in this cycle (lane i = byte ``addr & ~3 | i``).
    addr : Out(addr_width)
        Byte address.
    wdata : Out(32)
        Write data, already in its byte lanes.
    rdata : In(32)
        The word read, in the cycle after ``re``.

    Raises
    ------
    ValueError
        ``addr_width`` is not a positive int.
    """

    def __init__(self, *, addr_width: int = 32):
        self.addr_width = _check_width("MemorySignature", "addr_width", addr_width, 3)
        super().__init__({"re": Out(1), "we": Out(4), "addr": Out(addr_width),
                          "wdata": Out(32), "rdata": In(32)})

    def __eq__(self, other):
        return type(other) is type(self) and other.addr_width == self.addr_width

    def __repr__(self):
        return f"MemorySignature(addr_width={self.addr_width})"


class FaultSignature(wiring.Signature):
    """A fault record (architecture §7): a fault decided in this cycle, or the one a tile holds.

    The core drives it with the fault decided in M this cycle (the instruction's, ``xchg`` =
    0, or the matrix engine's of this cycle's step), the exchange engine with the fault of this
    cycle's step (``xchg`` = 1, ``context`` = 0, ``cause`` = ``EXCHANGE_FAULT``): each is
    visible from the next cycle (contract v2, architecture §7 "Stop"). The tile's
    :class:`~tessera.hdl.tile.fault_record.FaultRecord` drives it with the first visible one
    since ``start`` (read by the host port).

    Parameters
    ----------
    config : ArrayConfig
        Gives the width of ``context``.

    Members
    -------
    valid : Out(1)
        A fault (or a held record).
    xchg : Out(1)
        An exchange fault: its context is null (FAULT_CONTEXT reads 0xFFFFFFFF).
    context : Out(context_bits)
    cause : Out(FaultCause)
    pc, addr : Out(32)
        As architecture §7 defines them per cause.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("FaultSignature", config)
        super().__init__({"valid": Out(1), "xchg": Out(1), "context": Out(config.context_bits),
                          "cause": Out(FaultCause), "pc": Out(32), "addr": Out(32)})

    def __eq__(self, other):
        return (type(other) is type(self)
                and other.config.context_bits == self.config.context_bits)

    def __repr__(self):
        return f"FaultSignature(context_bits={self.config.context_bits})"


#: Retire-trace members in port order: (name, width for context_bits = cb).
def TRACE_MEMBERS(context_bits: int):  # noqa: N802 - reads like a table
    """Name and width of each retire-trace member of one core, in port order
    (the record of :mod:`tessera.spec.trace`: ``valid``, then its fields)."""
    return ((VALID_PORT, 1),) + tuple(
        (f.port, context_bits if f.width is None else f.width) for f in TRACE_FIELDS)


class TraceSignature(wiring.Signature):
    """Retire trace in the cycle after the W stage, with the register write (issue cycle +
    :data:`tessera.spec.trace.TRACE_DELAY` = 6), one record per retired instruction.

    With ``lanes`` = N it is the array's trace: every member is the concatenation of the N
    tiles' members, tile 0 in the low bits (docs/rtl.md "Top-level ports").

    Parameters
    ----------
    config : ArrayConfig
        Gives the width of ``context``.
    lanes : int, keyword-only
        Number of concatenated records (1 for a core or a tile).

    Members
    -------
    valid : Out(lanes)
        An instruction retired (its W stage is this cycle).
    context : Out(context_bits · lanes)
    pc, insn : Out(32 · lanes)
    rd : Out(5 · lanes)
        0 when no register is written.
    value : Out(32 · lanes)
        The value written to ``rd`` (0 when ``rd`` = 0).
    st_mask : Out(4 · lanes)
        Byte enables of a store (0 otherwise).
    st_addr : Out(32 · lanes)
        A & ~3 of a store (0 otherwise).
    st_data : Out(32 · lanes)
        The store's lane-aligned word as presented to the SRAM.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    ValueError
        ``lanes`` is not a positive int.
    """

    def __init__(self, config: ArrayConfig, *, lanes: int = 1):
        self.config = check_config("TraceSignature", config)
        self.lanes = _check_width("TraceSignature", "lanes", lanes)
        super().__init__({name: Out(width * lanes)
                          for name, width in TRACE_MEMBERS(config.context_bits)})

    def __eq__(self, other):
        return (type(other) is type(self) and other.lanes == self.lanes
                and other.config.context_bits == self.config.context_bits)

    def __repr__(self):
        return f"TraceSignature(context_bits={self.config.context_bits}, lanes={self.lanes})"


class CounterSignature(wiring.Signature):
    """The tile counters of architecture §8 (64 bits each), from the core that keeps them.

    Members
    -------
    compute, sync, exchange, halted, retired, macs : Out(64)
        In :data:`tessera.spec.result.COUNTER_NAMES` order.
    """

    def __init__(self):
        super().__init__({name: Out(64) for name in COUNTER_NAMES})

    def __eq__(self, other):
        return type(other) is type(self)

    def __repr__(self):
        return "CounterSignature()"


class DebugSignature(wiring.Signature):
    """Host read-back of a core's state while the array is stopped (docs/rtl.md "Debug ports").

    The initiator (the host port) selects a context and a register; the core answers. The
    selects must be held for ≥ 3 cycles; ``x`` is valid two cycles after the select (the
    register file reads it through a pipeline port while ``run`` is low), everything else is
    combinational. ``pc``, ``retired`` and ``x`` are valid only while the core is stopped
    (``run`` low and its pipeline drained); ``state`` and the counters at any time.

    Parameters
    ----------
    config : ArrayConfig
        Gives the width of ``ctx``.

    Members
    -------
    ctx : Out(context_bits)
        Context selected.
    reg : Out(5)
        Register selected.
    state : In(ContextState)
        State of ``ctx``.
    pc : In(32)
        pc of ``ctx`` (architecture §7 "final state").
    retired : In(64)
        Instructions retired by ``ctx``.
    x : In(32)
        x[``reg``] of ``ctx`` (0 for x0), two cycles after the select.
    counters : In(CounterSignature())
        The tile counters.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("DebugSignature", config)
        super().__init__({"ctx": Out(config.context_bits), "reg": Out(5),
                          "state": In(ContextState), "pc": In(32), "retired": In(64),
                          "x": In(32), "counters": In(CounterSignature())})

    def __eq__(self, other):
        return (type(other) is type(self)
                and other.config.context_bits == self.config.context_bits)

    def __repr__(self):
        return f"DebugSignature(context_bits={self.config.context_bits})"


class HostTileSignature(wiring.Signature):
    """The host port's access to one tile: SRAM window, debug read-back, fault record, xprog.

    Parameters
    ----------
    config : ArrayConfig
        Gives the SRAM address width and ``context_bits``.

    Members
    -------
    sram : Out(MemorySignature(addr_width=sram_addr_bits))
        SRAM read (data two cycles later: the tile registers it) or byte-masked write; the
        tile serves it on its ports B
        and W at the lowest priority (only while stopped, architecture §9).
    dbg : Out(DebugSignature(config))
        The core's per-context state, registers and the tile counters (state, pc and
        retired one cycle after the selects, x three, through the tile's register; counters
        as they are; pc, retired and x only while the array is stopped).
    fault : In(FaultSignature(config))
        The tile's fault record (first fault since ``start``).
    xprog : In(32)
        The tile's xprog CSR.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("HostTileSignature", config)
        super().__init__({
            "sram": Out(MemorySignature(addr_width=config.sram_addr_bits)),
            "dbg": Out(DebugSignature(config)),
            "fault": In(FaultSignature(config)),
            "xprog": In(32),
        })

    def __eq__(self, other):
        return (type(other) is type(self)
                and other.config.sram_addr_bits == self.config.sram_addr_bits
                and other.config.context_bits == self.config.context_bits)

    def __repr__(self):
        return (f"HostTileSignature(sram_addr_bits={self.config.sram_addr_bits}, "
                f"context_bits={self.config.context_bits})")


class ExchangeLinkSignature(wiring.Signature):
    """A tile's connection to the exchange fabric (docs/rtl.md "Tile ↔ array").

    Parameters
    ----------
    config : ArrayConfig
        Gives the width of ``src``.

    Members
    -------
    send : Out(32)
        The word the tile's send bus carried in the *previous* cycle (0 when not sending);
        the fabric adds L − 1 register stages.
    src : Out(tile_bits)
        Receive mux select of this cycle.
    data : In(32)
        The fabric's word for this tile: the bus of tile ``src`` at k − L.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("ExchangeLinkSignature", config)
        super().__init__({"send": Out(32), "src": Out(config.tile_bits), "data": In(32)})

    def __eq__(self, other):
        return type(other) is type(self) and other.config.tile_bits == self.config.tile_bits

    def __repr__(self):
        return f"ExchangeLinkSignature(tile_bits={self.config.tile_bits})"


class ExchangeSramSignature(wiring.Signature):
    """The exchange engine's use of its tile's SRAM (docs/rtl.md "Tile SRAM").

    Parameters
    ----------
    config : ArrayConfig
        Gives ``sram_addr_bits`` (ab).

    Members
    -------
    step_en : Out(1)
        Read the 64-bit words at dword indices ``step_addr`` and ``step_addr1`` (its successor)
        on port A in this cycle.
    step_addr, step_addr1 : Out(ab - 3)
    step_load : Out(1)
        The step window takes the two words read in the previous cycle (the program's first
        two steps, read while the tile waits at the barrier).
    step_adv : Out(1)
        The current step ends in this cycle: the window moves on by one word (the next word
        is the one read in the previous cycle after the window's second word).
    step_data : In(64)
        The current step's word, a register: the SRAM as after the writes of the cycles
        before this one (word 0 in bits 0..31).
    send : Out(1)
        A STEP sends the word at word index ``send_addr``: read on port B in this cycle, on
        the tile's exchange link (``send``) in the next.
    send_addr : Out(ab - 2)
    recv : Out(1)
        A STEP receives the fabric's word of this cycle into word index ``recv_addr``
        (written one cycle later, if the step belongs to the run).
    recv_addr : Out(ab - 2)

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("ExchangeSramSignature", config)
        ab = config.sram_addr_bits
        super().__init__({"step_en": Out(1), "step_addr": Out(ab - 3),
                          "step_addr1": Out(ab - 3), "step_load": Out(1), "step_adv": Out(1),
                          "step_data": In(64),
                          "send": Out(1), "send_addr": Out(ab - 2),
                          "recv": Out(1), "recv_addr": Out(ab - 2)})

    def __eq__(self, other):
        return (type(other) is type(self)
                and other.config.sram_addr_bits == self.config.sram_addr_bits)

    def __repr__(self):
        return f"ExchangeSramSignature(sram_addr_bits={self.config.sram_addr_bits})"


class MatrixEngineSignature(wiring.Signature):
    """The core's link to the tile's matrix engine (architecture §12, docs/rtl.md).

    Parameters
    ----------
    config : ArrayConfig
        Gives the width of ``ctx``.

    Members
    -------
    m_mem : Out(1)
        The word in M this cycle (issued ``Stage.M`` = 4 cycles ago, any turn, faulting or
        not; a failed fetch has no word) has opcode LOAD or STORE: not an engine cycle (the
        core owns the SRAM's data ports, architecture §12 "Engine cycles").
    accept : Out(1)
        An ``mrun`` retires in M this cycle (the engine was idle): the engine accepts it
        (busy from this cycle).
    desc : Out(32)
        Its descriptor address (rs1 as read in R).
    ctx : Out(context_bits)
    pc : Out(32)
        Its context c_e and pc pc_e.
    busy : In(1)
        The engine is busy in this cycle (``mrun`` / ``mwait`` in M retry).
    active : In(1)
        The engine is busy in this cycle, counting the accept cycle (the ``engine`` counter).
    macs : In(8)
        MACs of this cycle's stream step (8·C, or 0).
    fault : In(FaultSignature(config))
        An engine fault (context c_e, cause ENGINE_FAULT, pc pc_e). Without ``fault_now``:
        an address fault (§12 checks 1, 4) of this cycle's step s, visible from s + 1 like a
        fault of the instruction in M (§7 "Stop"); the core reports it unless its own
        instruction in M faults in this cycle (visible from the same cycle: that one wins,
        §12). With ``fault_now``: the engine's registered fault, visible in this cycle.
    fault_now : In(1)
        ``fault`` is the registered fault (``now_q``): a data fault (checks 2, 3) of step s,
        decided in s + 1 from the word read in s and registered, presented in s + 2 and
        visible from s + 2; or the address fault of the step made in s + 1 right after a
        data-checked step s, registered with it (visible from s + 2 = its step + 1). It is
        visible in this cycle: the core shows c_e FAULT now and reports it ahead of its own M
        fault of this cycle (visible only from the next), but drops it if the instruction in
        M of the previous cycle faulted (visible from this cycle too: that one wins, §12).

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("MatrixEngineSignature", config)
        super().__init__({
            "m_mem": Out(1), "accept": Out(1), "desc": Out(32),
            "ctx": Out(config.context_bits), "pc": Out(32),
            "busy": In(1), "active": In(1), "macs": In(8),
            "fault": In(FaultSignature(config)), "fault_now": In(1),
        })

    def __eq__(self, other):
        return (type(other) is type(self)
                and other.config.context_bits == self.config.context_bits)

    def __repr__(self):
        return f"MatrixEngineSignature(context_bits={self.config.context_bits})"


class EngineSramSignature(wiring.Signature):
    """The matrix engine's SRAM access (architecture §12 "Memory order"), one step per cycle.

    Members (``aw`` = ``sram_addr_bits`` − 3, the 8-byte word index)
    -------
    rd_en : Out(1)
        Read the word ``rd_addr`` in this step (port B; the SRAM as after all writes of
        earlier cycles); the word is on ``rd_data`` in the next cycle.
    rd_addr : Out(aw)
    rd_data : In(64)
    wr_en : Out(1)
        This step writes up to ``ENGINE_WRITE_WORDS`` = 2 consecutive 8-byte words (§12
        "Engine cycles"): ``wr_data`` bits 0..63 under ``wr_mask`` bits 0..7 into word
        ``wr_addr``, bits 64..127 under mask bits 8..15 into word ``wr_addr`` + 1 (like a store
        whose M is this cycle: written at the end of this cycle; an engine cycle has no store,
        receive or host write, architecture §12). The engine never sets a mask bit of a word
        beyond the SRAM (check 4).
    wr_addr : Out(aw)
        The first word's index (byte address / 8).
    wr_addr1 : Out(aw)
        ``wr_addr`` + 1 mod 2^aw, the second word's index (given by the engine from a register,
        so the SRAM's write address and its step-window patch need no adder).
    wr_data : Out(64 · ENGINE_WRITE_WORDS)
    wr_mask : Out(8 · ENGINE_WRITE_WORDS)
        Byte b of the write is byte 8·wr_addr + b of the SRAM.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`~tessera.spec.config.ArrayConfig`.
    """

    def __init__(self, config: ArrayConfig):
        self.config = check_config("EngineSramSignature", config)
        aw = config.sram_addr_bits - 3
        super().__init__({
            "rd_en": Out(1), "rd_addr": Out(aw), "rd_data": In(64),
            "wr_en": Out(1), "wr_addr": Out(aw), "wr_addr1": Out(aw),
            "wr_data": Out(64 * ENGINE_WRITE_WORDS),
            "wr_mask": Out(8 * ENGINE_WRITE_WORDS),
        })

    def __eq__(self, other):
        return (type(other) is type(self)
                and other.config.sram_addr_bits == self.config.sram_addr_bits)

    def __repr__(self):
        return f"EngineSramSignature(sram_addr_bits={self.config.sram_addr_bits})"


class AxiResp(enum.IntEnum):
    """AXI4 response codes (``bresp``, ``rresp``)."""
    OKAY = 0
    EXOKAY = 1
    SLVERR = 2
    DECERR = 3


class AXI4LiteSignature(wiring.Signature):
    """AXI4-Lite, from the master's side; a slave declares ``In(AXI4LiteSignature())``.

    Member names are the AXI signal names without a prefix, so a port ``s_axil`` of the
    ``tessera_array`` top becomes ``s_axil_awaddr`` … ``s_axil_rready`` in the generated
    Verilog (:func:`tessera.hdl.gen.top_ports`).

    Parameters
    ----------
    addr_width : int, keyword-only
        Width of ``awaddr`` / ``araddr``.
    data_width : int, keyword-only
        32 or 64 (``wstrb`` has ``data_width / 8`` bits).

    Members
    -------
    awaddr, awprot, awvalid : Out ; awready : In
        Write address channel.
    wdata, wstrb, wvalid : Out ; wready : In
        Write data channel.
    bresp, bvalid : In ; bready : Out
        Write response channel (``bresp`` an :class:`AxiResp`).
    araddr, arprot, arvalid : Out ; arready : In
        Read address channel.
    rdata, rresp, rvalid : In ; rready : Out
        Read data channel (``rresp`` an :class:`AxiResp`).

    Raises
    ------
    ValueError
        ``addr_width`` is not a positive int, or ``data_width`` is not 32 or 64.
    """

    def __init__(self, *, addr_width: int = 32, data_width: int = 32):
        self.addr_width = _check_width("AXI4LiteSignature", "addr_width", addr_width)
        if data_width not in (32, 64) or isinstance(data_width, bool):
            raise ValueError(f"AXI4LiteSignature: data_width must be 32 or 64, not "
                             f"{data_width!r}")
        self.data_width = data_width
        super().__init__({
            "awaddr": Out(addr_width), "awprot": Out(3), "awvalid": Out(1), "awready": In(1),
            "wdata": Out(data_width), "wstrb": Out(data_width // 8), "wvalid": Out(1),
            "wready": In(1),
            "bresp": In(AxiResp), "bvalid": In(1), "bready": Out(1),
            "araddr": Out(addr_width), "arprot": Out(3), "arvalid": Out(1), "arready": In(1),
            "rdata": In(data_width), "rresp": In(AxiResp), "rvalid": In(1), "rready": Out(1),
        })

    def __eq__(self, other):
        return (type(other) is type(self) and other.addr_width == self.addr_width
                and other.data_width == self.data_width)

    def __repr__(self):
        return f"AXI4LiteSignature(addr_width={self.addr_width}, data_width={self.data_width})"
