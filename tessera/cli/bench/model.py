"""Golden-model speed: tile-instructions/s vs tiles, against the vectorized engine,
a scalar interpreter, unicorn and Verilator; the demo on the model; peak memory at gc2_like.

The engines run the **same RV32IM program** (:func:`rv32im_program`: an 8-instruction loop of
MUL/ADD/XOR/SHIFT/BRANCH per context, ``iters`` times, then ``ecall``) in the same run:

* the golden model's fast engine (``tessera.golden_model.Array``, default ``engine="fast"``), all
  N tiles × T contexts;
* its vectorized numpy engine (``engine="vector"``, the earlier implementation), on a
  shorter run of the same loop, whose run-result JSON must equal the fast engine's;
* Verilator (the RTL, ``tessera.cli.bench.rtl.build``) at N = 1, 4, 16, 64 on the same program,
  whose run-result JSON must equal the model's;
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

import time

import numpy as np

from tessera.toolchain import asm
from tessera.spec.config import ArrayConfig
from tessera.spec.csr import Csr

from .common import BenchError, Goal, Section, Timer, save_figure

__all__ = ["program", "divergent_program", "rv32im_program", "time_model", "time_scalar",
           "time_unicorn", "time_verilator", "time_demo", "peak_memory", "run", "plot"]

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


def time_model(cfg: ArrayConfig, words: list[int], engine: str | None = None, repeat: int = 1):
    """Run ``words`` SPMD on the golden model to completion (best of ``repeat`` runs).

    Parameters
    ----------
    engine : {None, "fast", "vector"}
        ``tessera.golden_model.Array(engine=...)``; None = the default (fast).

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
    best = None
    for _ in range(repeat):
        arr = Array(cfg, engine=engine)
        arr.write_mem(None, 0, asm.program(words))
        c0 = time.process_time()
        with Timer() as t:
            res = arr.run(10 ** 12)
        cpu = time.process_time() - c0
        if res.status != "halted":
            raise BenchError(f"golden model run ended {res.status}, expected halted")
        if best is None or t.s < best[0]:
            best = (t.s, arr, res, cpu)
    secs, arr, res, cpu = best
    n = int(arr.counters["retired"].sum())
    arr.last_result = res
    arr.last_cpu_s = cpu
    return n / secs, secs, n, arr


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


def time_verilator(n: int, words: list[int], *, build: bool = True):
    """Run ``words`` SPMD on the Verilator model of ``n`` tiles (``tessera.cli.bench.rtl``).

    Returns
    -------
    dict or None
        ``wait_s`` (simulation only: cocotb sleeps on ``done``), ``cycles``, ``retired``,
        ``result`` (run-result JSON), ``build_s``; None if ``build`` is False and no build
        of the current sources is cached.

    Raises
    ------
    BenchError
        Build or run failed, or the run did not halt.
    """
    from . import rtl
    cfg = rtl.bench_config(n)
    if not build:
        from tessera.tb.runner import array_build_cached
        with rtl._build_dir(rtl.bench_cache()):
            if not array_build_cached(cfg):
                return None
    model, bsecs = rtl.build(cfg)
    code = asm.program(words).hex()
    job = {"name": "model-vs-rtl", "segments": [[t, 0, code] for t in range(n)],
           "max_cycles": 10 ** 9}
    (res,) = model.run({"jobs": [job]})["jobs"]
    if res["error"]:
        raise BenchError(f"RTL run on {n} tiles failed:\n{res['error']}")
    r = res["result"]
    if r["status"] != "halted":
        raise BenchError(f"RTL run on {n} tiles ended {r['status']}, expected halted")
    retired = sum(t["counters"]["retired"] for t in r["tiles"])
    return dict(wait_s=res["wait_s"], cycles=r["cycles"], retired=retired, result=r,
                build_s=bsecs)


def time_demo(engine: str, images: int = 450) -> dict:
    """Wall time of ``tessera demo --backend model`` (a subprocess, as a user runs it).

    Parameters
    ----------
    engine : {"fast", "vector"}
        Golden-model engine (``$TESSERA_MODEL_ENGINE``).
    images : int

    Raises
    ------
    BenchError
        The demo failed or its int8 logits did not match the reference.
    """
    import json
    import os
    import subprocess
    import sys
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "demo.json")
        cmd = [sys.executable, "-m", "tessera.cli", "demo", "--model", "mlp", "--backend",
               "model", "--no-progress",
               "--images", str(images), "--json", out]
        env = dict(os.environ, TESSERA_MODEL_ENGINE=engine)
        with Timer() as t:
            p = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if p.returncode != 0:
            raise BenchError(f"demo on the model ({engine}) failed (exit {p.returncode}):\n"
                             f"{(p.stderr or p.stdout)[-2000:]}")
        with open(out) as fh:
            rep = json.load(fh)
    if rep.get("match") is not True or rep.get("images") != images:
        raise BenchError(f"demo on the model ({engine}): match {rep.get('match')}, "
                         f"images {rep.get('images')}")
    return dict(seconds=t.s, cycles_per_image=rep.get("cycles_per_image"),
                accuracy=rep.get("accuracy_backend"))


_PEAK_SCRIPT = r"""
import json, resource, sys, time


def hwm_kib():
    # VmHWM belongs to this process image (reset by exec); ru_maxrss may carry the parent's
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


from tessera.golden_model import Array
from tessera.toolchain import asm
from tessera.spec.config import preset
from tessera.cli.bench.model import rv32im_program
base = hwm_kib()
cfg = preset("gc2_like")
arr = Array(cfg, engine=sys.argv[1])
arr.write_mem(None, 0, asm.program(rv32im_program(int(sys.argv[2]))))
t0 = time.perf_counter()
res = arr.run(10 ** 9)
secs = time.perf_counter() - t0
js = res.to_json()
print(json.dumps({"status": js["status"], "base_kib": base, "seconds": secs,
                  "peak_kib": hwm_kib(),
                  "retired": int(arr.counters["retired"].sum()),
                  "tiles": cfg.tiles, "sram_bytes": cfg.sram_bytes}))
"""


def peak_memory(engine: str = "fast", iters: int = 100) -> dict:
    """Peak resident memory of a process that runs the RV32IM loop on ``gc2_like`` (1216
    tiles × 6 contexts × 256 KiB) and builds its RunResult JSON (``VmHWM`` of
    ``/proc/self/status``; ``ru_maxrss`` elsewhere).

    Returns
    -------
    dict
        ``peak_kib``, ``base_kib`` (after imports), ``seconds`` (the run), ``retired``,
        ``sram_mib``.

    Raises
    ------
    BenchError
        The subprocess failed or the run did not halt.
    """
    import json
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT, engine, str(iters)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise BenchError(f"peak-memory run failed:\n{(p.stderr or p.stdout)[-2000:]}")
    d = json.loads(p.stdout.strip().splitlines()[-1])
    if d["status"] != "halted":
        raise BenchError(f"peak-memory run ended {d['status']}")
    d["sram_mib"] = d["tiles"] * d["sram_bytes"] / 2 ** 20
    return d


def run(quick: bool = True) -> Section:
    """Sweep N = 1, 4, 16, 64, 256, 1216 tiles (6 contexts): fast engine, vectorized engine,
    scalar interpreter, unicorn; Verilator at N ≤ 64; the demo; peak memory at gc2_like.

    Parameters
    ----------
    quick : bool
        Shorter runs; the 64-tile Verilator model is used only if its build is cached (a
        cold build takes about 7 minutes).

    Returns
    -------
    Section
        Rows per N; goals of the fast model (and the earlier 5 M goal); extra tables in
        ``data["tables"]``.
    """
    from tessera.golden_model import Array
    sizes = (1, 4, 16, 64, 256, 1216)
    iters = 60 if quick else 200                  # vectorized engine / scalar / cross-check
    fast_total = 20_000_000 if quick else 60_000_000   # tile-instructions per fast-engine run
    words = rv32im_program(iters)
    sec = Section("model", "Golden model speed",
                  "tessera bench --only model" + (" --quick" if quick else ""))
    sec.columns = [("tiles", "tiles"), ("model", "fast engine tile-instr/s"),
                   ("model_cpu", "fast engine, per CPU-second"),
                   ("model_short", "fast engine, short program"),
                   ("vector", "vectorized engine, short program"),
                   ("vs_vector", "fast / vectorized"),
                   ("scalar", "scalar interp. tile-instr/s"),
                   ("unicorn", "unicorn, short program"),
                   ("vs_scalar", "model / scalar"), ("vs_unicorn", "model / unicorn"),
                   ("verilator", "Verilator tile-instr/s"), ("vs_verilator", "model / Verilator"),
                   ("model_s", "fast engine wall (s)")]
    vrows = []
    with Timer() as tt:
        for n in sizes:
            cfg = _cfg(n)
            fiters = max(iters, fast_total // (8 * cfg.contexts * n))
            fwords = rv32im_program(fiters)
            rate, secs, ninsn, arr = time_model(cfg, fwords, repeat=3)
            cpu_rate = ninsn / max(arr.last_cpu_s, 1e-9)
            vrate, _, _, varr = time_model(cfg, words, engine="vector")
            srate_f, _, _, farr = time_model(cfg, words, engine="fast", repeat=3)
            if farr.last_result.to_json() != varr.last_result.to_json():
                raise BenchError(f"fast and vectorized engines disagree on {n} tiles")
            per_context = iters * 8 + 4
            # scalar: a prefix of about 60k tile-instructions (≥ 2 loop iterations per context)
            cyc = max(2 * 8 * cfg.contexts + 24, min(per_context * cfg.contexts, 60_000 // n))
            srate, _, _, sc = time_scalar(cfg, words, cyc)
            chk = Array(cfg)
            chk.write_mem(None, 0, asm.program(words))
            chk.run(cyc)
            if not np.array_equal(chk.regs, sc.regs_array()):
                raise BenchError(f"scalar interpreter and model disagree after {cyc} cycles "
                                 f"on {n} tiles")
            # unicorn: the short program, 16 tiles (or N) tile by tile,
            # one emu_start per context; compared with the fast engine on the same program
            ut = min(n, 16)
            _, usecs, _, uregs = time_unicorn(cfg, words, ut)
            urate = ut * cfg.contexts * (per_context - 3) / usecs  # 2 csrr emulated, no ecall
            for r in RESULT_REGS:
                if not np.array_equal(np.asarray(farr.regs)[:ut, :, r], uregs[:, :, r]):
                    raise BenchError(f"unicorn and the model disagree on x{r} ({n} tiles)")
            row = dict(tiles=n, model=rate, model_cpu=cpu_rate, vector=vrate,
                       vs_vector=srate_f / vrate, scalar=srate, unicorn=urate,
                       model_short=srate_f, vs_scalar=rate / srate, vs_unicorn=srate_f / urate,
                       verilator=None, vs_verilator=None, model_s=secs, insns=ninsn)
            if n == 1:
                # unicorn free-running the fast engine's long program on one tile
                _, lsecs, _, lregs = time_unicorn(cfg, fwords, 1)
                for r in RESULT_REGS:
                    if not np.array_equal(np.asarray(arr.regs)[:1, :, r], lregs[:, :, r]):
                        raise BenchError(f"unicorn and the model disagree on x{r} (long run)")
                sec.data["unicorn_long"] = dict(
                    iters=fiters, rate=cfg.contexts * (fiters * 8 + 4 - 3) / lsecs,
                    model_rate=rate)
            if n <= 64:
                viters = {1: 8000, 4: 4000, 16: 1500, 64: 300}[n] * (1 if quick else 2)
                vw = rv32im_program(viters)
                v = time_verilator(n, vw, build=not (quick and n >= 64))
                if v is None:
                    vrows.append(dict(tiles=n, program=f"rv32im_program({viters})", cycles=None,
                                      verilator_s=None, model_s=None, ratio=None,
                                      note="not measured: no cached 64-tile build (--quick)"))
                else:
                    mrate, msecs, _, marr = time_model(cfg, vw, repeat=3)
                    mj = marr.last_result.to_json()
                    rj = dict(v["result"], config=mj["config"])
                    if mj != rj:
                        from tessera.tb.parity import compare_results
                        diffs = compare_results(mj, rj)
                        raise BenchError(f"model and RTL disagree on {n} tiles: {diffs[:5]}")
                    vrate_rtl = v["retired"] / v["wait_s"]
                    row.update(verilator=vrate_rtl, vs_verilator=mrate / vrate_rtl)
                    vrows.append(dict(tiles=n, program=f"rv32im_program({viters})",
                                      cycles=v["cycles"], verilator_s=v["wait_s"],
                                      model_s=msecs, ratio=v["wait_s"] / msecs,
                                      note="" if v["build_s"] < 5 else
                                      f"Verilator model built in {v['build_s']:.0f} s"))
            sec.rows.append(row)
        # the dot4 loop of scripts/bench_model.py at the largest size, for continuity
        n = sizes[-1]
        big_iters = max(iters, fast_total // (8 * 6 * n))
        drate, dsecs, dn, _ = time_model(_cfg(n), program(big_iters), repeat=3)
        xrate, xsecs, xn, _ = time_model(_cfg(n), divergent_program(big_iters), repeat=3)
        sec.data["dot4_loop"] = dict(tiles=n, rate=drate, insns=dn, seconds=dsecs)
        sec.data["divergent_loop"] = dict(tiles=n, rate=xrate, insns=xn, seconds=xsecs)
        demo_fast = min((time_demo("fast"), time_demo("fast")), key=lambda d: d["seconds"])
        demo_vec = time_demo("vector")
        peak = peak_memory("fast")
        peak_vec = None if quick else peak_memory("vector", 20)
    sec.seconds = tt.s
    sec.data["tables"] = [
        dict(title="Model vs Verilator on the same program (6 contexts, 64 KiB; the RTL's "
                   "run-result JSON equals the model's):",
             columns=[("tiles", "tiles"), ("program", "program"), ("cycles", "cycles"),
                      ("verilator_s", "Verilator wait (s)"), ("model_s", "model run (s)"),
                      ("ratio", "model / Verilator speed"), ("note", "note")],
             rows=vrows),
        dict(title="`tessera demo --backend model` (450 images) and peak memory:",
             columns=[("what", "what"), ("fast", "fast engine"),
                      ("vector", "vectorized engine")],
             rows=[dict(what="demo wall time (s, incl. Python start-up)",
                        fast=demo_fast["seconds"], vector=demo_vec["seconds"]),
                   dict(what="gc2_like (1216 × 256 KiB) peak RSS (MiB)",
                        fast=peak["peak_kib"] / 1024,
                        vector=None if peak_vec is None else peak_vec["peak_kib"] / 1024),
                   dict(what="gc2_like: SRAM alone (MiB)", fast=peak["sram_mib"],
                        vector=peak["sram_mib"])]),
    ]
    sec.data.update(verilator=vrows, demo=dict(fast=demo_fast, vector=demo_vec),
                    peak=dict(fast=peak, vector=peak_vec))
    big, one = sec.rows[-1], sec.rows[0]
    measured_v = [r for r in sec.rows if r["vs_verilator"] is not None]
    met_v = bool(measured_v) and all(r["vs_verilator"] >= 10 for r in measured_v)
    sec.goals.append(Goal(
        "model ≥ 10× Verilator on the same program at N = 1, 4, 16, 64 (goal 50×)",
        ", ".join(f"N={r['tiles']}: {r['vs_verilator']:.0f}×" for r in measured_v)
        + ("" if len(measured_v) == 4 else "; 64 tiles not measured (no cached build)"),
        met_v if (len(measured_v) == 4 or not met_v) else None))
    sec.goals.append(Goal("≥ 100 M tile-instr/s at 1216 tiles (goal 500 M)",
                          f"{big['model'] / 1e6:.0f} M wall-clock, {big['model_cpu'] / 1e6:.0f} M "
                          f"per CPU-second (RV32IM loop); {drate / 1e6:.0f} M (dot4 loop), "
                          f"{xrate / 1e6:.0f} M (divergent odd/even tiles) wall-clock",
                          min(big["model"], drate) >= 100e6,
                          "The compiled loop runs every tile on one thread, and the wall-clock "
                          "rate is what is left of one core of this shared machine (see the "
                          "load average above and the per-CPU-second column)."))
    ul = sec.data["unicorn_long"]
    sec.goals.append(Goal("1 tile: model ≥ 1× unicorn (goal 5×)",
                          f"{one['vs_unicorn']:.1f}× on the short program ({one['model_short'] / 1e6:.0f} M vs "
                          f"{one['unicorn'] / 1e6:.1f} M tile-instr/s, unicorn started once per "
                          f"context); on the long program unicorn's JIT free-runs at "
                          f"{ul['rate'] / 1e6:.0f} M vs the model's {ul['model_rate'] / 1e6:.0f} M",
                          one["vs_unicorn"] >= 1))
    sec.goals.append(Goal("`tessera demo --backend model`, 450 images ≤ 2 s (goal 0.5 s)",
                          f"{demo_fast['seconds']:.2f} s (vectorized engine: "
                          f"{demo_vec['seconds']:.1f} s)", demo_fast["seconds"] <= 2))
    sec.goals.append(Goal("peak memory at 1216 tiles × 256 KiB",
                          f"{peak['peak_kib'] / 1024:.0f} MiB peak RSS (SRAM alone "
                          f"{peak['sram_mib']:.0f} MiB)", None))
    sec.goals.append(Goal("`make test` wall time on a clean clone (goal ≤ 2 min)",
                          "not measured", None))
    sec.goals.append(Goal("golden model ≥ 5 M tile-instr/s at 1216 tiles",
                          f"{big['model'] / 1e6:.1f} M (RV32IM loop), {drate / 1e6:.1f} M "
                          f"(dot4 loop), {xrate / 1e6:.1f} M (divergent odd/even tiles)",
                          min(big["model"], drate) >= 5e6))
    sec.notes += [
        "Program: `tessera.cli.bench.model.rv32im_program(iters)` — 8-instruction RV32IM loop "
        "(MUL, ADDI, XOR, ADD, SLLI, SUB, ADDI, BNE) per context, 6 contexts per tile, 64 KiB "
        f"SRAM. The fast engine runs about {fast_total / 1e6:.0f} M tile-instructions per size "
        "(best of 3 up to 64 tiles); the vectorized engine (`engine=\"vector\"`, the model "
        f"before the fast engine) runs `rv32im_program({iters})`, whose run-result JSON must equal the "
        "fast engine's (the fast engine's rate on that short program, which includes the "
        "per-run overhead of `Array.run`, is the 'short program' column). unicorn runs the "
        "short program as in the earlier benchmark (16 tiles or N, tile by tile, one `emu_start` per "
        "context, translation cached) and, at 1 tile, also the long program in one "
        "`emu_start` per context (`data.unicorn_long`): QEMU's TCG JIT then runs this "
        "register-only loop at native-code speed, which no interpreter matches. Registers "
        "are checked equal to the model's in both. The scalar interpreter runs a prefix of "
        "about 60 k tile-instructions. 'per CPU-second' divides by the process CPU time of "
        "the run (the wall-clock figure on an idle core).",
        "Model vs Verilator: the same halting program on both (RTL built by "
        "`tessera.cli.bench.rtl.build`; cocotb sleeps on `done` and the Verilator time is that "
        "wait; the model time is `Array.run`, best of 3); the RTL's run-result JSON must equal "
        "the model's. In --quick the 64-tile model is used only if its build is cached (a "
        "cold 64-tile build takes about 7 minutes; the full run builds it).",
        "The demo is timed as a subprocess (`python -m tessera.cli demo --backend model`, 450 "
        "images, best of 2 for the fast engine), so the figure includes Python start-up and "
        "imports; its JSON must report `match: true`. Peak memory: the high-water mark "
        "(VmHWM) of a subprocess that runs the RV32IM loop on `gc2_like` and builds the RunResult JSON. "
        "`make test` is not timed by the benchmark (see docs/performance.md).",
        f"At {n} tiles the dot4/dot4su loop of `scripts/bench_model.py` ran at "
        f"{drate / 1e6:.1f} M tile-instr/s and its divergent variant (odd/even tiles run "
        f"different code) at {xrate / 1e6:.1f} M.",
    ]
    return sec


def plot(sec: Section, outdir) -> list[str]:
    """Log-log plot of tile-instructions/s vs tiles for every engine."""
    import matplotlib.pyplot as plt
    rows = sec.rows
    fig, ax = plt.subplots(figsize=(5.5, 3.4), dpi=90)
    for key, label in (("model", "golden model, fast engine"),
                       ("vector", "golden model, vectorized engine"),
                       ("unicorn", "unicorn, one tile"),
                       ("verilator", "Verilator (RTL)"),
                       ("scalar", "scalar Python interpreter")):
        pts = [(r["tiles"], r[key]) for r in rows if r.get(key)]
        if pts:
            ax.plot(*zip(*pts), "o-", label=label)
    ax.axhline(100e6, color="gray", ls="--", lw=0.8, label="bar 100 M at 1216 tiles")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("tiles (6 contexts each)")
    ax.set_ylabel("tile-instructions / s")
    ax.set_title("Golden model speed vs tiles", fontsize=9)
    ax.legend(fontsize=6)
    return [save_figure(fig, outdir, "bench_model.png")]
