"""Exchange-program format (docs/architecture.md, "Exchange").

An exchange program is an array of 8-byte steps in a tile's SRAM, starting at the byte
address held in the tile's ``xprog`` CSR (8-byte aligned). Each step is two little-endian
words: ``word0`` (operation and send side) and ``word1`` (receive side).

word0::

    [31:30] op       0 = STEP, 1 = IDLE, 2 = END, 3 = reserved (exchange_fault)
    STEP:  [29] send_en   [28] recv_en   [27:20] run length n - 1   [19:0] send word address
    IDLE:  [19:0] n - 1   (the step lasts n = field + 1 cycles, 1..2^20)
    END:   other bits reserved (0)

word1 (read only by a STEP with recv_en = 1)::

    [31] relative    [30:20] source tile s    [19:0] receive word address

A relative source means tile ``(this_tile + s) mod N``. Word addresses count 32-bit
words (byte address >> 2). A STEP of run length n (1..256) lasts n cycles; in its i-th cycle
it sends and receives at most one word each, at its addresses + i words. END lasts one cycle;
the tile's waiting contexts resume on the next cycle.
"""

from __future__ import annotations

import dataclasses
import enum
import struct

__all__ = ["XOp", "Step", "encode_step", "decode_step", "encode_program", "decode_program",
           "STEP_BYTES", "ADDR_BITS", "SRC_BITS", "MAX_IDLE", "OP_SHIFT", "OP_BITS",
           "SEND_EN_BIT", "RECV_EN_BIT", "RELATIVE_BIT", "SRC_SHIFT", "ADDR_SHIFT",
           "ADDR_MASK", "SRC_MASK", "RUN_SHIFT", "RUN_BITS", "MAX_RUN"]

#: Bytes per step (two 32-bit words).
STEP_BYTES = 8
# Field positions (bit numbers within the step word named in the layout above). Every user
# of the format -- encode/decode below, the HDL exchange engine, the golden model's engine,
# tessera.h -- takes them from here.
#: word0: op in bits [OP_SHIFT + OP_BITS - 1 : OP_SHIFT].
OP_SHIFT = 30
OP_BITS = 2
#: word0 (STEP): send enable and receive enable bits.
SEND_EN_BIT = 29
RECV_EN_BIT = 28
#: word1: relative-source bit, source tile field [SRC_SHIFT + SRC_BITS - 1 : SRC_SHIFT].
RELATIVE_BIT = 31
SRC_SHIFT = 20
SRC_BITS = 11
#: Word addresses (word0: send, word1: receive; word0 of IDLE: n - 1) in [ADDR_SHIFT + ADDR_BITS - 1 : ADDR_SHIFT].
ADDR_SHIFT = 0
ADDR_BITS = 20
MAX_IDLE = 1 << ADDR_BITS
#: word0 (STEP): run length n - 1 in [RUN_SHIFT + RUN_BITS - 1 : RUN_SHIFT]; n in 1..MAX_RUN.
RUN_SHIFT = 20
RUN_BITS = 8
MAX_RUN = 1 << RUN_BITS
ADDR_MASK = (1 << ADDR_BITS) - 1
SRC_MASK = (1 << SRC_BITS) - 1


class XOp(enum.IntEnum):
    STEP = 0
    IDLE = 1
    END = 2
    RESERVED = 3


@dataclasses.dataclass(frozen=True)
class Step:
    """One exchange step, decoded.

    Parameters
    ----------
    op : XOp
    send_addr : int or None
        Byte address of the word sent this cycle (STEP only), 4-byte aligned.
    recv_src : int or None
        Source tile index (absolute, or offset when ``relative``), STEP with receive only.
    recv_addr : int or None
        Byte address the received word is written to, 4-byte aligned.
    relative : bool
        Source is ``(this_tile + recv_src) mod N``.
    cycles : int
        Duration in cycles (IDLE: n ≥ 1; STEP: its run length n, 1..MAX_RUN, moving n
        consecutive words; END: 1).
    """
    op: XOp
    send_addr: int | None = None
    recv_src: int | None = None
    recv_addr: int | None = None
    relative: bool = False
    cycles: int = 1

    @staticmethod
    def send_recv(send_addr=None, recv_src=None, recv_addr=None, relative=False,
                  run: int = 1) -> "Step":
        """A STEP; ``run`` > 1 moves ``run`` consecutive words (addresses + 4i in cycle i)."""
        return Step(XOp.STEP, send_addr, recv_src, recv_addr, relative, run)

    @staticmethod
    def idle(n: int) -> "Step":
        return Step(XOp.IDLE, cycles=n)

    @staticmethod
    def end() -> "Step":
        return Step(XOp.END)


def _word_addr(name: str, byte_addr: int) -> int:
    if byte_addr % 4 or not 0 <= byte_addr < 4 << ADDR_BITS:
        raise ValueError(f"exchange {name} {byte_addr:#x} must be 4-byte aligned and below 4 MiB")
    return byte_addr >> 2


def encode_step(step: Step) -> tuple[int, int]:
    """Encode ``step`` as ``(word0, word1)``.

    Raises
    ------
    ValueError
        If an address is misaligned or too large, a source does not fit 11 bits, or an
        idle run is outside 1..2^20 cycles.
    """
    if step.op == XOp.IDLE:
        if not 1 <= step.cycles <= MAX_IDLE:
            raise ValueError(f"exchange idle run of {step.cycles} cycles outside 1..{MAX_IDLE}")
        return (XOp.IDLE << OP_SHIFT) | (step.cycles - 1) << ADDR_SHIFT, 0
    if step.op == XOp.END:
        return XOp.END << OP_SHIFT, 0
    if step.op != XOp.STEP:
        raise ValueError(f"cannot encode exchange op {step.op!r}")
    if not 1 <= step.cycles <= MAX_RUN:
        raise ValueError(f"exchange step run length {step.cycles} outside 1..{MAX_RUN}")
    w0 = XOp.STEP << OP_SHIFT | (step.cycles - 1) << RUN_SHIFT
    w1 = 0
    if step.send_addr is not None:
        w0 |= 1 << SEND_EN_BIT | _word_addr("send address", step.send_addr) << ADDR_SHIFT
    if step.recv_addr is not None or step.recv_src is not None:
        if step.recv_addr is None or step.recv_src is None:
            raise ValueError("an exchange receive needs both recv_src and recv_addr")
        if not 0 <= step.recv_src <= SRC_MASK:
            raise ValueError(f"exchange source tile {step.recv_src} does not fit {SRC_BITS} bits")
        w0 |= 1 << RECV_EN_BIT
        w1 = (int(step.relative) << RELATIVE_BIT | step.recv_src << SRC_SHIFT
              | _word_addr("receive address", step.recv_addr) << ADDR_SHIFT)
    return w0, w1


def decode_step(word0: int, word1: int) -> Step:
    """Inverse of :func:`encode_step` (reserved bits ignored; op 3 decodes as RESERVED)."""
    op = XOp((word0 >> OP_SHIFT) & ((1 << OP_BITS) - 1))
    if op == XOp.IDLE:
        return Step.idle((word0 >> ADDR_SHIFT & ADDR_MASK) + 1)
    if op in (XOp.END, XOp.RESERVED):
        return Step(op)
    send = (word0 >> ADDR_SHIFT & ADDR_MASK) << 2 if word0 >> SEND_EN_BIT & 1 else None
    run = (word0 >> RUN_SHIFT & (MAX_RUN - 1)) + 1
    if word0 >> RECV_EN_BIT & 1:
        return Step(op, send, (word1 >> SRC_SHIFT) & SRC_MASK,
                    (word1 >> ADDR_SHIFT & ADDR_MASK) << 2, bool(word1 >> RELATIVE_BIT & 1),
                    run)
    return Step(op, send, cycles=run)


def encode_program(steps) -> bytes:
    """Encode a list of :class:`Step` as little-endian bytes; appends END if missing."""
    steps = list(steps)
    if not steps or steps[-1].op != XOp.END:
        steps.append(Step.end())
    out = bytearray()
    for s in steps:
        out += struct.pack("<II", *encode_step(s))
    return bytes(out)


def decode_program(data: bytes) -> list[Step]:
    """Decode steps up to and including the first END (or the end of ``data``)."""
    steps = []
    for off in range(0, len(data) - len(data) % STEP_BYTES, STEP_BYTES):
        w0, w1 = struct.unpack_from("<II", data, off)
        steps.append(decode_step(w0, w1))
        if steps[-1].op == XOp.END:
            break
    return steps
