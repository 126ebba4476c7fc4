"""The tiles' matrix engines in the golden model (docs/architecture.md §12).

One :class:`MatrixEngines` object holds the engine state of every tile of an array (numpy
arrays indexed by tile) and executes engine **steps**: :meth:`MatrixEngines.step` runs step s of
one tile's command in the engine cycle given by the caller. Which cycles are engine cycles
(exchange phase, a LOAD/STORE in M), the ``mrun``/``mwait`` issue rules (decided in M) and the
ordering against the cores' loads and stores are the cycle loop's business
(:mod:`tessera.golden_model.array`); this module only knows the command: descriptor,
parameters, lanes, accumulators, the step schedule, the output rules, the engine-fault checks
in the order §12 lists them, and the frozen engine after a faulting step.

Memory is reached through a small port object given to :meth:`MatrixEngines.step` (``read8``
and ``write``; the cycle loop applies every SRAM effect in its own cycle, so the port is the
SRAM as it is when the step runs).

The step schedule of a command with C channels, J = J0·J1 elements, KB = K0·K1 blocks and OW
write steps per element (``output_words``: ⌈C/4⌉ in ``RAW``, else 1)::

    0..7                     descriptor word i (fields checked in step 7)
    8 + 2m, 9 + 2m           (bias, multiplier), (shift, -) of channel m (shift checked in 9+2m)
    K_GATHER, k0 = 0         one gather step: g = the u32 at ak_s1 + 8 k1
    block b < KB-1           C lane loads W(0..C-1, b), then J stream steps X(0..J-1, b)
    block KB-1               C lane loads, then per element one stream step + OW-1 silent steps
    writes                   write w of element j in step s_j + WRITE_DELAY + w (s_j: its last
                             stream step; WRITE_DELAY = 10: after the last stream step when
                             J·OW < 10);
                             RAW write w: bytes 16w .. min(16w+16, 4C)-1 of the element at
                             C(j) + 16w (one or two 8-byte words, ENGINE_WRITE_WORDS)

Per tile the engine is busy from the accept cycle through the cycle of the last step. After a
faulting step it is **frozen** (§12 "Engine faults"): no further steps, busy until the array
stops (or a host start). A fault of checks 2 and 3 (the data of the word read) is visible a
cycle later than the address checks (``ENGINE_DATA_FAULT_VISIBLE_DELAY``); the step the engine
would make in that cycle has no effect by the contract, so freezing right after the faulting
step gives the same state.
"""

from __future__ import annotations

import dataclasses
import struct

import numpy as np

from tessera.spec.engine import (ACC_DEPTH, BYTE_MODES, DESC_CHECK_STEP, DESC_FIELDS,
                                 DESC_FORMAT, DESC_WORDS, ENGINE_WRITE_WORDS, F32_EXP_SPECIAL,
                                 MAX_SHIFT, MIN_SHIFT, PARAM_BYTES, VECTOR_BYTES, WRITE_DELAY,
                                 Flag, Mode, output_words)
from tessera.spec.timing import ENGINE_DATA_FAULT_VISIBLE_DELAY, STEP_FAULT_VISIBLE_DELAY

__all__ = ["MatrixEngines", "Command", "mbqm", "mbqm_array", "f32_round_array", "NOT_YET"]

_M32 = 0xFFFFFFFF
#: ``total`` of a command whose descriptor is not read yet (more steps than any command has).
NOT_YET = 1 << 40
_RESERVED_FLAGS = 0xFF & ~int(Flag.A_UNSIGNED | Flag.OUT_UNSIGNED | Flag.K_GATHER)
_I32_MIN = -(1 << 31)
#: Bytes (and int32 lanes) of one RAW write step (§12 "Step schedule": two 8-byte words).
_RAW_WRITE_BYTES = 8 * ENGINE_WRITE_WORDS
_RAW_WRITE_LANES = _RAW_WRITE_BYTES // 4
#: Visibility delays of engine faults (§7 "Stop", §12 "Engine faults"): checks 1 and 4 (an
#: address), checks 2 and 3 (the data of the word the step read).
_ADDR_DELAY = STEP_FAULT_VISIBLE_DELAY
_DATA_DELAY = ENGINE_DATA_FAULT_VISIBLE_DELAY


def _s32(v: int) -> int:
    v &= _M32
    return v - (1 << 32) if v >> 31 else v


def mbqm(x: int, multiplier: int, shift: int) -> int:
    """TFLite ``MultiplyByQuantizedMultiplier`` (architecture §11 rule 1), on Python ints.

    Written here from the TFLite / gemmlowp definition (not imported from
    :mod:`tessera.golden_model.kernels`, which the tests use as the independent reference).

    Parameters
    ----------
    x, multiplier : int
        int32 values (accumulator and quantized multiplier).
    shift : int
        -31..30: positive = left shift of ``x`` (wrapping mod 2^32) before the doubling high
        multiply, negative = rounding right shift after it.

    Returns
    -------
    int
        The int32 result: ``RDBPOT(SRDHM(wrap32(x << left), multiplier), right)``.
    """
    left, right = max(shift, 0), max(-shift, 0)
    a = _s32(x << left)
    if a == _I32_MIN and multiplier == _I32_MIN:       # SRDHM's only saturating case
        high = (1 << 31) - 1
    else:
        high = (a * multiplier + (1 << 30)) >> 31      # round to nearest, ties toward +inf
    mask = (1 << right) - 1
    threshold = (mask >> 1) + (1 if high < 0 else 0)
    return (high >> right) + (1 if (high & mask) > threshold else 0)   # ties away from zero


def mbqm_array(x: np.ndarray, multiplier: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """:func:`mbqm` elementwise on int64 arrays (int32 values, broadcastable); int64 result."""
    x, m, sh = (np.asarray(v, dtype=np.int64) for v in (x, multiplier, shift))
    left, right = np.maximum(sh, 0), np.maximum(-sh, 0)
    a = x << left                                      # |x| <= 2^31, left <= 30: fits int64
    a = ((a + (1 << 31)) & _M32) - (1 << 31)           # wrap to int32
    high = (a * m + (1 << 30)) >> 31                   # |a m| <= 2^62
    high = np.where((a == _I32_MIN) & (m == _I32_MIN), (1 << 31) - 1, high)
    mask = (np.int64(1) << right) - 1
    threshold = (mask >> 1) + (high < 0)
    return (high >> right) + ((high & mask) > threshold)


#: |p| bound applied before ``rne`` in :func:`f32_round_array`: every byte-mode result with
#: |rne(p)| >= 2^10 saturates (zp, qmin, qmax are within -128..255), so clipping there first
#: changes no output and keeps the integer conversion in range.
_F32_SAT = np.float32(1 << 10)


def f32_round_array(acc: np.ndarray, multiplier_bits: np.ndarray) -> np.ndarray:
    """``rne(fl32(fl32(acc) · M))`` of the ``FLOAT32`` output mode (§12 "Semantics"), clipped
    to ±2^10 (beyond that every output saturates).

    Parameters
    ----------
    acc : numpy.ndarray of int (int32 values)
        Accumulators (bias included).
    multiplier_bits : numpy.ndarray of int, broadcastable to ``acc``
        The 32-bit ``multiplier`` words: binary32 bit patterns of finite M (checked in step
        8+2m).

    Returns
    -------
    numpy.ndarray of int64
        IEEE binary32 arithmetic of numpy (round to nearest even, subnormals kept): ``fl32`` of
        an int32 through float64 (exact) to float32 (one rounding), the float32 product (one
        rounding), then ``numpy.rint`` (ties to even).
    """
    a = np.asarray(acc, dtype=np.int64).astype(np.float64).astype(np.float32)
    m = (np.asarray(multiplier_bits, dtype=np.int64) & _M32).astype(np.uint32).view(np.float32)
    with np.errstate(over="ignore"):            # a product beyond binary32 is ±inf (saturates)
        p = a * m
    return np.rint(np.clip(p, -_F32_SAT, _F32_SAT)).astype(np.int64)


@dataclasses.dataclass
class Command:
    """The decoded descriptor of one tile's running command, with its step-schedule offsets.

    Fields are the descriptor's (§12 table; u32 fields as unsigned ints) plus the derived
    counts: ``J``, ``KB``, ``OW``; ``G`` = 1 with ``K_GATHER`` (one gather step per k1);
    ``block`` = C + J (steps of a block b < KB−1, without the gather step); ``group`` = G +
    K0·block (steps of one k1 but the last); ``last`` = first step of block KB−1; ``total``
    = steps of the command (``command_steps``).
    """
    a_base: int
    a_s0: int
    a_s1: int
    ak_s1: int
    w_base: int
    w_sm: int
    c_base: int
    c_s0: int
    c_s1: int
    p_base: int
    J0: int
    J1: int
    K0: int
    K1: int
    C: int
    mode: int
    flags: int
    zp: int
    qmin: int
    qmax: int
    J: int = 0
    KB: int = 0
    OW: int = 0
    G: int = 0
    block: int = 0
    group: int = 0
    last: int = 0
    total: int = 0

    def __post_init__(self):
        self.J, self.KB = self.J0 * self.J1, self.K0 * self.K1
        self.OW = output_words(self.mode, self.C)
        self.G = 1 if self.flags & Flag.K_GATHER else 0
        self.block = self.C + self.J
        self.group = self.G + self.K0 * self.block
        self.last = DESC_WORDS + 2 * self.C + (self.KB - 1) * self.block + self.G * self.K1
        self.total = self.last + self.C + self.J * self.OW + WRITE_DELAY

    def x_addr(self, j: int, b: int, g: int = 0) -> int:
        """Byte address of the streamed vector X(j, b); ``g``: the gather offset of b's k1."""
        j1, j0 = divmod(j, self.J0)
        k1, k0 = divmod(b, self.K0)
        o = g if self.G else k1 * self.ak_s1
        return (self.a_base + j1 * self.a_s1 + j0 * self.a_s0 + o
                + VECTOR_BYTES * k0) & _M32

    def g_addr(self, k1: int) -> int:
        """Byte address of the gather word of k1 (``K_GATHER``)."""
        return (self.ak_s1 + VECTOR_BYTES * k1) & _M32

    def w_addr(self, m: int, b: int) -> int:
        """Byte address of the stationary vector W(m, b)."""
        return (self.w_base + m * self.w_sm + VECTOR_BYTES * b) & _M32

    def c_addr(self, j: int) -> int:
        """Output byte address C(j) of element j."""
        j1, j0 = divmod(j, self.J0)
        return (self.c_base + j1 * self.c_s1 + j0 * self.c_s0) & _M32

    def check(self, lanes: int) -> bool:
        """The step-7 field check of §12 "Engine faults" item 2 (True: the fields are valid)."""
        if not 1 <= self.C <= lanes or 0 in (self.J0, self.J1, self.K0, self.K1):
            return False
        if self.J > ACC_DEPTH or self.mode not in (Mode.RAW, Mode.TFLITE, Mode.FLOAT32):
            return False
        if self.flags & _RESERVED_FLAGS:
            return False
        if self.mode in BYTE_MODES:
            lo, hi = (0, 255) if self.flags & Flag.OUT_UNSIGNED else (-128, 127)
            if self.qmin > self.qmax or not all(lo <= v <= hi
                                                for v in (self.zp, self.qmin, self.qmax)):
                return False
        return True


class MatrixEngines:
    """Matrix-engine state of every tile of one array (architecture §12 "Architectural state").

    Parameters
    ----------
    tiles : int
        N.
    lanes : int
        M = ``engine_macs / 8`` (0: the configuration has no engine; nothing is ever busy).
    sram_bytes : int
        Bytes per tile SRAM (the range check of engine faults).
    macs : numpy.ndarray, uint64 [N]
        The array's ``macs`` counters (§8); every stream step adds 8·C in place.

    Members
    -------
    busy : numpy.ndarray, bool [N]
        The engine is running a command (from its accept cycle through its last step).
    accept : numpy.ndarray, int64 [N]
        Accept cycle x of the running command.
    desc_addr, issuer, issuer_pc : numpy.ndarray, int64 [N]
        d, c_e and pc_e of the running command.
    step_no : numpy.ndarray, int64 [N]
        The next step s to execute (0 after the accept).
    total : numpy.ndarray, int64 [N]
        Steps of the running command (:data:`NOT_YET` until step 7 decoded the descriptor).
    desc : numpy.ndarray, uint8 [N, 64]
        Descriptor bytes as read in steps 0..7.
    bias, multiplier, shift : numpy.ndarray, int64 [N, M]
        Channel parameters as read in steps 8..8+2C−1.
    lanes_w : numpy.ndarray, int64 [N, M, 8]
        Stationary vectors S[m] (int8 values).
    gather : numpy.ndarray, int64 [N]
        The gather offset g (u32) of the current k1 (``K_GATHER`` commands).
    acc : numpy.ndarray, uint32 [N, ACC_DEPTH, M]
        Accumulators acc[j][m] (two's complement int32, wrapping), allocated at the first accept.
    busy_done : numpy.ndarray, int64 [N]
        Busy cycles of the commands already finished (the ``engine`` counter, §8).
    frozen : numpy.ndarray, bool [N]
        A step of the running command faulted: the engine makes no further steps and stays
        busy until the array stops (§12 "Engine faults"); the cycle loop steps only
        ``busy & ~frozen`` tiles.
    nbusy : int
        Number of busy tiles (the cycle loop's cheap "anything to do" test).
    """

    def __init__(self, tiles: int, lanes: int, sram_bytes: int, macs: np.ndarray):
        self.n, self.lanes, self.nbytes = tiles, lanes, sram_bytes
        self.macs = macs
        n, m = tiles, max(lanes, 1)
        self.busy = np.zeros(n, dtype=bool)
        self.accept = np.zeros(n, dtype=np.int64)
        self.desc_addr = np.zeros(n, dtype=np.int64)
        self.issuer = np.zeros(n, dtype=np.int64)
        self.issuer_pc = np.zeros(n, dtype=np.int64)
        self.step_no = np.zeros(n, dtype=np.int64)
        self.total = np.full(n, NOT_YET, dtype=np.int64)
        self.desc = np.zeros((n, DESC_WORDS * 8), dtype=np.uint8)
        self.bias = np.zeros((n, m), dtype=np.int64)
        self.multiplier = np.zeros((n, m), dtype=np.int64)
        self.shift = np.zeros((n, m), dtype=np.int64)
        self.lanes_w = np.zeros((n, m, VECTOR_BYTES), dtype=np.int64)
        self.gather = np.zeros(n, dtype=np.int64)
        self.acc: np.ndarray | None = None
        self.busy_done = np.zeros(n, dtype=np.int64)
        self.cmd: list[Command | None] = [None] * n
        self.frozen = np.zeros(n, dtype=bool)
        self.nbusy = 0
        # Commands interned by their descriptor bytes (cmd_id, -1 before step 7): tiles at the
        # same streaming step of the same command are stepped together (:meth:`step_tiles`).
        self.cmd_id = np.full(n, -1, dtype=np.int64)
        self._ids: dict[bytes, int] = {}
        self._next_id = 0
        self.group = True

    # ------------------------------------------------------------------ issue side
    def accept_cmd(self, tiles: np.ndarray, x: int, d: np.ndarray, context: int,
                   pcs: np.ndarray) -> None:
        """Accept a command on ``tiles`` at cycle ``x`` (descriptor byte addresses ``d``,
        issuing context and the ``mrun`` pcs), §12 "Instructions": the engines are idle at x
        (the caller decides ``mrun`` in its M cycle x from the state after the steps of
        cycles < x)."""
        if len(tiles) == 0:
            return
        if self.acc is None:
            self.acc = np.zeros((self.n, ACC_DEPTH, max(self.lanes, 1)), dtype=np.uint32)
        tiles = np.asarray(tiles)
        d = np.broadcast_to(np.asarray(d, dtype=np.int64) & _M32, tiles.shape)
        pcs = np.broadcast_to(np.asarray(pcs, dtype=np.int64), tiles.shape)
        assert not self.busy[tiles].any(), "matrix engine: a command accepted while busy"
        self._start(tiles, x, d, context, pcs)

    def _start(self, tiles, x, d, context, pcs) -> None:
        self.busy[tiles] = True
        self.accept[tiles] = x
        self.desc_addr[tiles] = d
        self.issuer[tiles] = context
        self.issuer_pc[tiles] = pcs
        self.step_no[tiles] = 0
        self.total[tiles] = NOT_YET
        self.gather[tiles] = 0
        self.frozen[tiles] = False
        for t in np.asarray(tiles).tolist():
            self.cmd[t] = None
        self.cmd_id[tiles] = -1
        self.nbusy = int(self.busy.sum())

    def busy_cycles(self, cycles: int) -> np.ndarray:
        """The ``engine`` counter (§8) for cycles 0..``cycles``−1, uint64 [N]."""
        open_ = np.where(self.busy, np.maximum(cycles - self.accept, 0), 0)
        return (self.busy_done + open_).astype(np.uint64)

    # ------------------------------------------------------------------ steps
    def step(self, t: int, k: int, port) -> int | None:
        """Execute the next step of tile ``t``'s command in engine cycle ``k``.

        Parameters
        ----------
        t : int
            Tile (its engine is busy and k is one of its engine cycles).
        k : int
            The cycle.
        port : object
            ``read8(t, addr) -> numpy.ndarray uint8 [8]`` (addr 8-byte aligned, in the SRAM;
            the SRAM as after all writes of cycles < k) and ``write(t, addr, data: bytes)``
            (bytes within one aligned 8-byte word, or two consecutive aligned words).

        Returns
        -------
        (int, int) or None
            None, or (the engine-fault address, its visibility delay): the step then had no
            effect (§12 "Engine faults"); the fault is visible from k + delay, delay =
            ``STEP_FAULT_VISIBLE_DELAY`` (1) for checks 1 and 4 (addresses) and
            ``ENGINE_DATA_FAULT_VISIBLE_DELAY`` (2) for checks 2 and 3 (the data of the word
            read, §7 "Stop").

        Raises
        ------
        AssertionError
            If the tile's engine is not busy.
        """
        assert self.busy[t], f"matrix engine of tile {t} stepped while idle"
        s = int(self.step_no[t])
        cmd = self.cmd[t]
        d = int(self.desc_addr[t])
        if s < DESC_WORDS:                                    # descriptor word s
            a = (d + 8 * s) & _M32
            if self._bad_read(a):
                return a, _ADDR_DELAY
            data = port.read8(t, a)
            if s == DESC_CHECK_STEP:
                raw = self.desc[t].copy()
                raw[8 * s:8 * s + 8] = data
                vals = struct.unpack(DESC_FORMAT, raw.tobytes())
                cmd = Command(**{name: v for (name, _, _), v in zip(DESC_FIELDS, vals)})
                if not cmd.check(self.lanes):                  # check 2: the fields
                    return d, _DATA_DELAY
                self.cmd[t] = cmd
                self.cmd_id[t] = self._intern(bytes(raw))
                self.total[t] = cmd.total
            self.desc[t, 8 * s:8 * s + 8] = data
            return self._advance(t, k, s)
        C = cmd.C
        if s < DESC_WORDS + 2 * C:                           # channel parameters
            m, half = divmod(s - DESC_WORDS, 2)
            a = (cmd.p_base + PARAM_BYTES * m + 8 * half) & _M32
            if self._bad_read(a):
                return a, _ADDR_DELAY
            lo, hi = struct.unpack("<ii", port.read8(t, a).tobytes())
            if half == 0:
                if cmd.mode == Mode.FLOAT32 and (hi >> 23) & 0xFF == F32_EXP_SPECIAL:
                    return a, _DATA_DELAY                     # check 3: infinity or NaN
                self.bias[t, m], self.multiplier[t, m] = lo, hi
            else:
                if cmd.mode == Mode.TFLITE and not MIN_SHIFT <= lo <= MAX_SHIFT:
                    return a, _DATA_DELAY                     # check 3: shift
                self.shift[t, m] = lo
            return self._advance(t, k, s)
        # streaming part: at most one read (lane load or stream step), then at most one write
        bad, read, a, write, wa = self._streaming_access(cmd, s, int(self.gather[t]))
        if bad is not None:
            return bad, _ADDR_DELAY
        if read is not None:
            kind, i, b = read                                  # the read sees cycles < k
            data = port.read8(t, a)
            if kind == "g":
                self.gather[t] = int(data[:4].view("<u4")[0])
            elif kind == "w":
                self.lanes_w[t, i] = data.view(np.int8)
            else:
                xv = data if cmd.flags & Flag.A_UNSIGNED else data.view(np.int8)
                prod = self.lanes_w[t, :C] @ xv.astype(np.int64)          # [C]
                start = self.bias[t, :C] if b == 0 else self.acc[t, i, :C].view(np.int32)
                self.acc[t, i, :C] = (start.astype(np.int64) + prod).astype(np.uint32)
                self._macs_add(t, 8 * C)
        if write is not None:
            port.write(t, wa, self._output(t, cmd, *write))
        return self._advance(t, k, s)

    def step_tiles(self, tiles: np.ndarray, k: int, port) -> list:
        """Step every tile of ``tiles`` (busy, not frozen) in engine cycle ``k``; returns
        [(tile, fault addr, visibility delay)] (see :meth:`step`). A tile whose step faults is
        frozen (§12 "Engine faults"; after a fault of checks 2 and 3, visible from k + 2, the
        step of cycle k + 1 has no effect and no fault of its own, so freezing at k is the
        same).

        Tiles at the same streaming step of the same command (the SPMD case) are stepped in
        one vectorized group; the others one by one with :meth:`step`. Both give the same
        result (tested; ``group = False`` steps every tile alone).
        """
        faults = self._step_tiles(tiles, k, port)
        for t, _, _ in faults:
            self.frozen[t] = True
        return faults

    def _step_tiles(self, tiles: np.ndarray, k: int, port) -> list:
        faults = []
        rest = tiles
        grp = tiles
        if self.group and len(grp) > 1:
            s, ids = self.step_no[grp], self.cmd_id[grp]
            s0 = int(s[0])
            cmd = self.cmd[int(grp[0])]
            if ids[0] >= 0 and (s == s0).all() and (ids == ids[0]).all() \
                    and s0 >= DESC_WORDS + 2 * cmd.C \
                    and (not cmd.G or (self.gather[grp] == self.gather[grp[0]]).all()):
                addr = self._step_group(grp, k, s0, cmd, port.sram)
                if addr is not None:                   # streaming steps: address checks
                    faults += [(t, addr, _ADDR_DELAY) for t in grp.tolist()]
                rest = tiles[:0]
        for t in rest.tolist():
            f = self.step(t, k, port)
            if f is not None:
                faults.append((t, *f))
        return faults

    def _step_group(self, g: np.ndarray, k: int, s: int, cmd: Command, sram) -> int | None:
        """One streaming step s of ``cmd`` on the tiles ``g``: the addresses, hence the fault
        checks, are the same for all of them."""
        C = cmd.C
        bad, read, a, write, wa = self._streaming_access(cmd, s, int(self.gather[g[0]]))
        if bad is not None:
            return bad
        w8 = sram.w8
        if read is not None:
            kind, i, b = read
            data = w8[g, a:a + VECTOR_BYTES]                                  # [G, 8]
            if kind == "g":
                self.gather[g] = np.ascontiguousarray(data[:, :4]).view("<u4")[:, 0]
            elif kind == "w":
                self.lanes_w[g, i] = data.view(np.int8)
            else:
                xv = (data if cmd.flags & Flag.A_UNSIGNED else data.view(np.int8)).astype(np.int64)
                prod = np.einsum("gmi,gi->gm", self.lanes_w[g, :C], xv)      # [G, C]
                start = self.bias[g, :C] if b == 0 else \
                    self.acc[g, i, :C].view(np.int32).astype(np.int64)
                self.acc[g, i, :C] = (start + prod).astype(np.uint32)
                self.macs[g] += np.uint64(8 * C)
        if write is not None:
            j, w = write
            acc = self.acc[g, j, :C].view(np.int32).astype(np.int64)          # [G, C]
            if cmd.mode == Mode.RAW:
                vals = acc[:, _RAW_WRITE_LANES * w:_RAW_WRITE_LANES * (w + 1)].astype("<i4")
                w8[g, wa:wa + 4 * vals.shape[1]] = vals.view(np.uint8).reshape(len(g), -1)
            else:
                if cmd.mode == Mode.TFLITE:
                    y = mbqm_array(acc, self.multiplier[g, :C], self.shift[g, :C]) + cmd.zp
                else:
                    y = f32_round_array(acc, self.multiplier[g, :C]) + cmd.zp
                w8[g, wa:wa + C] = (np.clip(y, cmd.qmin, cmd.qmax) & 0xFF).astype(np.uint8)
        self.step_no[g] = s + 1
        if s + 1 >= cmd.total:
            for t in g.tolist():
                self.step_no[t] = s
                self._advance(t, k, s)
        return None

    def _intern(self, key: bytes) -> int:
        """A command id for descriptor bytes ``key`` (never reused, so clearing is safe)."""
        i = self._ids.get(key)
        if i is None:
            if len(self._ids) >= 1 << 16:
                self._ids.clear()
            i = self._ids[key] = self._next_id
            self._next_id += 1
        return i

    def _streaming_access(self, cmd: Command, s: int, g: int = 0):
        """The SRAM accesses of streaming step s (s ≥ 8 + 2C) and their fault checks; ``g``
        is the tile's gather offset.

        Returns
        -------
        (fault, read, read_addr, write, write_addr)
            ``fault``: None or the engine-fault address (check 1 for the read first, then check
            4 for the write, §12); ``read``: None, ("g", k1, b), ("w", m, b) or ("x", j, b);
            ``write``: None or (j, w), the output write w of element j.
        """
        read = self._read_of(cmd, s)
        a = None
        if read is not None:
            kind, i, b = read
            a = (cmd.g_addr(i) if kind == "g" else cmd.w_addr(i, b) if kind == "w"
                 else cmd.x_addr(i, b, g))
            if self._bad_read(a):
                return a, None, None, None, None
        write = self._write_of(cmd, s)
        wa = None
        if write is not None:
            j, w = write
            cj = cmd.c_addr(j)
            if cmd.mode in BYTE_MODES:
                if cj % 8 + cmd.C > 8 or cj >= self.nbytes:
                    return cj, None, None, None, None
                wa = cj
            else:                                       # RAW write w: 1 or 2 words
                wa = (cj + _RAW_WRITE_BYTES * w) & _M32
                if cj % 8 or wa >= self.nbytes:
                    return wa, None, None, None, None
                if 4 * cmd.C > _RAW_WRITE_BYTES * w + 8 and wa + 8 >= self.nbytes:
                    return wa + 8, None, None, None, None
        return None, read, a, write, wa

    def _macs_add(self, t: int, n: int) -> None:
        self.macs[t] += np.uint64(n)

    def _bad_read(self, a: int) -> bool:
        return a % VECTOR_BYTES != 0 or a >= self.nbytes

    @staticmethod
    def _read_of(cmd: Command, s: int):
        """("g", k1, b), ("w", m, b), ("x", j, b) or None: the read of streaming step s
        (s ≥ 8 + 2C). Steps per k1: G gather step, then K0 blocks of C + J steps (the last
        block of the last k1: C + J·OW, then the write tail)."""
        C = cmd.C
        q = s - DESC_WORDS - 2 * C
        k1 = min(q // cmd.group, cmd.K1 - 1)
        r = q - k1 * cmd.group
        if cmd.G:
            if r == 0:
                return ("g", k1, k1 * cmd.K0)
            r -= 1
        k0 = min(r // cmd.block, cmd.K0 - 1)
        r -= k0 * cmd.block
        b = k1 * cmd.K0 + k0
        if r < C:
            return ("w", r, b)
        if b < cmd.KB - 1:
            return ("x", r - C, b)
        j, sub = divmod(r - C, cmd.OW)
        if j < cmd.J and sub == 0:
            return ("x", j, b)
        return None

    @staticmethod
    def _write_of(cmd: Command, s: int):
        """(j, w) of the output write made in step s, or None."""
        q = s - (cmd.last + cmd.C + WRITE_DELAY)
        if 0 <= q < cmd.J * cmd.OW:
            return divmod(q, cmd.OW)
        return None

    def _output(self, t: int, cmd: Command, j: int, w: int) -> bytes:
        """Bytes of output write w of element j (RAW: lanes 4w .. min(4w + 4, C) − 1 as int32,
        §12 "Step schedule"; TFLITE, FLOAT32: C bytes)."""
        acc = self.acc[t, j, :cmd.C].view(np.int32)
        if cmd.mode == Mode.RAW:
            return acc[_RAW_WRITE_LANES * w:_RAW_WRITE_LANES * (w + 1)].astype("<i4").tobytes()
        if cmd.mode == Mode.FLOAT32:
            y = f32_round_array(acc, self.multiplier[t, :cmd.C]) + cmd.zp
            return (np.clip(y, cmd.qmin, cmd.qmax) & 0xFF).astype(np.uint8).tobytes()
        out = bytearray()
        for m in range(cmd.C):
            v = mbqm(int(acc[m]), int(self.multiplier[t, m]), int(self.shift[t, m])) + cmd.zp
            out.append(min(max(v, cmd.qmin), cmd.qmax) & 0xFF)
        return bytes(out)

    def _advance(self, t: int, k: int, s: int) -> None:
        self.step_no[t] = s + 1
        if s + 1 >= self.total[t]:                          # last step: idle from k + 1
            self.busy[t] = False
            self.busy_done[t] += k - self.accept[t] + 1
            self.nbusy -= 1
        return None
