"""Optimal exchange scheduler: word transfers of one exchange phase → per-tile exchange programs.

The exchange fabric (docs/architecture.md §6) has no queues: every word moves on a cycle the
compiler chose. Each tile has one send bus and one receive mux, so in each cycle a tile sends at
most one word and receives at most one word; a word sent at cycle ``c`` is written by the
receiver's STEP at cycle ``c + L``. A **multicast** is several receivers selecting the same
source in the same cycle, so a word with several destinations costs its sender one send.

Terms used below (all counts are per exchange phase):

send slot
    Index ``k ≥ 0`` of the cycle ``r + k`` in which a word is sent (``r`` = the ARRAY release
    cycle, the cycle of step 0). The word is received in cycle ``r + k + L``.
schedule length ``K`` (``ExchangeSchedule.slots``)
    Number of send slots used: ``1 + `` the largest slot of any send (0 for an empty pattern).
slot bound ``B`` (``ExchangeSchedule.slot_bound``)
    ``max`` over tiles of ``max(words the tile must send, words it receives)``. No schedule can
    use fewer slots than ``B`` (one send and one receive per tile per cycle), so ``K ≥ B``.
phase length (``ExchangeSchedule.cycles``)
    Cycles from ``r`` to the END step inclusive, identical on every tile:
    ``K + L + 1`` (``K`` send cycles, the last word arrives ``L`` cycles after its send, then
    END), or 1 (END only) for an empty pattern. The lower bound is ``B + L + 1`` (§6: "at least
    max_i max(s_i, r_i) + L steps plus END").

Algorithm
---------
1. Validate and normalise the transfers. A transfer whose destination list names one tile
   several times (different addresses) must be sent once per occurrence (a receive writes one
   address), so it is split into that many *mandatory* sends; these count in ``B``.
2. Multicast words (several destination tiles) are coloured first, largest first, with the
   lowest slot free at the sender and every receiver (bit sets). If no slot below ``B`` is free,
   the word is **split** into several sends covering subsets of its receivers, as long as the
   sender has spare slots (``B`` − its mandatory sends); each part takes the lowest sender-free
   slot covering the most remaining receivers (found bit-sliced over all slots at once,
   :func:`_best_slot`); otherwise it takes the lowest free slot at or beyond ``B`` (the bound
   is then not met).
3. Unicast words are the edges of a bipartite multigraph senders × receivers. They are coloured
   by König's theorem with alternating-path (Kempe chain) recolouring: an edge ``(u, v)`` takes a
   slot free at both ends; otherwise, with ``a`` free at ``u`` and ``b`` free at ``v``, the
   ``a``/``b`` alternating path from ``v`` is flipped, which frees ``a`` at ``v``. Without
   multicast this is exact: ``K = B``. Multicast slots are fixed; a path that would flip one is
   rejected and other ``(a, b)`` pairs are tried, then a new slot is opened.
4. If steps 2-3 did not reach ``B``, further attempts send some multicast words as unicasts
   (first all multicast words of every sender whose spare slots pay for all of them, then per
   sender its smallest multicast words while its spare slots last), then repeat with shuffled
   multicast orders (deterministic seed; only for ≤ 20 000 words); the shortest schedule is
   kept, stopping as soon as one meets ``B``. Multicast is a hypergraph colouring problem, so ``B`` is not always
   achievable (``bound_met`` reports it honestly); one-source broadcasts always meet it.
5. Programs: for each tile, position ``p`` (cycle ``r + p``) holds a STEP if the tile sends at
   slot ``p`` and/or receives a word sent at slot ``p − L``; runs of empty positions become IDLE
   steps; every tile's program ends with END at position ``K + L``, so all tiles resume together
   (tiles without traffic get ``IDLE K+L; END``).

Sources are encoded as absolute tile indices. Self-transfers (``src_tile == dst_tile``) are
rejected: they are not an exchange; a local copy codelet should move such words.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterable, Sequence

import numpy as np

from tessera.spec.config import ArrayConfig
from tessera.spec.exchange import MAX_IDLE, MAX_RUN, STEP_BYTES, Step, XOp, encode_program

try:
    from . import ToolchainError
except ImportError:          # stale editable install that maps ``toolchain`` as a namespace package
    class ToolchainError(Exception):
        """Fallback for :class:`tessera.toolchain.ToolchainError`."""

__all__ = ["Transfer", "Send", "ExchangeSchedule", "ExchangeScheduleError", "schedule_exchange"]


class ExchangeScheduleError(ToolchainError, ValueError):
    """Invalid transfer list for :func:`schedule_exchange` (message names transfer and field)."""


@dataclasses.dataclass(frozen=True)
class Transfer:
    """One 32-bit word moved in an exchange phase.

    Parameters
    ----------
    src_tile : int
        Sending tile, ``0 ≤ src_tile < N``.
    src_addr : int
        Byte address of the word in the sender's SRAM (multiple of 4, ``< sram_bytes``).
    dsts : sequence of (int, int)
        ``(dst_tile, dst_addr)`` pairs: every destination tile receives the word at byte
        address ``dst_addr`` (multiple of 4). ``dst_tile ≠ src_tile``. Several pairs make a
        multicast.
    """
    src_tile: int
    src_addr: int
    dsts: tuple[tuple[int, int], ...]

    def __post_init__(self):
        try:
            dsts = tuple(tuple(d) for d in self.dsts)
        except TypeError:
            raise ExchangeScheduleError(
                f"Transfer from tile {self.src_tile!r}: dsts must be a sequence of "
                f"(dst_tile, dst_addr) pairs, not {self.dsts!r}") from None
        object.__setattr__(self, "dsts", dsts)


@dataclasses.dataclass(frozen=True)
class Send:
    """One send in a schedule: the word ``src_addr`` of ``src_tile`` leaves at slot ``slot``.

    Attributes
    ----------
    slot : int
        Send slot ``k`` (sent at cycle ``r + k``, received at ``r + k + L``).
    src_tile, src_addr : int
        Sender and byte address.
    dsts : tuple of (int, int)
        Receivers ``(tile, byte address)`` that select this sender at cycle ``r + k + L``.
    transfer : int
        Index of the originating :class:`Transfer` in the input list.
    """
    slot: int
    src_tile: int
    src_addr: int
    dsts: tuple[tuple[int, int], ...]
    transfer: int


@dataclasses.dataclass
class ExchangeSchedule:
    """Result of :func:`schedule_exchange`.

    Attributes
    ----------
    config : ArrayConfig
    programs : list of list of Step
        ``programs[t]`` is tile ``t``'s exchange program, END included; all have the same
        duration ``cycles``.
    sends : list of Send
        The timetable, sorted by slot.
    slots : int
        Schedule length ``K`` in send slots (see module docstring).
    slot_bound : int
        Lower bound ``B`` on ``K``.
    cycles : int
        Phase length: cycles from the release ``r`` to END inclusive (``K + L + 1``, or 1).
    cycle_bound : int
        ``B + L + 1`` (or 1 for an empty pattern).
    bound_met : bool
        ``slots == slot_bound``.
    words_sent, words_received : numpy.ndarray of int64, shape (N,)
        Sends executed and words received per tile (splits count as several sends).
    required_sends : numpy.ndarray of int64, shape (N,)
        Sends a tile cannot avoid (one per transfer, more if a transfer names a destination
        tile several times); ``B = max(required_sends.max(), words_received.max())``.
    extra_sends : int
        Sends added by splitting multicast words (``words_sent.sum() - required_sends.sum()``).
    """
    config: ArrayConfig
    programs: list[list[Step]]
    sends: list[Send]
    slots: int
    slot_bound: int
    cycles: int
    cycle_bound: int
    bound_met: bool
    words_sent: np.ndarray
    words_received: np.ndarray
    required_sends: np.ndarray
    extra_sends: int

    def encoded(self) -> list[bytes]:
        """Per-tile programs as bytes (:func:`tessera.spec.exchange.encode_program`), ready to copy
        into SRAM at an 8-byte aligned address written to ``xprog``."""
        return [encode_program(p) for p in self.programs]

    @property
    def program_bytes(self) -> np.ndarray:
        """Bytes of each tile's encoded program, shape (N,), int64."""
        return np.array([len(p) * STEP_BYTES for p in self.programs], dtype=np.int64)

    def report(self) -> dict:
        """Summary as a JSON-ready dict (lengths, bounds, per-tile word counts)."""
        return {
            "tiles": self.config.tiles,
            "exchange_latency": self.config.exchange_latency,
            "transfers": len({s.transfer for s in self.sends}),
            "sends": len(self.sends),
            "extra_sends": self.extra_sends,
            "slots": self.slots,
            "slot_bound": self.slot_bound,
            "cycles": self.cycles,
            "cycle_bound": self.cycle_bound,
            "bound_met": self.bound_met,
            "words_sent": self.words_sent.tolist(),
            "words_received": self.words_received.tolist(),
            "program_bytes": self.program_bytes.tolist(),
        }

    def summary(self) -> str:
        """One-line human-readable summary."""
        met = "bound met" if self.bound_met else f"bound {self.slot_bound} NOT met"
        return (f"exchange: {len(self.sends)} sends in {self.slots} slots ({met}), "
                f"{self.cycles} cycles (lower bound {self.cycle_bound}), "
                f"max sent {int(self.words_sent.max(initial=0))}, "
                f"max received {int(self.words_received.max(initial=0))} words per tile")


# --------------------------------------------------------------------------------------
# validation


def _as_int(value, what: str) -> int:
    if type(value) is int:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ExchangeScheduleError(f"{what} must be an int, not {value!r}")
    return int(value)


def _check_addr(addr: int, what: str, cfg: ArrayConfig) -> None:
    if addr % 4:
        raise ExchangeScheduleError(f"{what} {addr:#x} is not 4-byte aligned")
    if not 0 <= addr < cfg.sram_bytes:
        raise ExchangeScheduleError(
            f"{what} {addr:#x} is outside the SRAM (0..{cfg.sram_bytes - 1:#x})")


def _normalise(transfers, cfg: ArrayConfig):
    """Validate; return list of words (transfer index, src, src_addr, [(dst, addr), ...])
    with distinct destination tiles per word."""
    n = cfg.tiles
    words = []
    written: dict[tuple[int, int], int] = {}
    read: dict[tuple[int, int], int] = {}
    for i, t in enumerate(transfers):
        if isinstance(t, Transfer):
            src, saddr, dsts = t.src_tile, t.src_addr, t.dsts
        else:
            try:
                src, saddr, dsts = t
            except (TypeError, ValueError):
                raise ExchangeScheduleError(
                    f"transfer {i}: expected Transfer(src_tile, src_addr, dsts), got {t!r}") from None
        src = _as_int(src, f"transfer {i}: src_tile")
        saddr = _as_int(saddr, f"transfer {i}: src_addr")
        if not 0 <= src < n:
            raise ExchangeScheduleError(f"transfer {i}: src_tile {src} out of range 0..{n - 1}")
        _check_addr(saddr, f"transfer {i}: src_addr", cfg)
        try:
            dsts = [tuple(d) for d in dsts]
        except TypeError:
            raise ExchangeScheduleError(
                f"transfer {i}: dsts must be a list of (dst_tile, dst_addr), not {dsts!r}") from None
        if not dsts:
            raise ExchangeScheduleError(f"transfer {i}: dsts is empty")
        read.setdefault((src, saddr), i)
        groups: list[list[tuple[int, int]]] = []   # group j: j-th occurrence of each tile
        count: dict[int, int] = {}
        mine: set[tuple[int, int]] = set()
        for j, d in enumerate(dsts):
            if len(d) != 2:
                raise ExchangeScheduleError(
                    f"transfer {i}: dsts[{j}] must be (dst_tile, dst_addr), not {d!r}")
            dt = _as_int(d[0], f"transfer {i}: dsts[{j}] tile")
            da = _as_int(d[1], f"transfer {i}: dsts[{j}] address")
            if not 0 <= dt < n:
                raise ExchangeScheduleError(
                    f"transfer {i}: dsts[{j}] tile {dt} out of range 0..{n - 1}")
            if dt == src:
                raise ExchangeScheduleError(
                    f"transfer {i}: dsts[{j}] tile {dt} is the source tile; a tile-local copy is "
                    "not an exchange (use a copy codelet)")
            _check_addr(da, f"transfer {i}: dsts[{j}] address", cfg)
            prev = written.setdefault((dt, da), i)
            if prev != i or (dt, da) in mine:
                raise ExchangeScheduleError(
                    f"transfer {i}: destination tile {dt} address {da:#x} is already written by "
                    f"transfer {prev} in this phase")
            mine.add((dt, da))
            k = count.get(dt, 0)
            count[dt] = k + 1
            if k == len(groups):
                groups.append([])
            groups[k].append((dt, da))
        for g in groups:
            words.append((i, src, saddr, g))
    for key, i in written.items():
        if key in read:
            raise ExchangeScheduleError(
                f"transfer {i}: destination tile {key[0]} address {key[1]:#x} is also the source "
                f"of transfer {read[key]} in the same phase (read/write hazard; split the phase)")
    return words


# --------------------------------------------------------------------------------------
# colouring


def _lowest_bit(x: int) -> int:
    return (x & -x).bit_length() - 1


class _Colouring:
    """Slot assignment state: per vertex (senders 0..N-1, receivers N..2N-1) the slots in use."""

    def __init__(self, n: int, bound: int):
        self.n = n
        self.bound = bound
        self.busy = [0] * (2 * n)          # bitset of used slots per vertex
        self.sends: list[tuple[int, int, list]] = []   # (slot, word index, dsts)

    def place(self, slot: int, w: int, src: int, dsts) -> None:
        bit = 1 << slot
        self.busy[src] |= bit
        n = self.n
        for d, _ in dsts:
            self.busy[n + d] |= bit
        self.sends.append((slot, w, dsts))


def _best_slot(avail: int, busy_rx: list[int]) -> int:
    """Lowest slot ``c`` in bit set ``avail`` maximising the number of receivers free at ``c``
    (``not busy_rx[i] >> c & 1``), or -1 if no slot of ``avail`` has a free receiver.

    Bit-sliced: the per-slot count of free receivers is kept as binary bit planes (a ripple
    carry adder over whole bit sets), then the slots with the maximum count are selected
    plane by plane from the most significant one, so the cost is O(receivers · log receivers)
    big-int operations instead of one Python loop per slot.
    """
    planes: list[int] = []
    for b in busy_rx:
        carry = avail & ~b
        for i in range(len(planes)):
            if not carry:
                break
            planes[i], carry = planes[i] ^ carry, planes[i] & carry
        if carry:
            planes.append(carry)
    cand = avail
    for p in reversed(planes):
        if cand & p:
            cand &= p
    if not any(cand & p for p in planes):
        return -1                       # every slot of avail has count 0 (or avail is empty)
    return _lowest_bit(cand)


def _colour_multicast(col: _Colouring, words, order, spare: list[int]) -> None:
    n, bound = col.n, col.bound
    full = (1 << bound) - 1
    busy = col.busy
    for w in order:
        _, src, _, dsts = words[w]
        used = busy[src]
        for d, _ in dsts:
            used |= busy[n + d]
        free = ~used & full
        if free:
            col.place(_lowest_bit(free), w, src, dsts)
            continue
        # split over the sender's free slots below the bound, if it has spare sends
        parts = []
        if spare[src] > 0:
            remaining = list(dsts)
            sfree = ~busy[src] & full
            taken = 0
            while remaining and len(parts) <= spare[src]:
                # the lowest slot free at the sender covering the most remaining receivers
                best = _best_slot(sfree & ~taken, [busy[n + x[0]] for x in remaining])
                if best < 0:
                    break
                best_cover = [x for x in remaining if not busy[n + x[0]] >> best & 1]
                parts.append((best, best_cover))
                taken |= 1 << best
                covered = set(best_cover)
                remaining = [x for x in remaining if x not in covered]
            if remaining or len(parts) - 1 > spare[src]:
                parts = []
        if parts:
            spare[src] -= len(parts) - 1
            for c, cover in parts:
                col.place(c, w, src, cover)
        else:
            col.place(_lowest_bit(~used), w, src, dsts)   # beyond the bound


def _low_bits(x: int, k: int) -> list[int]:
    """Indices of the ``k`` lowest set bits of ``x`` (x ≥ 0)."""
    out = []
    while x and len(out) < k:
        out.append(_lowest_bit(x))
        x &= x - 1
    return out


def _colour_unicast(col: _Colouring, words, edges) -> None:
    """Kempe-chain bipartite edge colouring of unicast words, respecting fixed slots.

    ``free[v]`` is a bit set of the slots in ``0..palette-1`` unused at vertex ``v``;
    ``at[v]`` maps a used slot to its unicast edge, or ``FIXED`` for a multicast slot.
    """
    n = col.n
    palette = max(col.bound, max((s for s, _, _ in col.sends), default=-1) + 1)
    FIXED = -1
    at: list[dict[int, int]] = [dict() for _ in range(2 * n)]
    for v in range(2 * n):
        b = col.busy[v]
        while b:
            c = _lowest_bit(b)
            b &= b - 1
            at[v][c] = FIXED
            if c >= palette:
                palette = c + 1
    full = (1 << palette) - 1
    free = [full & ~col.busy[v] for v in range(2 * n)]
    eu = [0] * len(edges)
    ev = [0] * len(edges)
    ecol = [0] * len(edges)
    for e, w in enumerate(edges):
        _, src, _, dsts = words[w]
        eu[e] = src
        ev[e] = n + dsts[0][0]

    def assign(e, c):
        ecol[e] = c
        u, v = eu[e], ev[e]
        at[u][c] = e
        at[v][c] = e
        m = ~(1 << c)
        free[u] &= m
        free[v] &= m

    def unassign(e):
        c = ecol[e]
        u, v = eu[e], ev[e]
        del at[u][c]
        del at[v][c]
        free[u] |= 1 << c
        free[v] |= 1 << c

    def path(v, a, b):
        """Edges of the a/b alternating path from v starting with colour a, or None if it
        meets a fixed (multicast) slot."""
        out = []
        x, c = v, a
        while True:
            e = at[x].get(c)
            if e is None:
                return out
            if e == FIXED:
                return None
            out.append(e)
            x = eu[e] if x == ev[e] else ev[e]
            c = b if c == a else a

    for e in range(len(edges)):
        u, v = eu[e], ev[e]
        fu, fv = free[u], free[v]
        common = fu & fv
        if common:
            assign(e, _lowest_bit(common))
            continue
        done = False
        if fu and fv:
            for a in _low_bits(fu, 8):
                for b in _low_bits(fv, 8):
                    p = path(v, a, b)
                    if p is None:
                        continue
                    for f in p:
                        unassign(f)
                    for f in p:
                        assign(f, b if ecol[f] == a else a)
                    assign(e, a)
                    done = True
                    break
                if done:
                    break
        if not done:                       # open a new slot (bound not met)
            c = palette
            palette += 1
            bit = 1 << c
            for x in range(2 * n):
                free[x] |= bit
            assign(e, c)
    for e, w in enumerate(edges):
        _, src, _, dsts = words[w]
        col.sends.append((ecol[e], w, dsts))
        col.busy[src] |= 1 << ecol[e]
        col.busy[n + dsts[0][0]] |= 1 << ecol[e]


def _attempt(words, n: int, bound: int, required: list[int], expand: set[int], rng=None):
    """One colouring attempt.

    Multicast words whose index is in ``expand`` are sent as one unicast per destination.
    Multicast words are coloured largest first (ties in input order, or shuffled by ``rng``).
    """
    col = _Colouring(n, bound)
    spare = [bound - r for r in required]
    uwords = []
    multi = []
    for w, (i, src, saddr, dsts) in enumerate(words):
        if len(dsts) > 1 and w in expand:
            spare[src] -= len(dsts) - 1
            for d in dsts:
                uwords.append((i, src, saddr, [d]))
        elif len(dsts) > 1:
            multi.append(w)
        else:
            uwords.append((i, src, saddr, dsts))
    allwords = list(words) + uwords
    if rng is not None:
        rng.shuffle(multi)
    multi.sort(key=lambda w: -len(words[w][3]))
    _colour_multicast(col, allwords, multi, spare)
    _colour_unicast(col, allwords, list(range(len(words), len(allwords))))
    slots = max((s for s, _, _ in col.sends), default=-1) + 1
    return slots, col.sends, allwords


def _expansions(words, n: int, bound: int, required: list[int]):
    """Candidate sets of multicast words to send as unicasts, cheapest to most aggressive:
    all words of senders that can afford all of them; then, per sender, its smallest
    multicast words while its spare slots last."""
    spare = [bound - r for r in required]
    full_cost = [0] * n
    by_src: list[list[int]] = [[] for _ in range(n)]
    for w, (_, src, _, dsts) in enumerate(words):
        if len(dsts) > 1:
            full_cost[src] += len(dsts) - 1
            by_src[src].append(w)
    full = {w for t in range(n) if by_src[t] and full_cost[t] <= spare[t] for w in by_src[t]}
    partial = set()
    for t in range(n):
        left = spare[t]
        for w in sorted(by_src[t], key=lambda w: len(words[w][3])):
            extra = len(words[w][3]) - 1
            if extra <= left:
                partial.add(w)
                left -= extra
    out = []
    for cand in (full, partial):
        if cand and cand not in out:
            out.append(cand)
    return out


#: Extra multicast attempts (shuffled orders) when the bound is not met, for patterns up to
#: this many words (keeps large patterns within a few seconds).
_RETRY_WORDS = 20000
_RETRIES = 6


def schedule_exchange(transfers: Iterable[Transfer], config: ArrayConfig) -> ExchangeSchedule:
    """Schedule one exchange phase and build every tile's exchange program.

    Parameters
    ----------
    transfers : iterable of Transfer (or ``(src_tile, src_addr, dsts)`` tuples)
        Words to move; addresses are byte addresses in the tiles' SRAMs.
    config : ArrayConfig
        Array geometry: ``tiles`` (N), ``sram_bytes``, ``exchange_latency`` (L).

    Returns
    -------
    ExchangeSchedule
        Programs (lists of :class:`tessera.spec.exchange.Step`; ``.encoded()`` for bytes), the
        timetable, the schedule length ``slots`` (K), the bound ``slot_bound`` (B), the phase
        length ``cycles`` (``K + L + 1``, or 1 if there is nothing to move; all tiles' programs
        last exactly this long) and per-tile word counts. For unicast patterns ``K == B``
        always (König); with multicast ``bound_met`` says whether ``K == B``.

    Raises
    ------
    ExchangeScheduleError (a ValueError)
        A tile index is out of ``0..N-1``; an address is not 4-byte aligned or not inside the
        SRAM; a destination is the source tile (local copies are not exchanges); ``dsts`` is
        empty; two transfers write the same destination word; or a word is both read and
        written on the same tile in the phase (its value would depend on the schedule).

    Notes
    -----
    Semantics follow docs/architecture.md §6: step 0 at the release cycle ``r``; a word sent at
    ``r + k`` is written by the receiving STEP at ``r + k + L``. All sends read values as they
    were before the phase (no word is both a source and a destination).
    """
    if not isinstance(config, ArrayConfig):
        raise ExchangeScheduleError(f"config must be an ArrayConfig, not {config!r}")
    if isinstance(transfers, (str, bytes)):
        raise ExchangeScheduleError("transfers must be a list of Transfer, not a string")
    try:
        transfers = list(transfers)
    except TypeError:
        raise ExchangeScheduleError(
            f"transfers must be an iterable of Transfer, not {transfers!r}") from None
    n, lat = config.tiles, config.exchange_latency
    words = _normalise(transfers, config)

    required = [0] * n
    received = [0] * n
    for _, src, _, dsts in words:
        required[src] += 1
        for d, _ in dsts:
            received[d] += 1
    bound = max(max(required), max(received)) if words else 0

    best = _attempt(words, n, bound, required, set())
    if best[0] > bound:
        expansions = _expansions(words, n, bound, required)
        tries = [(e, None) for e in expansions]
        if len(words) <= _RETRY_WORDS:
            rng = random.Random(0x7E55E7A)      # deterministic output
            tries += [(e, rng) for _ in range(_RETRIES) for e in [set()] + expansions]
        for expand, r in tries:
            alt = _attempt(words, n, bound, required, expand, r)
            if alt[0] < best[0]:
                best = alt
            if best[0] == bound:
                break
    slots, raw, allwords = best

    sends = sorted((Send(s, allwords[w][1], allwords[w][2], tuple(dsts), allwords[w][0])
                    for s, w, dsts in raw), key=lambda s: (s.slot, s.src_tile))
    sent = np.zeros(n, dtype=np.int64)
    for s in sends:
        sent[s.src_tile] += 1
    programs = _build_programs(sends, n, lat, slots)
    cycles = slots + lat + 1 if slots else 1
    return ExchangeSchedule(
        config=config, programs=programs, sends=sends, slots=slots, slot_bound=bound,
        cycles=cycles, cycle_bound=bound + lat + 1 if bound else 1, bound_met=slots == bound,
        words_sent=sent, words_received=np.array(received, dtype=np.int64),
        required_sends=np.array(required, dtype=np.int64),
        extra_sends=int(sent.sum()) - sum(required))


# --------------------------------------------------------------------------------------
# program generation


def _idle(out: list[Step], n: int) -> None:
    while n > 0:
        k = min(n, MAX_IDLE)
        out.append(Step.idle(k))
        n -= k


def _continues(first, addr, i) -> bool:
    """A run whose address was ``first`` at its cycle 0 has ``addr`` at cycle ``i`` (None:
    that side is unused in every cycle of the run)."""
    return addr is None if first is None else addr == first + 4 * i


def _build_programs(sends: Sequence[Send], n: int, lat: int, slots: int) -> list[list[Step]]:
    length = slots + lat if slots else 0          # positions before END
    send_at: list[dict[int, int]] = [dict() for _ in range(n)]
    recv_at: list[dict[int, tuple[int, int]]] = [dict() for _ in range(n)]
    for s in sends:
        send_at[s.src_tile][s.slot] = s.src_addr
        for d, a in s.dsts:
            recv_at[d][s.slot + lat] = (s.src_tile, a)
    programs = []
    for t in range(n):
        sa, ra = send_at[t], recv_at[t]
        prog: list[Step] = []
        pos = 0
        run = None          # [first position, send addr, src, recv addr, length]
        for p in sorted(sa.keys() | ra.keys()):
            r = ra.get(p)
            s_addr, src, r_addr = sa.get(p), r[0] if r else None, r[1] if r else None
            if run is not None and p == run[0] + run[4] and run[4] < MAX_RUN \
                    and _continues(run[1], s_addr, run[4]) and src == run[2] \
                    and _continues(run[3], r_addr, run[4]):
                run[4] += 1     # the next word of a run (architecture §6 "Runs")
                continue
            if run is not None:
                prog.append(Step.send_recv(run[1], run[2], run[3], run=run[4]))
                pos = run[0] + run[4]
            _idle(prog, p - pos)
            run = [p, s_addr, src, r_addr, 1]
        if run is not None:
            prog.append(Step.send_recv(run[1], run[2], run[3], run=run[4]))
            pos = run[0] + run[4]
        _idle(prog, length - pos)
        prog.append(Step.end())
        assert all(s.op != XOp.RESERVED for s in prog)
        programs.append(prog)
    return programs
