"""Exchange engine of the golden model (docs/architecture.md §6, format in tessera/spec/exchange.py).

Every tile runs its exchange program from the byte address in its ``xprog`` CSR, starting at
the ARRAY release cycle r. All tiles with a step at cycle k are processed in one vectorized
step: first every send (reads SRAM as left by cycles < k), then every receive (writes SRAM at
k). The send buses are kept for L+1 cycles in a ring indexed by cycle, so a receive at k sees
the source's bus of cycle k − L, or 0 if the source did not drive it.
"""

from __future__ import annotations

import numpy as np

from tessera.spec.exchange import (ADDR_MASK, ADDR_SHIFT, MAX_RUN, OP_SHIFT, RECV_EN_BIT,
                                   RELATIVE_BIT, RUN_SHIFT, SEND_EN_BIT, SRC_MASK, SRC_SHIFT,
                                   STEP_BYTES, XOp)

__all__ = ["ExchangeEngine"]

_NEVER = np.iinfo(np.int64).max


class ExchangeEngine:
    """Per-tile exchange-program sequencers plus the send buses.

    Parameters
    ----------
    tiles : int
        N.
    latency : int
        L, cycles from send to receive.
    sram : tessera.golden_model.memory.Sram
        The SRAM read by sends and written by receives.
    """

    def __init__(self, tiles: int, latency: int, sram):
        self.n = tiles
        self.lat = latency
        self.sram = sram
        self.tile_ids = np.arange(tiles, dtype=np.int64)
        self.reset()

    def reset(self) -> None:
        """Forget every running program and every bus value (host start)."""
        n, L = self.n, self.lat
        self.in_prog = np.zeros(n, dtype=bool)
        self.next_step = np.full(n, _NEVER, dtype=np.int64)
        self.ptr = np.zeros(n, dtype=np.int64)
        # a STEP run in progress (§6 "Runs"): cycle index i of the run (0: no run) and the
        # step's two words, read at the run's first cycle
        self.run_i = np.zeros(n, dtype=np.int64)
        self.run_w = np.zeros((2, n), dtype=np.int64)
        self.bus_val = np.zeros((L + 1, n), dtype=np.uint32)
        self.bus_valid = np.zeros((L + 1, n), dtype=bool)
        self.slot_cycle = np.full(L + 1, -1, dtype=np.int64)
        self.next_cycle = _NEVER

    def start(self, r: int, xprog: np.ndarray) -> np.ndarray:
        """Start every tile's program at release cycle ``r``.

        Returns
        -------
        numpy.ndarray of int
            Tiles with ``xprog == 0``: their exchange phase is the single cycle r (e = r).
        """
        has = xprog != 0
        self.in_prog[:] = has
        self.ptr[:] = xprog.astype(np.int64)
        self.run_i[:] = 0
        self.next_step[:] = np.where(has, r, _NEVER)
        self.next_cycle = r if has.any() else _NEVER
        return np.nonzero(~has)[0]

    def step(self, k: int):
        """Run every step that starts at cycle ``k``.

        Returns
        -------
        ended : numpy.ndarray of int
            Tiles whose END step ran at k (e = k).
        faults : list of (tile, pc, addr)
            Exchange faults at k (§6 check order); the faulting step had no effect.
        events : list of dict
            One record per executed STEP with a send or receive (for the trace).
        """
        nbytes = self.sram.nbytes
        w32 = self.sram.w32
        tiles = np.nonzero(self.in_prog & (self.next_step == k))[0]
        faults = []
        events = []
        addr = self.ptr[tiles]
        cont = self.run_i[tiles] > 0          # later cycles of a run: the step is not re-read
        bad = ~cont & ((addr % STEP_BYTES != 0) | (addr >= nbytes) | (addr < 0))
        for t, a in zip(tiles[bad], addr[bad]):
            faults.append((int(t), int(a), int(a)))
        tiles, addr, cont = tiles[~bad], addr[~bad], cont[~bad]
        wi = np.where(cont, 0, addr >> 2)
        w0 = np.where(cont, self.run_w[0, tiles], w32[tiles, wi].astype(np.int64))
        w1 = np.where(cont, self.run_w[1, tiles], w32[tiles, wi + 1].astype(np.int64))
        run_i = self.run_i[tiles]
        op = w0 >> OP_SHIFT
        bad = op == XOp.RESERVED
        for t, a in zip(tiles[bad], addr[bad]):
            faults.append((int(t), int(a), int(a)))
        is_step = op == XOp.STEP
        send_en = is_step & (((w0 >> SEND_EN_BIT) & 1) == 1)
        recv_en = is_step & (((w0 >> RECV_EN_BIT) & 1) == 1)
        send_b = ((w0 >> ADDR_SHIFT & ADDR_MASK) + run_i) << 2
        rel = ((w1 >> RELATIVE_BIT) & 1) == 1
        src = (w1 >> SRC_SHIFT) & SRC_MASK
        recv_b = ((w1 >> ADDR_SHIFT & ADDR_MASK) + run_i) << 2
        f_send = send_en & (send_b >= nbytes)
        f_src = recv_en & ~f_send & ~rel & (src >= self.n)
        f_recv = recv_en & ~f_send & ~f_src & (recv_b >= nbytes)
        for mask, val in ((f_send, send_b), (f_src, src), (f_recv, recv_b)):
            for t, a, v in zip(tiles[mask], addr[mask], val[mask]):
                faults.append((int(t), int(a), int(v)))
        ok = ~(bad | f_send | f_src | f_recv)
        # A tile whose step faults does no further exchange step (its exchange phase lasts
        # until the array stops, §7 "Stop"; the step had no effect, §6).
        f_t = np.array([f[0] for f in faults], dtype=np.int64)
        if len(f_t):
            self.in_prog[f_t] = False
            self.next_step[f_t] = _NEVER
        # Sends at k: SRAM as after all writes of cycles < k.
        L1 = self.lat + 1
        slot = k % L1
        self.slot_cycle[slot] = k
        self.bus_valid[slot] = False
        s_m = ok & send_en
        st = tiles[s_m]
        self.bus_val[slot, st] = w32[st, send_b[s_m] >> 2]
        self.bus_valid[slot, st] = True
        # Receives at k: the source's bus of cycle k - L.
        r_m = ok & recv_en
        rt = tiles[r_m]
        src_abs = np.where(rel[r_m], (rt + src[r_m]) % self.n, src[r_m])
        old = (k - self.lat) % L1
        if self.slot_cycle[old] == k - self.lat:
            val = np.where(self.bus_valid[old, src_abs], self.bus_val[old, src_abs], 0)
        else:
            val = np.zeros(len(rt), dtype=np.uint32)
        w32[rt, recv_b[r_m] >> 2] = val.astype(np.uint32)
        if self._trace:
            sv = dict(zip(st.tolist(), self.bus_val[slot, st].tolist()))
            rv = dict(zip(rt.tolist(), zip(src_abs.tolist(), (recv_b[r_m]).tolist(),
                                           val.tolist())))
            for t, a in zip(tiles[ok & (send_en | recv_en)].tolist(),
                            addr[ok & (send_en | recv_en)].tolist()):
                ev = {"cycle": k, "tile": t, "step_addr": a, "send": sv.get(t),
                      "recv": rv.get(t)}
                events.append(ev)
        # Advance the sequencers of the tiles that did not fault: a STEP run stays on its step
        # for n cycles, then (like every other step) the next step follows.
        ok_t = tiles[ok]
        run_n = np.where(op[ok] == XOp.STEP, (w0[ok] >> RUN_SHIFT & (MAX_RUN - 1)) + 1, 1)
        more = run_i[ok] + 1 < run_n
        rt_more = ok_t[more]
        self.run_i[rt_more] = run_i[ok][more] + 1
        self.run_w[0, rt_more] = w0[ok][more]
        self.run_w[1, rt_more] = w1[ok][more]
        self.next_step[rt_more] = k + 1
        ok_t, w0o, opo = ok_t[~more], w0[ok][~more], op[ok][~more]
        self.run_i[ok_t] = 0
        n_idle = np.where(opo == XOp.IDLE, (w0o >> ADDR_SHIFT & ADDR_MASK) + 1, 1)
        self.ptr[ok_t] += STEP_BYTES
        self.next_step[ok_t] = k + n_idle
        end_m = opo == XOp.END
        ended = ok_t[end_m]
        self.in_prog[ended] = False
        self.next_step[ended] = _NEVER
        self.next_cycle = int(self.next_step.min()) if self.in_prog.any() else _NEVER
        return ended, faults, events

    _trace = False
