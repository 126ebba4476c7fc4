"""Matrix engine: descriptor layout, codes and the step count (docs/architecture.md §12).

A command is started by ``mrun rs1`` with a 64-byte descriptor at byte address ``rs1``. This
module defines the descriptor's little-endian layout once (the golden model, the RTL, the C
header ``tessera.h`` and the kernels read it from here), the output modes and flags, the
accumulator depth and the closed-form step count of a command.

Standard library only (``tessera.spec`` is the ground layer).
"""

from __future__ import annotations

import dataclasses
import enum
import struct

__all__ = [
    "DESC_BYTES", "DESC_WORDS", "PARAM_BYTES", "ACC_DEPTH", "VECTOR_BYTES", "Mode", "Flag",
    "DESC_FIELDS", "DESC_FORMAT", "Descriptor", "ChannelParams", "command_steps",
    "output_words", "DESC_CHECK_STEP", "BYTE_MODES", "F32_EXP_SPECIAL", "WRITE_DELAY", "ENGINE_WRITE_WORDS", "MIN_SHIFT", "MAX_SHIFT",
]

#: Bytes of a descriptor (8 SRAM words of 8 bytes, read in steps 0..7).
DESC_BYTES = 64
DESC_WORDS = DESC_BYTES // 8
#: Bytes of one channel's parameter record (bias, multiplier, shift, ignored word).
PARAM_BYTES = 16
#: Accumulator entries per lane: the largest J = J0 * J1 of one command.
ACC_DEPTH = 256
#: Bytes of one streamed or stationary vector (one 8-byte aligned SRAM read).
VECTOR_BYTES = 8
#: The step in which the descriptor fields are checked (the step reading word 7).
DESC_CHECK_STEP = DESC_WORDS - 1
#: Output word w of element j is written in step s_j + WRITE_DELAY + w (s_j: its last stream step);
#: §12 "Why WRITE_DELAY = 10": room for a pipelined MAC and requantization between the two (8
#: from 2026-12-01 to 2026-12-07, 2 before).
WRITE_DELAY = 10

#: 8-byte words one engine write step may write (§12 "Engine cycles", "Why two write words"):
#: bytes within one aligned word, or two consecutive aligned words at a and a + 8.
ENGINE_WRITE_WORDS = 2
#: Range of the TFLite ``shift`` field accepted in TFLITE mode (as the kernels' MIN/MAX_SHIFT).
MIN_SHIFT, MAX_SHIFT = -31, 30


class Mode(enum.IntEnum):
    """Output rule of a command (descriptor byte 49)."""
    RAW = 0        # write the C int32 accumulators (4C bytes per element)
    TFLITE = 1     # architecture §11 rule 1 (MultiplyByQuantizedMultiplier), + zp, clamp
    FLOAT32 = 2    # §11 rule 2 (onnxruntime): rne(fl32(fl32(acc) * M)) + zp, clamp
    # 3..255 are reserved (an engine fault).


#: The byte-output modes (C bytes per element, OW = 1; ``zp``/``qmin``/``qmax`` are checked).
BYTE_MODES = (Mode.TFLITE, Mode.FLOAT32)
#: Exponent field of a binary32 infinity or NaN: a FLOAT32 multiplier with it faults (§12).
F32_EXP_SPECIAL = 0xFF


class Flag(enum.IntFlag):
    """Descriptor byte 50."""
    A_UNSIGNED = 1     # streamed bytes are uint8 (else int8)
    OUT_UNSIGNED = 2   # TFLITE / FLOAT32 output is uint8 (else int8)
    K_GATHER = 4       # k1 offsets from the gather table at ak_s1 (one gather step per k1)


#: (name, struct code, byte offset) of every descriptor field, in layout order.
DESC_FIELDS: tuple = (
    ("a_base", "I", 0), ("a_s0", "I", 4), ("a_s1", "I", 8), ("ak_s1", "I", 12),
    ("w_base", "I", 16), ("w_sm", "I", 20),
    ("c_base", "I", 24), ("c_s0", "I", 28), ("c_s1", "I", 32),
    ("p_base", "I", 36),
    ("J0", "H", 40), ("J1", "H", 42), ("K0", "H", 44), ("K1", "H", 46),
    ("C", "B", 48), ("mode", "B", 49), ("flags", "B", 50),
    ("zp", "h", 52), ("qmin", "h", 54), ("qmax", "h", 56),
)
#: ``struct`` format of the whole 64-byte descriptor (ignored bytes as pad bytes).
DESC_FORMAT = "<10I4H3Bx3h6x"
assert struct.calcsize(DESC_FORMAT) == DESC_BYTES


@dataclasses.dataclass(frozen=True, kw_only=True)
class Descriptor:
    """One engine command (architecture §12 "Descriptor"); addresses and strides in bytes.

    Values are stored as given; :meth:`pack` wraps the u32 fields modulo 2^32 (so negative
    strides work) and raises ``ValueError`` for a value that does not fit its u16/u8/i16 field.
    Whether the values are *valid* for the engine is the engine's check (§12 "Engine faults"),
    not this class's: tests need to build bad descriptors.
    """
    a_base: int = 0
    a_s0: int = 0
    a_s1: int = 0
    ak_s1: int = 0
    w_base: int = 0
    w_sm: int = 0
    c_base: int = 0
    c_s0: int = 0
    c_s1: int = 0
    p_base: int = 0
    J0: int = 1
    J1: int = 1
    K0: int = 1
    K1: int = 1
    C: int = 1
    mode: int = Mode.TFLITE
    flags: int = 0
    zp: int = 0
    qmin: int = -128
    qmax: int = 127

    def pack(self) -> bytes:
        """The 64 descriptor bytes (little-endian, ignored bytes zero).

        Raises
        ------
        ValueError
            If a u16/u8/i16 field is out of its range; the message names the field.
        """
        values = []
        for name, code, _ in DESC_FIELDS:
            v = int(getattr(self, name))
            if code == "I":
                v &= 0xFFFF_FFFF
            else:
                lo, hi = {"H": (0, 0xFFFF), "B": (0, 0xFF), "h": (-0x8000, 0x7FFF)}[code]
                if not lo <= v <= hi:
                    raise ValueError(f"Descriptor.{name} = {v} does not fit its field "
                                     f"({lo}..{hi})")
            values.append(v)
        return struct.pack(DESC_FORMAT, *values)

    @classmethod
    def unpack(cls, data: bytes) -> "Descriptor":
        """Inverse of :meth:`pack` (u32 fields come back unsigned)."""
        if len(data) != DESC_BYTES:
            raise ValueError(f"a descriptor is {DESC_BYTES} bytes, not {len(data)}")
        values = struct.unpack(DESC_FORMAT, bytes(data))
        return cls(**{name: v for (name, _, _), v in zip(DESC_FIELDS, values)})

    @property
    def J(self) -> int:
        """Elements of the command, J0 * J1."""
        return self.J0 * self.J1

    @property
    def KB(self) -> int:
        """8-byte blocks of the reduction, K0 * K1."""
        return self.K0 * self.K1


@dataclasses.dataclass(frozen=True)
class ChannelParams:
    """One channel's 16-byte parameter record at ``p_base + 16 m`` (§12).

    ``multiplier`` is the int32 word as stored: the TFLite quantized multiplier in ``TFLITE``
    mode, the binary32 bit pattern of the float32 multiplier M in ``FLOAT32`` mode (build that
    record with :meth:`float32`).
    """
    bias: int = 0
    multiplier: int = 0
    shift: int = 0

    @classmethod
    def float32(cls, bias: int, multiplier) -> "ChannelParams":
        """The ``FLOAT32``-mode record of one channel (architecture §12 "Semantics").

        Parameters
        ----------
        bias : int
            int32 bias at scale ``x_scale · w_scale`` (added to the accumulator, wrapping).
        multiplier : float
            The float32 multiplier ``M = fl32(fl32(x_scale · w_scale) / y_scale)`` of
            architecture §11 rule 2 (e.g. ``numpy.float32``, or a Python float that is exactly
            a float32 value); stored as its binary32 bit pattern, ``shift`` = 0.

        Raises
        ------
        ValueError
            If ``multiplier`` is not finite or not exactly representable in binary32 (a
            silent rounding here would change the rule's result), or ``bias`` is not int32.
        """
        v = float(multiplier)
        if v != v or v in (float("inf"), float("-inf")):
            raise ValueError(f"ChannelParams.float32: multiplier {multiplier!r} is not finite")
        try:
            bits = struct.pack("<f", v)
        except OverflowError:
            raise ValueError(f"ChannelParams.float32: multiplier {multiplier!r} is outside "
                             f"the float32 range") from None
        if struct.unpack("<f", bits)[0] != v:
            raise ValueError(f"ChannelParams.float32: multiplier {multiplier!r} is not a float32 "
                             f"value (round it with numpy.float32 first)")
        return cls(int(bias), struct.unpack("<i", bits)[0], 0)

    def pack(self) -> bytes:
        """16 bytes: bias, multiplier, shift as little-endian int32, then 4 zero bytes.

        Raises
        ------
        ValueError
            If a value is outside the int32 range.
        """
        for name in ("bias", "multiplier", "shift"):
            v = getattr(self, name)
            if not -(1 << 31) <= v < (1 << 31):
                raise ValueError(f"ChannelParams.{name} = {v} is outside the int32 range")
        return struct.pack("<iiiI", self.bias, self.multiplier, self.shift, 0)


def output_words(mode: int, channels: int) -> int:
    """OW: write steps per element in the last block (§12 "Step schedule").

    ``ceil(4C / (8 · ENGINE_WRITE_WORDS))`` = ceil(C/4) in ``RAW`` mode (each write step writes
    up to two consecutive 8-byte words of the element's 4C bytes), else 1 (C bytes).
    """
    if mode != Mode.RAW:
        return 1
    return -(-4 * channels // (8 * ENGINE_WRITE_WORDS))


def command_steps(desc: Descriptor) -> int:
    """Steps of a command that does not fault: ``8 + 2C + G·K1 + KB·C + (KB−1)·J + J·OW + WRITE_DELAY``
    (§12; G = 1 with ``K_GATHER``).

    The engine is busy from its accept cycle through the cycle of its last step; with no
    load, store or exchange on the tile, step s is at cycle accept + 1 + s.
    """
    c, j, kb = desc.C, desc.J, desc.KB
    g = desc.K1 if desc.flags & Flag.K_GATHER else 0
    return (DESC_WORDS + 2 * c + g + kb * c + (kb - 1) * j + j * output_words(desc.mode, c)
            + WRITE_DELAY)
