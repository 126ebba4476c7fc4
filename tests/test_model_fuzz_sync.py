"""Golden model vs a tiny per-cycle scalar reference written straight from docs/architecture.md
§4-§8, on random multi-tile programs mixing sync TILE / sync ARRAY / ecall / cycle reads /
exchange programs. The reference loops over every cycle, tile and context (no events, no
fast-forward, no vectorization), so it checks the model's event-driven bookkeeping.

Contract v2 rules the reference implements (written from the text, not from the model): state
changes of an instruction issued at t are visible from t + 5; a store writes and a load reads
the SRAM in M = t + 4 (after the fetch and the exchange steps of that cycle); the fetch at t
sees the writes of cycles < t; a fault is visible from t + 5 (instruction) or c + 1 (exchange
step at c); every context HALTED is visible from the last ecall + 5; the run ends with
cycles = v + D (v: the first cycle one of those holds, D = ceil(log2 N) + 2), every
instruction and step of cycles <= v + D - 1 taking effect; a tile keeps the fault visible
first; a tile whose exchange step faults does no further step.
"""

import random
import struct

import pytest

from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, encode_program

SRAM = 16 * 1024
XP = 0x700
DATA = 0x500        # 64 words of data per tile (x0-relative addressable)
NEVER = 1 << 62
RUN, WT, WA, HALT, FLT = range(5)


class Ref:
    """Per-cycle reference for a small instruction subset (see ``gen_code``)."""

    def __init__(self, cfg, images):
        self.cfg = cfg
        self.N, self.T, self.L = cfg.tiles, cfg.contexts, cfg.exchange_latency
        self.mem = [bytearray(img) for img in images]
        self.x = [[[0] * 32 for _ in range(self.T)] for _ in range(self.N)]
        self.pc = [[0] * self.T for _ in range(self.N)]
        self.st = [[RUN] * self.T for _ in range(self.N)]
        self.pend = {}                      # (t, c) -> (cycle, state)
        self.exitc = [[None] * self.T for _ in range(self.N)]
        self.ret = [[0] * self.T for _ in range(self.N)]
        self.xprog = [0] * self.N
        self.cnt = [[0] * 4 for _ in range(self.N)]   # compute, sync, exchange, halted
        self.inx = [False] * self.N         # in exchange phase
        self.xnext = [NEVER] * self.N
        self.xptr = [0] * self.N
        self.xend = [NEVER] * self.N        # first cycle after the phase
        self.bus = {}                       # (cycle, tile) -> word
        self.release = NEVER
        self.fault = [None] * self.N
        self.fault_vis = [NEVER] * self.N
        self.memq = {}                      # M cycle -> [(kind, t, c, rd, addr, value)]
        self.stop_at = NEVER                # cycles = v + D
        self.D = cfg.decision_latency
        self.live = self.N * self.T          # contexts that have not issued ecall

    def record(self, t, f, vis):
        if vis < self.fault_vis[t]:
            self.fault[t], self.fault_vis[t] = f, vis
        self.stop_at = min(self.stop_at, vis + self.D)

    def mem_stage(self, k):
        for kind, t, c, rd, a, v in self.memq.pop(k, []):
            if kind == "sw":
                struct.pack_into("<I", self.mem[t], a, v)
            elif rd:
                self.x[t][c][rd] = self.w(t, a)

    def w(self, t, a):
        return struct.unpack_from("<I", self.mem[t], a)[0]

    def run(self, max_cycles):
        N, T = self.N, self.T
        k = 0
        while k < min(max_cycles, self.stop_at):
            for key, (cy, s) in list(self.pend.items()):
                if cy == k:
                    if self.st[key[0]][key[1]] != FLT:
                        self.st[key[0]][key[1]] = s
                    del self.pend[key]
            for t in range(N):
                if self.xend[t] == k:
                    self.inx[t] = False
                    self.xend[t] = NEVER
            if k == self.release:
                self.release = NEVER
                for t in range(N):
                    self.inx[t] = True
                    if self.xprog[t] == 0:
                        self.end_x(t, k)
                    else:
                        self.xnext[t], self.xptr[t] = k, self.xprog[t]
            elif self.release == NEVER:
                arrived_all, any_wa = True, False
                for t in range(N):
                    s = self.st[t]
                    live = [v for v in s if v != HALT]
                    if live and all(v == WT for v in live):
                        for c in range(T):
                            if s[c] == WT:
                                self.pend[(t, c)] = (k + 1, RUN)
                    arrived = not self.inx[t] and (
                        (live and all(v == WA for v in live)) or not live)
                    arrived_all &= bool(arrived)
                    any_wa |= WA in s
                if arrived_all and any_wa:
                    self.release = k + self.D
            for t in range(N):
                s = self.st[t]
                if self.inx[t]:
                    self.cnt[t][2] += 1
                elif all(v in (HALT, FLT) for v in s):
                    self.cnt[t][3] += 1
                elif RUN in s:
                    self.cnt[t][0] += 1
                else:
                    self.cnt[t][1] += 1
            self.xstep(k)
            c = k % T
            for t in range(N):
                if self.st[t][c] == RUN and (t, c) not in self.pend:
                    self.issue(k, t, c)
            self.mem_stage(k)
            k += 1
        for m in sorted(self.memq):                 # in flight at the end: takes effect
            self.mem_stage(m)
        return k

    def end_x(self, t, e):
        self.xend[t] = e + 1
        self.xnext[t] = NEVER
        for c in range(self.T):
            if self.st[t][c] == WA:
                self.pend[(t, c)] = (e + 1, RUN)

    def xfault(self, t, k, f):
        self.record(t, f, k + 1)
        self.xnext[t] = NEVER

    def xstep(self, k):
        todo = [t for t in range(self.N) if self.xnext[t] == k]
        sends, recvs = {}, []
        for t in todo:
            a = self.xptr[t]
            if a % 8 or a >= SRAM:
                self.xfault(t, k, (None, 24, a, a))
                continue
            w0, w1 = self.w(t, a), self.w(t, a + 4)
            op = w0 >> 30
            if op == 3:
                self.xfault(t, k, (None, 24, a, a))
                continue
            if op == 0:
                se, re_ = w0 >> 29 & 1, w0 >> 28 & 1
                sa = (w0 & 0xFFFFF) * 4
                rel, src, ra = w1 >> 31, (w1 >> 20) & 0x7FF, (w1 & 0xFFFFF) * 4
                if se and sa >= SRAM:
                    self.xfault(t, k, (None, 24, a, sa))
                    continue
                if re_ and not rel and src >= self.N:
                    self.xfault(t, k, (None, 24, a, src))
                    continue
                if re_ and ra >= SRAM:
                    self.xfault(t, k, (None, 24, a, ra))
                    continue
                if se:
                    sends[t] = self.w(t, sa)
                if re_:
                    recvs.append((t, (t + src) % self.N if rel else src, ra))
            self.xptr[t] = a + 8
            if op == 1:
                self.xnext[t] = k + (w0 & 0xFFFFF) + 1
            elif op == 2:
                self.end_x(t, k)
            else:
                self.xnext[t] = k + 1
        for t, v in sends.items():
            self.bus[(k, t)] = v
        for t, s, ra in recvs:
            struct.pack_into("<I", self.mem[t], ra, self.bus.get((k - self.L, s), 0))

    def issue(self, k, t, c):
        x, pc = self.x[t][c], self.pc[t][c]
        w = self.w(t, pc)
        op, rd, f3, rs1 = w & 0x7F, (w >> 7) & 31, (w >> 12) & 7, (w >> 15) & 31
        imm = (w >> 20) - (4096 if w >> 31 else 0)
        nxt, val = pc + 4, None
        if op == 0x13:                                  # addi
            val = (x[rs1] + imm) & 0xFFFFFFFF
        elif op == 0x33:                                # add
            val = (x[rs1] + x[(w >> 20) & 31]) & 0xFFFFFFFF
        elif op == 0x03:                                # lw: reads in M, k + 4
            self.memq.setdefault(k + 4, []).append(
                ("lw", t, c, rd, (x[rs1] + imm) & 0xFFFFFFFF, None))
        elif op == 0x23:                                # sw: writes in M, k + 4
            a = (x[rs1] + ((w >> 25) << 5 | (w >> 7) & 31)) & 0xFFFFFFFF
            self.memq.setdefault(k + 4, []).append(("sw", t, c, 0, a, x[(w >> 20) & 31]))
        elif op == 0x63:                                # beq/bne forward
            off = ((w >> 8) & 0xF) << 1 | ((w >> 25) & 0x3F) << 5
            if (x[rs1] == x[(w >> 20) & 31]) == (f3 == 0):
                nxt = pc + off
        elif w == 0x00100073:                           # ebreak: fault, no effect
            self.record(t, (c, 3, pc, pc), k + 5)
            self.pend[(t, c)] = (k + 5, FLT)
            return
        elif op == 0x73 and w == 0x73:                  # ecall
            self.exitc[t][c] = x[10]
            self.pend[(t, c)] = (k + 5, HALT)
            self.pc[t][c] = nxt
            self.ret[t][c] += 1
            self.live -= 1
            if self.live == 0:                          # every context HALTED from k + 5
                self.stop_at = min(self.stop_at, k + 5 + self.D)
            return
        elif op == 0x73:                                # csrr / csrw xprog
            csr = w >> 20
            old = {0xC00: k, 0xCC0: t, 0xCC1: c, 0x800: self.xprog[t]}[csr]
            if f3 == 1:
                self.xprog[t] = x[rs1]
            val = old
        elif op == 0x2B:                                # sync
            self.pend[(t, c)] = (k + 5, WA if w >> 20 else WT)
        else:
            raise AssertionError(hex(w))
        if val is not None and rd:
            x[rd] = val
        self.pc[t][c] = nxt
        self.ret[t][c] += 1


def gen_code(rng, T):
    """Straight-line code with forward branches on context id, syncs and ecalls."""
    code = [asm.csrr(5, Csr.CONTEXT_ID), asm.csrr(6, Csr.TILE_ID),
            *asm.li(9, XP), asm.csrw(Csr.XPROG, 9)]
    n = rng.randrange(8, 30)
    body = []
    for i in range(n):
        r = rng.random()
        if r < 0.25:
            body.append([asm.csrr(7, Csr.CYCLE), asm.add(8, 8, 7)])
        elif r < 0.4:
            body.append([asm.sync_array()])
        elif r < 0.47:
            body.append([asm.sync_tile()])
        elif r < 0.6:
            body.append([asm.addi(10, 10, rng.randrange(1, 50))])
        elif r < 0.7:
            body.append([asm.lw(11, DATA + 4 * rng.randrange(16), 0), asm.add(8, 8, 11)])
        elif r < 0.78:
            body.append([asm.sw(8, DATA + 4 * rng.randrange(16, 32), 0)])
        elif r < 0.9:
            # skip the next 1..3 items if context id == a random value
            body.append(("skip", rng.randrange(T), rng.randrange(1, 4)))
        elif r < 0.95:
            body.append([asm.addi(12, 0, rng.randrange(T)), asm.bne(5, 12, 8), asm.ecall()])
        elif r < 0.99:
            body.append([asm.csrr(7, Csr.XPROG)])
        else:
            body.append([asm.ebreak()])
    # resolve skips to byte offsets
    sizes = [3 if isinstance(b, tuple) else len(b) for b in body]
    out = list(code)
    for i, b in enumerate(body):
        if isinstance(b, tuple):
            _, ctx, cnt = b
            off = 4 * (1 + 1 + sum(sizes[i + 1:i + 1 + cnt]))
            out += [asm.addi(12, 0, ctx), asm.beq(5, 12, off), asm.nop()]
        else:
            out += b
    out.append(asm.ecall())
    return out


def gen_xprog(rng, N):
    steps = []
    for _ in range(rng.randrange(0, 8)):
        r = rng.random()
        if r < 0.25:
            steps.append(Step.idle(rng.randrange(1, 5)))
        else:
            send = DATA + 4 * rng.randrange(32) if rng.random() < 0.7 else None
            if rng.random() < 0.6:
                rel = rng.random() < 0.5
                src = rng.randrange(2048 if rel else N + (1 if rng.random() < 0.1 else 0))
                steps.append(Step.send_recv(send, src, DATA + 4 * rng.randrange(32, 64), rel))
            else:
                steps.append(Step.send_recv(send))
    return encode_program(steps)


def compare(seed):
    rng = random.Random(seed)
    N = rng.choice([1, 2, 3, 5])
    T = rng.choice([6, 7, 8])          # T >= 6, L >= 2 (§1, contract v2)
    L = rng.choice([2, 3, 4, 5])
    cfg = ArrayConfig(tiles=N, contexts=T, sram_bytes=SRAM, exchange_latency=L)
    images = []
    for t in range(N):
        img = bytearray(SRAM)
        code = asm.program(gen_code(rng, T))
        img[:len(code)] = code
        xp = gen_xprog(rng, N)
        img[XP:XP + len(xp)] = xp
        img[DATA:DATA + 256] = bytes(rng.getrandbits(8) for _ in range(256))
        images.append(img)
    max_cycles = rng.choice([60, 150, 400])
    ref = Ref(cfg, images)
    cycles = ref.run(max_cycles)
    arr = Array(cfg)
    for t in range(N):
        arr.write_mem(t, 0, bytes(images[t]))
    res = arr.run(max_cycles)
    ctx = f"seed {seed} (N={N} T={T} L={L})"
    assert res.cycles == cycles, ctx
    for t in range(N):
        tr = res.tiles[t]
        f = tr.fault
        assert (None if f is None else (f.context, int(f.cause), f.pc, f.addr)) == ref.fault[t], ctx
        cn = tr.counters
        assert [cn["compute"], cn["sync"], cn["exchange"], cn["halted"]] == ref.cnt[t], \
            f"{ctx} tile {t} counters"
        assert cn["retired"] == sum(ref.ret[t]), ctx
        for c in range(T):
            cr = tr.contexts[c]
            exp_state = ref.pend.get((t, c), (0, ref.st[t][c]))[1]
            assert int(cr.state) == exp_state, f"{ctx} tile {t} ctx {c} state"
            assert cr.pc == ref.pc[t][c], f"{ctx} tile {t} ctx {c} pc"
            assert cr.regs == ref.x[t][c], f"{ctx} tile {t} ctx {c} regs"
            assert cr.retired == ref.ret[t][c], ctx
            if exp_state == HALT:
                assert cr.exit_code == ref.exitc[t][c], ctx
        assert arr.read_mem(t, 0, SRAM) == bytes(ref.mem[t]), f"{ctx} tile {t} SRAM"
    return res.status


def test_fuzz_sync_exchange_vs_reference():
    statuses = [compare(seed) for seed in range(80)]
    # the sample must cover every way a run can end
    assert {"halted", "fault", "timeout"} <= {str(s.value) for s in statuses}


@pytest.mark.slow
def test_fuzz_sync_exchange_vs_reference_slow():
    for seed in range(60, 1060):
        compare(seed)
