"""Whole-array SPMD test programs (assembly with labels, built by ``tessera cc --no-crt``) as
:mod:`tessera.tb.cocotb_array` jobs: BSP sync stress, reduce-scatter and random multicast exchanges.

Each builder returns ``(job, expected)`` where ``expected`` holds values computed here in
Python from the program's definition (independently of the golden model and the RTL); the
tests additionally compare the whole RunResult (and optionally the retire trace) of the RTL
with the golden model.
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from tessera.spec.config import ArrayConfig
from tessera.spec.exchange import encode_program

__all__ = ["assemble", "sync_stress_job", "reduce_scatter_job", "random_exchange_job",
           "lcg_delays"]

LCG_A, LCG_C = 1103515245, 12345


def assemble(source: str, name: str = "prog") -> bytes:
    """Assemble a no-crt ``.S`` source (``_start`` at 0) and return the SRAM image from 0.

    Parameters
    ----------
    source : str
        Assembly text.
    name : str
        Used for the temporary file names (and error messages).

    Returns
    -------
    bytes
        Bytes of every PT_LOAD segment placed at its address (gaps zero-filled).

    Raises
    ------
    tessera.toolchain.cc.CompileError
        The source does not assemble.
    """
    from tessera.toolchain.cc import compile_program
    from tessera.toolchain.elf import load_elf
    with tempfile.TemporaryDirectory(prefix="tessera-spmd-") as d:
        src = Path(d) / f"{name}.S"
        src.write_text(source)
        elf = compile_program([src], Path(d) / f"{name}.elf", no_crt=True)
        image = load_elf(elf)
    end = max(s.addr + len(bytes(s.data)) for s in image.segments)
    buf = bytearray(end)
    for s in image.segments:
        buf[s.addr:s.addr + len(bytes(s.data))] = bytes(s.data)
    return bytes(buf)


def _job(name, code: bytes, cfg: ArrayConfig, max_cycles: int, extra=()):
    segs = [[t, 0, code.hex()] for t in range(cfg.tiles)] + [list(e) for e in extra]
    return {"name": name, "segments": segs, "entry": 0, "max_cycles": max_cycles}


# ------------------------------------------------------------------------- sync stress
def lcg_delays(seed: int, iterations: int, mask: int) -> list[int]:
    """The delay sequence the sync-stress program computes for one context (Python mirror).

    ``x = seed; per iteration: x = x * 1103515245 + 12345 (mod 2^32); delay = (x >> 16) & mask``.
    """
    x, out = seed & 0xFFFFFFFF, []
    for _ in range(iterations):
        x = (x * LCG_A + LCG_C) & 0xFFFFFFFF
        out.append((x >> 16) & mask)
    return out


def sync_stress_seed(tile: int, context: int) -> int:
    """Per-context LCG seed of :func:`sync_stress_job`."""
    return (tile * 64 + context) * 2654435761 + 1 & 0xFFFFFFFF


SYNC_STRESS = r"""
    .section .text.init
    .globl _start
_start:
    csrr  s0, 0xCC0               # tile id
    csrr  s1, 0xCC1               # context id
    slli  t0, s0, 6
    add   t0, t0, s1
    li    t1, 2654435761
    mul   s2, t0, t1
    addi  s2, s2, 1               # LCG state = (tile*64 + ctx) * 2654435761 + 1
    li    s3, {iters}             # iterations left
    li    s4, 0                   # sum of cycle CSR reads right after each release
    li    s5, 0                   # barriers passed
    li    s6, {halt_tile}
    li    s7, {halt_after}
    li    s8, {lazy_ctx}
    bne   s1, s8, loop            # one context per tile halts at once (non-halted rule)
    li    a0, 77
    ecall
loop:
    bne   s0, s6, 1f              # tile halt_tile: every context halts after halt_after syncs
    beq   s5, s7, done
1:
    li    t1, 1103515245
    mul   s2, s2, t1
    li    t1, 12345
    add   s2, s2, t1
    srli  t2, s2, 16
    andi  t2, t2, {mask}          # delay iterations
2:
    beqz  t2, 3f
    addi  t2, t2, -1
    j     2b
3:
    .word 0x0010002B              # sync ARRAY
    csrr  t3, 0xC00               # cycle right after the release
    add   s4, s4, t3
    addi  s5, s5, 1
    addi  s3, s3, -1
    bnez  s3, loop
done:
    mv    a0, s5
    ecall
"""


def sync_stress_job(cfg: ArrayConfig, iterations: int = 1000, mask: int = 15,
                    halt_tile: int | None = None, halt_after: int = 0, lazy_ctx: int = 1,
                    max_cycles: int | None = None):
    """Every context waits a pseudo-random number of loop iterations, then ``sync ARRAY``,
    ``iterations`` times back to back (no exchange program).

    Parameters
    ----------
    cfg : ArrayConfig
    iterations : int
        ARRAY barriers per context.
    mask : int
        Delay iterations per barrier are ``(lcg >> 16) & mask`` (3 instructions each).
    halt_tile : int or None
        This tile's contexts all halt after ``halt_after`` barriers; the others must not be
        blocked by it (architecture §5). None: no tile halts early.
    lazy_ctx : int
        On every tile this context halts at once (exit code 77).
    max_cycles : int, optional
        Default: a generous bound from the delays.

    Returns
    -------
    (dict, dict)
        The job and the expected values computed in Python: ``{(tile, ctx): exit_code}`` for
        every context (a0 = barriers passed, 77 for the lazy context).
    """
    ht = -1 if halt_tile is None else halt_tile
    src = SYNC_STRESS.format(iters=iterations, mask=mask, halt_tile=ht, halt_after=halt_after,
                             lazy_ctx=lazy_ctx)
    code = assemble(src, "sync_stress")
    if max_cycles is None:
        max_cycles = 200 + iterations * (cfg.sync_latency + 8 + 3 * mask) * cfg.contexts * 2
    exp = {}
    for t in range(cfg.tiles):
        for c in range(cfg.contexts):
            if c == lazy_ctx:
                exp[(t, c)] = 77
            elif t == ht:
                exp[(t, c)] = halt_after
            else:
                exp[(t, c)] = iterations
    return _job(f"sync-stress-{iterations}", code, cfg, max_cycles), exp


# ------------------------------------------------------------------------- exchange jobs
EXCHANGE_PRELUDE = r"""
    .section .text.init
    .globl _start
_start:
    csrr  s1, 0xCC1
    beqz  s1, 1f
    li    a0, 0
    ecall                         # only context 0 of each tile takes part
1:
    li    t0, {prog_at}
    csrw  0x800, t0               # xprog
    .word 0x0010002B              # sync ARRAY -> exchange phase
"""


def reduce_scatter_job(cfg: ArrayConfig, seed: int = 1):
    """Reduce-scatter of an N-word vector per tile: tile j ends with Σ_t v[t][j] in a0.

    Tile t holds ``v[t][0..N-1]`` at ``VEC``; in one exchange phase it sends word j to tile j
    (j ≠ t) — an all-to-all scheduled by :func:`tessera.toolchain.exchange_scheduler.schedule_exchange`
    — which stores it at ``RECV + 4·t``; then context 0 adds its own word and the N − 1
    received words.

    Returns
    -------
    (dict, dict)
        The job and ``{tile: expected a0}`` (sums mod 2^32, computed here).
    """
    from tessera.toolchain.exchange_scheduler import Transfer, schedule_exchange
    n = cfg.tiles
    prog_at, vec, recv = 0x2000, 0x3000, 0x3800
    rng = random.Random(seed)
    v = [[rng.getrandbits(32) for _ in range(n)] for _ in range(n)]
    transfers = [Transfer(t, vec + 4 * j, ((j, recv + 4 * t),))
                 for t in range(n) for j in range(n) if j != t]
    sched = schedule_exchange(transfers, cfg)
    src = EXCHANGE_PRELUDE.format(prog_at=prog_at) + f"""
    csrr  s0, 0xCC0
    slli  t1, s0, 2
    li    t2, {vec}
    add   t2, t2, t1
    lw    a0, 0(t2)                 # own word v[t][t]
    li    t3, {recv}
    li    t4, {n}
    li    t5, 0
2:
    beq   t5, s0, 3f                # no word from itself
    slli  t6, t5, 2
    add   t6, t6, t3
    lw    t6, 0(t6)
    add   a0, a0, t6
3:
    addi  t5, t5, 1
    bne   t5, t4, 2b
    ecall
"""
    code = assemble(src, "reduce_scatter")
    extra = []
    for t in range(n):
        extra.append([t, vec, b"".join(x.to_bytes(4, "little") for x in v[t])])
        if sched.programs[t]:
            extra.append([t, prog_at, encode_program(sched.programs[t])])
    extra = [[t, a, d.hex()] for t, a, d in extra]
    exp = {j: sum(v[t][j] for t in range(n)) & 0xFFFFFFFF for j in range(n)}
    return _job(f"reduce-scatter-{seed}", code, cfg, 20000, extra), exp


def random_exchange_job(cfg: ArrayConfig, seed: int, words: int = 24, max_fanout: int = 3):
    """A random conflict-free exchange with multicast, then every tile stops.

    Random transfers (each source word to 1..``max_fanout`` other tiles, distinct receive
    slots) are scheduled with :func:`tessera.toolchain.exchange_scheduler.schedule_exchange`; tile t's
    source words are random. Context 0 of each tile syncs, runs the exchange and halts; the
    test reads the receive area back.

    Returns
    -------
    (dict, dict)
        The job and ``{"recv": {(tile, addr): word}, "area": (addr, nbytes),
        "schedule": ExchangeSchedule}``: every expected received word, computed from the
        transfer list (not from the schedule's simulation).
    """
    from tessera.toolchain.exchange_scheduler import Transfer, schedule_exchange
    n = cfg.tiles
    if n < 2:
        raise ValueError("random_exchange_job needs at least 2 tiles")
    prog_at, src_at, recv_at = 0x2000, 0x3000, 0x3800
    rng = random.Random(seed)
    data = {(t, src_at + 4 * i): rng.getrandbits(32) for t in range(n) for i in range(words)}
    next_slot = [0] * n
    transfers, expected = [], {}
    for _ in range(words):
        s = rng.randrange(n)
        i = rng.randrange(words)
        k = rng.randint(1, min(max_fanout, n - 1))
        dsts = rng.sample([x for x in range(n) if x != s], k)
        pairs = []
        for d in dsts:
            addr = recv_at + 4 * next_slot[d]
            next_slot[d] += 1
            pairs.append((d, addr))
            expected[(d, addr)] = data[(s, src_at + 4 * i)]
        transfers.append(Transfer(s, src_at + 4 * i, tuple(pairs)))
    sched = schedule_exchange(transfers, cfg)
    code = assemble(EXCHANGE_PRELUDE.format(prog_at=prog_at) + "\n    li a0, 0\n    ecall\n",
                    "xchg")
    extra = []
    for t in range(n):
        blob = b"".join(data[(t, src_at + 4 * i)].to_bytes(4, "little") for i in range(words))
        extra.append([t, src_at, blob.hex()])
        extra.append([t, recv_at, bytes(4 * words).hex()])
        extra.append([t, prog_at, encode_program(sched.programs[t]).hex()])
    job = _job(f"xchg-{seed}", code, cfg, 20000, extra)
    return job, {"recv": expected, "area": (recv_at, 4 * words), "schedule": sched}
