"""Array configuration: the single parameter object read by hdl, golden model, compiler and tb.

See ``docs/architecture.md`` section "Configuration".
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from .exchange import SRC_BITS
from .timing import PIPELINE_STAGES, decision_latency

__all__ = ["ArrayConfig", "PRESETS", "preset", "MAX_TILES", "MIN_CONTEXTS", "MAX_CONTEXTS",
           "MIN_EXCHANGE_LATENCY", "MAX_EXCHANGE_LATENCY", "ENGINE_MACS_CHOICES"]

#: Largest array the 11-bit exchange source field can address.
MAX_TILES = 1 << SRC_BITS
#: The barrel pipeline needs at least 6 contexts (an instruction takes 6 cycles, F-I-R-X-M-W;
#: architecture §1).
MIN_CONTEXTS = PIPELINE_STAGES
MAX_CONTEXTS = 16
MIN_SRAM_BYTES = 16 * 1024
MAX_SRAM_BYTES = 1024 * 1024
#: Exchange latency L range (§1): a word leaves the sender through a register and enters the
#: receiver through one, so L >= 2.
MIN_EXCHANGE_LATENCY = 2
MAX_EXCHANGE_LATENCY = 64
#: Legal ``engine_macs`` values (int8 MACs per cycle of a tile's matrix engine; 0 = none).
ENGINE_MACS_CHOICES = (0, 16, 32, 64)


@dataclass(frozen=True, kw_only=True)
class ArrayConfig:
    """Parameters of one Tessera array.

    Parameters
    ----------
    tiles : int
        Number of tiles N, 1 ≤ N ≤ 2048.
    contexts : int
        Hardware contexts (barrel threads) per tile T, 6 ≤ T ≤ 16. Context ``c``
        owns the issue slot of every cycle ``t`` with ``t % T == c``.
    sram_bytes : int
        Bytes of SRAM per tile: a power of two from 16 KiB to 1 MiB. Code and data
        share it, starting at address 0.
    exchange_latency : int
        Cycles L from a word's send to its write into the receiver's SRAM, 2 ≤ L ≤ 64.
    engine_macs : int
        Peak int8 MACs per cycle of each tile's matrix engine P (architecture §12): one of
        0 (no engine; ``mrun``/``mwait`` are illegal), 16, 32 or 64. The engine has
        ``P / 8`` lanes.
    name : str
        Label used in reports and file names; not part of the hardware.

    Raises
    ------
    ValueError
        If a field is out of range; the message names the field and the value.
    TypeError
        If a field has the wrong type.
    """

    tiles: int = 4
    contexts: int = 6
    sram_bytes: int = 64 * 1024
    exchange_latency: int = 3
    engine_macs: int = 32
    name: str = "custom"

    def __post_init__(self):
        for field in ("tiles", "contexts", "sram_bytes", "exchange_latency", "engine_macs"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"ArrayConfig.{field} must be an int, not {value!r}")
        if not 1 <= self.tiles <= MAX_TILES:
            raise ValueError(f"ArrayConfig.tiles must be in 1..{MAX_TILES}, not {self.tiles}")
        if not MIN_CONTEXTS <= self.contexts <= MAX_CONTEXTS:
            raise ValueError(
                f"ArrayConfig.contexts must be in {MIN_CONTEXTS}..{MAX_CONTEXTS}, not {self.contexts}")
        s = self.sram_bytes
        if not (MIN_SRAM_BYTES <= s <= MAX_SRAM_BYTES and s & (s - 1) == 0):
            raise ValueError(
                "ArrayConfig.sram_bytes must be a power of two from 16 KiB to 1 MiB, "
                f"not {s}")
        if not MIN_EXCHANGE_LATENCY <= self.exchange_latency <= MAX_EXCHANGE_LATENCY:
            raise ValueError(
                f"ArrayConfig.exchange_latency must be in {MIN_EXCHANGE_LATENCY}.."
                f"{MAX_EXCHANGE_LATENCY}, not {self.exchange_latency}")
        if self.engine_macs not in ENGINE_MACS_CHOICES:
            raise ValueError(
                f"ArrayConfig.engine_macs must be one of {ENGINE_MACS_CHOICES}, "
                f"not {self.engine_macs}")
        if not isinstance(self.name, str):
            raise TypeError(f"ArrayConfig.name must be a str, not {self.name!r}")

    # -- derived quantities (defined once here) -------------------------------------
    @property
    def sram_words(self) -> int:
        """Words (32-bit) of SRAM per tile."""
        return self.sram_bytes // 4

    @property
    def sram_addr_bits(self) -> int:
        """Width of a byte address inside the tile SRAM."""
        return self.sram_bytes.bit_length() - 1

    @property
    def tile_bits(self) -> int:
        """Width of a tile index (at least 1)."""
        return max(1, (self.tiles - 1).bit_length())

    @property
    def context_bits(self) -> int:
        """Width of a context index."""
        return max(1, (self.contexts - 1).bit_length())

    @property
    def decision_latency(self) -> int:
        """The array decision latency D, cycles (docs/architecture.md §7 "Array decisions").

        ``D = ceil(log2(N)) + 2`` (:func:`tessera.spec.timing.decision_latency`): an array-wide
        decision (ARRAY release, stop on a fault or halt) whose condition first holds at v
        acts at v + D.
        """
        return decision_latency(self.tiles)

    @property
    def sync_latency(self) -> int:
        """Cycles from k* (every tile arrived) to the ARRAY release: the decision latency D.

        ``r = k* + D`` (docs/architecture.md §5); the same number as :attr:`decision_latency`.
        """
        return self.decision_latency

    @property
    def engine_lanes(self) -> int:
        """Matrix-engine lanes M = ``engine_macs / 8`` (0 without an engine), §12."""
        return self.engine_macs // 8

    @property
    def peak_macs_per_cycle(self) -> int:
        """Peak int8 MACs per cycle per tile: the engine's P, or 4 (one dot4 per cycle)."""
        return self.engine_macs if self.engine_macs else 4

    def replace(self, **changes) -> "ArrayConfig":
        """Return a copy with ``changes`` applied (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The configuration as a JSON-ready dict (fields only)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ArrayConfig":
        """Inverse of :meth:`to_dict`. Unknown keys raise ``ValueError``."""
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"unknown ArrayConfig field(s): {sorted(unknown)}")
        return cls(**d)


#: Named presets. ``gc2_like`` is for the golden model only (too big for RTL simulation).
PRESETS: dict[str, ArrayConfig] = {
    "tiny": ArrayConfig(name="tiny", tiles=1, contexts=6, sram_bytes=16 * 1024),
    "small": ArrayConfig(name="small", tiles=4, contexts=6, sram_bytes=64 * 1024),
    "array16": ArrayConfig(name="array16", tiles=16, contexts=6, sram_bytes=64 * 1024),
    "gc2_like": ArrayConfig(name="gc2_like", tiles=1216, contexts=6, sram_bytes=256 * 1024,
                            engine_macs=64),
}


def preset(name: str) -> ArrayConfig:
    """Look up a preset by name.

    Raises
    ------
    ValueError
        If ``name`` is not a preset; the message lists the valid names.
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown preset {name!r}; choose one of {', '.join(PRESETS)}") from None
