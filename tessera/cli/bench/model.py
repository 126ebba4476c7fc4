"""Golden-model speed: tile-instructions/s vs tiles, against a scalar interpreter and unicorn.

Three engines run the **same RV32IM program** (:func:`rv32im_program`: an 8-instruction loop of
MUL/ADD/XOR/SHIFT/BRANCH per context, ``iters`` times, then ``ecall``) in the same run:

* the vectorized golden model (``tessera.golden_model.Array``), all N tiles × T contexts;
* the plain per-tile Python interpreter ``tessera.golden_model.scalar.ScalarArray`` (one Python loop
  iteration per tile per instruction), measured on a prefix of the run (its per-instruction
  cost does not depend on N or on the prefix length);
* unicorn (QEMU's TCG, pip ``unicorn``), running the program **tile by tile** and context by
  context, one ``emu_start`` each, on up to 16 tiles (per-tile cost is independent of N). The
  two ``csrr tile_id / context_id`` at the entry are emulated by the harness (unicorn has no
  such CSRs): emulation starts after them with a1/a2 preset.

Results are cross-checked: unicorn's and the scalar interpreter's registers must equal the
model's. The dot4 loop of ``scripts/bench_model.py`` (:func:`program`) is also timed at the
largest N for continuity with the earlier figure.
"""

from __future__ import annotations

import numpy as np

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr

from .common import BenchError, Goal, Section, Timer, save_figure

__all__ = ["program", "divergent_program", "rv32im_program", "time_model", "time_scalar",
           "time_unicorn", "run", "plot"]

#: Registers the loop leaves results in (compared across engines).
RESULT_REGS = (10, 11, 12, 13, 14, 15)


def program(iters: int) -> list[int]:
    """Per context: a loop of 8 ALU/dot4 instructions, ``iters`` times, then ecall
    (from scripts/bench_model.py)."""
    return [
        asm.csrr(11, Csr.TILE_ID),          # a1 = tile id (data differ per tile)
        asm.csrr(12, Csr.CONTEXT_ID),       # a2 = context id
        *asm.li(5, iters),                  # t0 = loop counter
        # loop:
        asm.dot4(10, 11, 12),               # a0 += a1 . a2
        asm.addi(11, 11, 0x13),
        asm.xor(12, 12, 11),
        asm.dot4su(13, 11, 12),             # a3 += a1 .su a2
        asm.add(14, 14, 10),
        asm.slli(15, 14, 3),
        asm.addi(5, 5, -1),
        asm.bne(5, 0, -7 * 4),
        asm.ecall(),
    ]


def divergent_program(iters: int) -> list[int]:
    """Odd tiles run a different loop body (other registers), so every cycle mixes two
    distinct instruction words: exercises the grouped (non-uniform) decode path
    (from scripts/bench_model.py)."""
    body_even = [asm.dot4(10, 11, 12), asm.addi(11, 11, 0x13), asm.xor(12, 12, 11),
                 asm.dot4su(13, 11, 12), asm.add(14, 14, 10), asm.slli(15, 14, 3)]
    body_odd = [asm.dot4su(16, 11, 12), asm.addi(11, 11, 0x7), asm.or_(12, 12, 11),
                asm.dot4(17, 11, 12), asm.sub(18, 18, 16), asm.srli(19, 18, 2)]
    n = len(body_even) + 2
    return [
        asm.csrr(11, Csr.TILE_ID), asm.csrr(12, Csr.CONTEXT_ID), *asm.li(5, iters),
        asm.andi(6, 11, 1),
        asm.bne(6, 0, (n + 2) * 4),                     # odd tiles -> odd loop
        *body_even, asm.addi(5, 5, -1), asm.bne(5, 0, -(n - 1) * 4), asm.ecall(),
        *body_odd, asm.addi(5, 5, -1), asm.bne(5, 0, -(n - 1) * 4), asm.ecall(),
    ]


def rv32im_program(iters: int) -> list[int]:
    """Plain RV32IM loop (no custom instructions) run by all three engines.

    Words 0 and 1 read tile_id/context_id into a1/a2; the loop body is 8 instructions
    (MUL, ADDI, XOR, ADD, SLLI, SUB, ADDI, BNE) executed ``iters`` times; then ``ecall``.
    """
    if iters < 1:
        raise BenchError(f"iters must be ≥ 1, not {iters}")
    return [
        asm.csrr(11, Csr.TILE_ID),
        asm.csrr(12, Csr.CONTEXT_ID),
        *asm.li(5, iters),
        asm.mul(10, 11, 12),
        asm.addi(11, 11, 0x13),
        asm.xor(12, 12, 11),
        asm.add(13, 13, 10),
        asm.slli(14, 13, 3),
        asm.sub(15, 15, 14),
        asm.addi(5, 5, -1),
        asm.bne(5, 0, -7 * 4),
        asm.ecall(),
    ]


def _cfg(n: int) -> ArrayConfig:
    return ArrayConfig(tiles=n, contexts=6, sram_bytes=64 * 1024)


def time_model(cfg: ArrayConfig, words: list[int]):
    """Run ``words`` SPMD on the golden model to completion.

    Returns
    -------
    (rate, seconds, tile_instructions, array)
        ``rate`` in tile-instructions/s; ``array`` is the finished ``tessera.golden_model.Array``.

    Raises
    ------
    BenchError
        The run did not halt.
    """
    from tessera.golden_model import Array
    arr = Array(cfg)
    arr.write_mem(None, 0, asm.program(words))
    with Timer() as t:
        res = arr.run(10 ** 9)
    if res.status != "halted":
        raise BenchError(f"golden model run ended {res.status}, expected halted")
    n = int(arr.counters["retired"].sum())
    return n / t.s, t.s, n, arr


def time_scalar(cfg: ArrayConfig, words: list[int], cycles: int):
    """Run the scalar interpreter for ``cycles`` cycles.

    Returns
    -------
    (rate, seconds, tile_instructions, ScalarArray)
    """
    from tessera.golden_model.scalar import ScalarArray
    sc = ScalarArray(cfg)
    sc.write_mem(None, 0, asm.program(words))
    with Timer() as t:
        sc.run(cycles)
    return sc.retired / t.s, t.s, sc.retired, sc


def time_unicorn(cfg: ArrayConfig, words: list[int], tiles: int):
    """Run ``words`` on unicorn tile by tile, context by context (``tiles`` tiles).

    Returns
    -------
    (None, seconds, None, regs)
        ``regs``: uint32 [tiles, T, 32] final registers (the ``ecall`` is not executed, the
        two entry ``csrr`` are emulated; the caller counts instructions from the model).

    Raises
    ------
    BenchError
        unicorn is not installed.
    """
    try:
        from unicorn import UC_ARCH_RISCV, UC_MODE_RISCV32, Uc
        from unicorn import riscv_const as rc
    except ImportError as e:
        raise BenchError(f"unicorn is not installed ({e}); pip install unicorn") from None
    code = asm.program(words)
    ecall_at = 4 * (len(words) - 1)
    regs = [getattr(rc, f"UC_RISCV_REG_X{i}") for i in range(32)]
    pc_reg = rc.UC_RISCV_REG_PC
    out = np.zeros((tiles, cfg.contexts, 32), dtype=np.uint32)
    mu = Uc(UC_ARCH_RISCV, UC_MODE_RISCV32)
    mu.mem_map(0, cfg.sram_bytes)
    mu.mem_write(0, code)
    mu.emu_start(8, ecall_at)        # warm-up: translate the blocks once, outside the timing
    with Timer() as t:
        for tile in range(tiles):
            for c in range(cfg.contexts):
                for r in regs[1:]:
                    mu.reg_write(r, 0)
                mu.reg_write(regs[11], tile)     # csrr a1, tile_id   (emulated)
                mu.reg_write(regs[12], c)        # csrr a2, context_id (emulated)
                mu.reg_write(pc_reg, 8)
                mu.emu_start(8, ecall_at)
                out[tile, c] = [mu.reg_read(r) & 0xFFFFFFFF for r in regs]
    return None, t.s, None, out


def run(quick: bool = True) -> Section:
    """Sweep N = 1 … 1216 tiles (6 contexts) with the three engines.

    Returns
    -------
    Section
        Rows per N: model rate, scalar rate, unicorn rate, ratios; goal at 1216 tiles.
    """
    sizes = (1, 16, 256, 1216) if quick else (1, 4, 16, 64, 256, 1216)
    iters = 60 if quick else 200
    words = rv32im_program(iters)
    sec = Section("model", "Golden model speed",
                  "tessera bench --only model" + (" --quick" if quick else ""))
    sec.columns = [("tiles", "tiles"), ("model", "model tile-instr/s"),
                   ("scalar", "scalar interp. tile-instr/s"), ("unicorn", "unicorn tile-instr/s"),
                   ("vs_scalar", "model / scalar"), ("vs_unicorn", "model / unicorn"),
                   ("model_s", "model wall (s)")]
    with Timer() as tt:
        for n in sizes:
            cfg = _cfg(n)
            rate, secs, ninsn, arr = time_model(cfg, words)
            per_context = ninsn // (n * cfg.contexts)
            # scalar: a prefix of about 60k tile-instructions (≥ 2 loop iterations per context)
            cyc = max(2 * 8 * cfg.contexts + 24, min(per_context * cfg.contexts, 60_000 // n))
            srate, _, _, sc = time_scalar(cfg, words, cyc)
            # cross-check the scalar interpreter against the model on the same prefix
            from tessera.golden_model import Array
            chk = Array(cfg)
            chk.write_mem(None, 0, asm.program(words))
            chk.run(cyc)
            if not np.array_equal(chk.regs, sc.regs_array()):
                raise BenchError(f"scalar interpreter and model disagree after {cyc} cycles "
                                 f"on {n} tiles")
            ut = min(n, 16)
            _, usecs, _, uregs = time_unicorn(cfg, words, ut)
            uinsn = ut * cfg.contexts * (per_context - 3)   # csrr x2 emulated, ecall not run
            urate = uinsn / usecs
            mregs = np.asarray(arr.regs)[:ut]
            for r in RESULT_REGS:
                if not np.array_equal(mregs[:, :, r], uregs[:, :, r]):
                    raise BenchError(f"unicorn and the model disagree on x{r} ({n} tiles)")
            sec.rows.append(dict(tiles=n, model=rate, scalar=srate, unicorn=urate,
                                 vs_scalar=rate / srate, vs_unicorn=rate / urate,
                                 model_s=secs, insns=ninsn))
        # the dot4 loop of scripts/bench_model.py at the largest size, for continuity
        n = sizes[-1]
        drate, dsecs, dn, _ = time_model(_cfg(n), program(iters))
        vrate, vsecs, vn, _ = time_model(_cfg(n), divergent_program(iters))
        sec.data["dot4_loop"] = dict(tiles=n, rate=drate, insns=dn, seconds=dsecs)
        sec.data["divergent_loop"] = dict(tiles=n, rate=vrate, insns=vn, seconds=vsecs)
    sec.seconds = tt.s
    big = sec.rows[-1]
    sec.goals.append(Goal("golden model ≥ 5 M tile-instr/s at 1216 tiles",
                          f"{big['model'] / 1e6:.1f} M (RV32IM loop), {drate / 1e6:.1f} M "
                          f"(dot4 loop), {vrate / 1e6:.1f} M (divergent odd/even tiles)",
                          min(big["model"], drate) >= 5e6))
    sec.notes += [
        f"Program: `tessera.cli.bench.model.rv32im_program({iters})` — 8-instruction RV32IM loop "
        f"(MUL, ADDI, XOR, ADD, SLLI, SUB, ADDI, BNE) × {iters} per context, 6 contexts per tile, "
        "64 KiB SRAM. Same words on all three engines; unicorn's and the scalar "
        "interpreter's registers are checked equal to the model's.",
        "The scalar interpreter runs a prefix of about 60 k tile-instructions; unicorn runs "
        f"16 tiles (or N if fewer) tile by tile, one `emu_start` per context "
        "(QEMU TCG translation is cached across runs). Both rates are per tile-instruction and "
        "should not depend on N; their spread across rows is measurement noise (short samples "
        "on a loaded machine).",
        f"At {n} tiles the dot4/dot4su loop of `scripts/bench_model.py` ran at "
        f"{drate / 1e6:.1f} M tile-instr/s and its divergent variant (odd/even tiles run "
        f"different code) at {vrate / 1e6:.1f} M.",
        "unicorn is a JIT (native code per translated block) running one tile at a time; the "
        "model only overtakes it when enough tiles share each numpy operation.",
    ]
    return sec


def plot(sec: Section, outdir) -> list[str]:
    """Log-log plot of tile-instructions/s vs tiles for the three engines."""
    import matplotlib.pyplot as plt
    rows = sec.rows
    fig, ax = plt.subplots(figsize=(5.5, 3.4), dpi=90)
    x = [r["tiles"] for r in rows]
    for key, label in (("model", "golden model (vectorized)"), ("unicorn", "unicorn, tile by tile"),
                       ("scalar", "scalar Python interpreter")):
        ax.plot(x, [r[key] for r in rows], "o-", label=label)
    ax.axhline(5e6, color="gray", ls="--", lw=0.8, label="goal 5 M at 1216 tiles")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tiles (6 contexts each)")
    ax.set_ylabel("tile-instructions / s")
    ax.set_title("Golden model speed vs tiles", fontsize=9)
    ax.legend(fontsize=7)
    return [save_figure(fig, outdir, "bench_model.png")]
