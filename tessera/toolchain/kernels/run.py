"""``tessera run KERNEL``: build a kernel graph, run it, compare with the numpy reference and
report cycles, phase cycles and MAC utilisation (docs/compiler.md, "Kernel library";
docs/performance.md, "Kernels").

Report keys (also written as JSON): ``match``, ``cycles``, ``phase_cycles`` {compute, sync,
exchange} — for each phase the **maximum over tiles** of that tile's counter (the slowest
tile; tiles run in lock-step between barriers, so this is the phase's share of the critical
path) — ``macs`` (sum of the tiles' ``macs`` counters), ``peak_macs_per_cycle_per_tile``
(``config.peak_macs_per_cycle``: the matrix engine's P, or 4 for one dot4 per cycle without
one), ``mac_utilization`` = macs / (cycles · peak · tiles), ``compute_utilization`` = macs /
(phase_cycles.compute · peak · tiles), ``engine_cycles`` (max over tiles of the ``engine``
counter), ``matrix_engine`` (whether the kernel ran on the engine),
``exchange_cycles`` (sum over the exchange phases of the scheduled program length),
``exchange_bound`` (sum of the scheduler's lower bounds, max over tiles of max(words sent,
words received) + L + 1 per phase) and ``exchange_bound_met``.
"""

from __future__ import annotations

import json
import time

import numpy as np

from tessera.golden_model import kernels as ref
from tessera.spec.config import ArrayConfig
from tessera.output import write_output
from tessera.toolchain.graph import Engine, GraphError, compile_graph, map_linearly
from tessera.toolchain.graph.graph import Graph
from tessera.toolchain.run import UsageError

from .block_sparse import block_sparse_matmul
from .conv2d import (conv2d_block_sparse, conv2d_dense, conv2d_nhwc, conv_patches,
                     depthwise_as_dense, pad_input)
from .matmul import matmul
from .pool import avgpool2d, global_avgpool, maxpool2d
from .requantize import requantize

__all__ = ["KERNELS", "run_kernel", "format_report", "EXIT_OK", "EXIT_USAGE", "EXIT_MISMATCH"]

KERNELS = ("matmul", "conv2d", "block_sparse_matmul", "block_sparse_conv2d", "requantize",
           "maxpool2d", "avgpool2d", "global_avgpool")
POOLS = {"maxpool2d": (maxpool2d, ref.maxpool2d), "avgpool2d": (avgpool2d, ref.avgpool2d)}
EXIT_OK, EXIT_USAGE, EXIT_MISMATCH = 0, 2, 3
MACS_PER_CYCLE = 4


def _mask(rng, kb: int, nb: int, sparsity: float) -> np.ndarray:
    """Exactly round((1 - sparsity) · kb · nb) kept blocks (at least 1), random positions."""
    keep = max(1, int(round((1.0 - sparsity) * kb * nb)))
    flat = np.zeros(kb * nb, dtype=bool)
    flat[rng.choice(kb * nb, size=keep, replace=False)] = True
    return flat.reshape(kb, nb)


def _check(cond, msg):
    if not cond:
        raise UsageError(msg)


def _build(kernel, cfg, rng, p):
    """Graph, program, host inputs {name: array}, output variable, expected output, MACs."""
    g = Graph(cfg)
    bs, sp = p["block_size"], p["sparsity"]
    if kernel == "matmul":
        m, k, n = p["m"], p["k"], p["n"]
        _check(k % 4 == 0, f"matmul: K = {k} must be a multiple of 4 (dot4 words)")
        A = rng.integers(-128, 128, (m, k), dtype=np.int8)
        B = rng.integers(-128, 128, (k, n), dtype=np.int8)
        a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
        bt = g.add_variable("b_t", (n, k), "int8", map_linearly(grain=k))
        c, prog = matmul(g, a, bt, b_layout="nk", name="mm")
        return g, prog, {"a": A, "b_t": np.ascontiguousarray(B.T)}, c, ref.matmul(A, B), m * n * k
    if kernel == "block_sparse_matmul":
        m, k, n = p["m"], p["k"], p["n"]
        _check(k % bs == 0 and n % bs == 0,
               f"block_sparse_matmul: K = {k} and N = {n} must be multiples of --block-size {bs}")
        A = rng.integers(-128, 128, (m, k), dtype=np.int8)
        W = rng.integers(-128, 128, (k, n), dtype=np.int8)
        w = ref.BlockSparseMatrix.from_dense(W, bs, mask=_mask(rng, k // bs, n // bs, sp))
        a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
        c, prog = block_sparse_matmul(g, a, w, name="bsmm")
        return g, prog, {"a": A}, c, ref.block_sparse_matmul(A, w), m * w.nnzb * bs * bs
    if kernel == "requantize":
        m, n, zp = p["m"], p["n"], p["zero_point"]
        A = rng.integers(-2**24, 2**24, (m, n)).astype(np.int32)
        mult = rng.integers(2**30, 2**31, n)              # per-channel, as quantize_multiplier
        shift = rng.integers(-20, 2, n)
        bias = rng.integers(-5000, 5000, n)
        acc = g.add_variable("acc", (m, n), "int32", map_linearly(grain=n))
        out = g.add_variable("out", (m, n), "int8", map_linearly(grain=n))
        prog = requantize(g, acc, out, mult, shift, zp, relu=p["relu"], bias=bias, name="rq")
        want = ref.requantize(A, mult, shift, zp, relu=p["relu"], bias=bias)
        return g, prog, {"acc": A}, out, want, 0
    nb_, h, wd, cin, cout = p["batch"], p["height"], p["width"], p["cin"], p["cout"]
    ks, st, pad, zp = p["kernel_size"], p["stride"], p["padding"], p["zero_point"]
    X = rng.integers(-128, 128, (nb_, h, wd, cin), dtype=np.int8)
    if kernel in POOLS or kernel == "global_avgpool":
        # pool window = --kernel-size, --stride, --padding; input x mapped in whole rows
        x = g.add_variable("x", X.shape, "int8", map_linearly(grain=wd * cin))
        try:
            if kernel == "global_avgpool":
                want = ref.global_avgpool(X, keepdims=True)
                y, prog = global_avgpool(g, x, name="pool")
            else:
                build, reference = POOLS[kernel]
                want = reference(X, ks, stride=st, padding=pad)
                y, prog = build(g, x, ks, stride=st, padding=pad, name="pool")
        except (TypeError, ValueError) as e:
            raise UsageError(str(e)) from None
        return g, prog, {"x": X}, y, want, 0
    # convolutions
    depthwise = kernel == "conv2d" and p["depthwise"]
    if kernel == "conv2d" and not depthwise and cfg.engine_macs > 0 and cout % 2 == 0:
        # the matrix engine: padded NHWC input (host pad_input), no im2col (§12)
        Wt = rng.integers(-128, 128, (ks, ks, cin, cout), dtype=np.int8)
        try:
            want = ref.conv2d(X, Wt, stride=st, padding=pad, input_zero_point=zp)
            XP = pad_input(X, ks, st, pad, zp)
        except (TypeError, ValueError) as e:
            raise UsageError(str(e)) from None
        xp = g.add_variable("xp", XP.shape, "int8",
                            map_linearly(grain=int(np.prod(XP.shape[1:]))))
        c, prog = conv2d_nhwc(g, xp, Wt, X.shape, stride=st, padding=pad, input_zero_point=zp,
                              name="conv")
        macs = want.shape[0] * want.shape[1] * want.shape[2] * ks * ks * XP.shape[3] * cout
        return g, prog, {"xp": XP}, c, want, macs
    if kernel == "conv2d" and not depthwise:
        Wt = rng.integers(-128, 128, (ks, ks, cin, cout), dtype=np.int8)
        try:
            want = ref.conv2d(X, Wt, stride=st, padding=pad, input_zero_point=zp)
            cols = conv_patches(X, ks, st, pad, zp, 4)
        except (TypeError, ValueError) as e:
            raise UsageError(str(e)) from None
        a = g.add_variable("patches", cols.shape, "int8", map_linearly(grain=cols.shape[1]))
        c, prog = conv2d_dense(g, a, Wt, zp, name="conv")
        macs = cols.shape[0] * cols.shape[1] * cout
        return g, prog, {"patches": cols}, c, want.reshape(-1, cout), macs
    # depthwise (block-diagonal, block size 4) or block-sparse conv
    if depthwise:
        mult = p["depth_multiplier"]
        Wd = rng.integers(-128, 128, (ks, ks, cin, mult), dtype=np.int8)
        try:
            want = ref.conv2d(X, Wd, stride=st, padding=pad, input_zero_point=zp, depthwise=True)
        except (TypeError, ValueError) as e:
            raise UsageError(str(e)) from None
        bs = 4
        dense = depthwise_as_dense(Wd)
        cout = cin * mult
        _check(cout % 4 == 0, f"conv2d --depthwise: Cin·mult = {cout} must be a multiple of 4")
        w2 = dense.reshape(-1, cout)
    else:
        _check(cout % bs == 0, f"block_sparse_conv2d: --cout {cout} must be a multiple of "
                               f"--block-size {bs}")
        w2 = rng.integers(-128, 128, (ks * ks * cin, cout), dtype=np.int8)
    try:
        cols = conv_patches(X, ks, st, pad, zp, bs)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from None
    kp = cols.shape[1]
    wp = np.zeros((kp, cout), dtype=np.int8)
    wp[:w2.shape[0]] = w2
    if depthwise:
        w = ref.BlockSparseMatrix.from_dense(wp, bs)          # lossless: nonzero blocks only
    else:
        w = ref.BlockSparseMatrix.from_dense(wp, bs, mask=_mask(rng, kp // bs, cout // bs, sp))
        want = ref.block_sparse_conv2d(X, ref.BlockSparseMatrix.from_dense(
            w.to_dense()[:w2.shape[0]], bs), ks, stride=st, padding=pad, input_zero_point=zp)
    a = g.add_variable("patches", cols.shape, "int8", map_linearly(grain=kp))
    c, prog = conv2d_block_sparse(g, a, w, zp, name="conv")
    return (g, prog, {"patches": cols}, c, want.reshape(-1, cout),
            cols.shape[0] * w.nnzb * bs * bs)


def _report(result, compiled, macs_expected, got, want):
    cfg = result.config
    ctr = [t.counters for t in result.tiles]
    phase = {k: max(int(c[k]) for c in ctr) for k in ("compute", "sync", "exchange")}
    macs = sum(int(c["macs"]) for c in ctr)
    per_tile = cfg.peak_macs_per_cycle
    peak = per_tile * cfg.tiles
    ex = compiled.exchanges
    status = str(getattr(result.status, "value", result.status))
    finished = status == "halted"
    return {
        # a run that timed out or faulted left no output to compare: never a "match"
        "match": bool(finished and np.array_equal(got, want)),
        "compared": finished,
        "status": status,
        "cycles": int(result.cycles),
        "phase_cycles": phase,
        "macs": macs,
        "macs_expected": int(macs_expected),
        "peak_macs_per_cycle_per_tile": per_tile,
        "engine_cycles": max(int(c.get("engine", 0)) for c in ctr),
        "matrix_engine": any(getattr(v, "engine_commands", None) is not None
                             for v, _ in compiled.tensors.values()),
        "mac_utilization": macs / (result.cycles * peak) if result.cycles else 0.0,
        "compute_utilization": macs / (phase["compute"] * peak) if phase["compute"] else 0.0,
        "exchange_cycles": int(sum(e["cycles"] for e in ex)),
        "exchange_bound": int(sum(e["cycle_bound"] for e in ex)),
        "exchange_bound_met": all(bool(e["bound_met"]) for e in ex),
        "exchange_phases": len(ex),
    }


def run_kernel(kernel: str, config: ArrayConfig, *, backend: str = "model", seed: int = 0,
               m: int = 32, k: int = 32, n: int = 32, sparsity: float = 0.5,
               block_size: int = 4, batch: int = 1, height: int = 8, width: int = 8,
               cin: int = 4, cout: int = 8, kernel_size: int = 3, stride: int = 1,
               padding="same", zero_point: int = 0, depthwise: bool = False,
               depth_multiplier: int = 1, relu: bool = False, max_cycles: int = 50_000_000,
               json_out=None,
               profile_dir=None) -> dict:
    """Compile, run and check one kernel; return the report dict (see the module docstring).

    Parameters
    ----------
    kernel : str
        One of :data:`KERNELS`.
    config : ArrayConfig
    backend : {"model", "rtl", "both"}
        ``both`` runs the model and the RTL; ``match`` then also requires identical cycles
        and counters; per-backend reports are under ``backends``.
    seed : int
        Seed of the random int8 inputs (and of the sparsity mask).
    m, k, n : int
        Matmul shapes ``[M, K] x [K, N]``.
    sparsity : float in [0, 1)
        Fraction of weight blocks dropped (block-sparse kernels).
    block_size : {4, 8, 16}
    batch, height, width, cin, cout, kernel_size, stride, padding, zero_point, depthwise,
    depth_multiplier
        Convolution parameters (NHWC input, square kernel, TensorFlow padding). The pools
        (``maxpool2d``, ``avgpool2d``) use ``kernel_size`` as the square window, ``stride``
        and ``padding``; ``global_avgpool`` averages each [height, width] image.
    relu : bool
        ``requantize``: fused ReLU (``m``, ``n`` give the int32 accumulator shape
        ``[M, N]``, ``zero_point`` the output zero point; per-channel random parameters).
    max_cycles : int
    json_out : path or "-" or None
        Where to write the report as JSON.
    profile_dir : path or None
        Also write the PopVision-style profile of the first backend's run
        (``profile.png``/``.html``/``.json``, :mod:`tessera.toolchain.profile`) into this directory.

    Returns
    -------
    dict

    Raises
    ------
    UsageError
        Bad kernel name or shapes, sparsity outside [0, 1), bad block size, out of memory
        (the compiler's message), unavailable backend.
    """
    if kernel not in KERNELS:
        raise UsageError(f"unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    for nm, v in (("m", m), ("k", k), ("n", n), ("batch", batch), ("height", height),
                  ("width", width), ("cin", cin), ("cout", cout), ("kernel-size", kernel_size),
                  ("stride", stride), ("depth-multiplier", depth_multiplier)):
        _check(isinstance(v, int) and v >= 1, f"--{nm} must be a positive integer, not {v!r}")
    _check(0.0 <= sparsity < 1.0, f"--sparsity must be in [0, 1), not {sparsity}")
    _check(block_size in ref.BLOCK_SIZES,
           f"--block-size must be one of {ref.BLOCK_SIZES}, not {block_size}")
    _check(-128 <= zero_point <= 127, f"--zero-point must be in -128..127, not {zero_point}")
    if isinstance(padding, str) and padding.isdigit():
        padding = int(padding)
    backends = ("model", "rtl") if backend == "both" else (backend,)
    rng = np.random.default_rng(seed)
    p = dict(m=m, k=k, n=n, sparsity=sparsity, block_size=block_size, batch=batch,
             height=height, width=width, cin=cin, cout=cout, kernel_size=kernel_size,
             stride=stride, padding=padding, zero_point=zero_point, depthwise=depthwise,
             depth_multiplier=depth_multiplier, relu=bool(relu))
    t0 = time.perf_counter()
    try:
        g, prog, inputs, out, want, macs = _build(kernel, config, rng, p)
        prof_var = None
        if profile_dir is not None:   # superstep marks recorded by the runtime
            w = 1 + 2 * 64
            prof_var = g.add_variable("run.profile", (config.tiles, w), "int32",
                                      [(t, t * w, (t + 1) * w) for t in range(config.tiles)])
        compiled = compile_graph(g, prog, profile=prof_var)
    except GraphError as e:
        raise UsageError(f"{kernel}: {e}") from None
    t_compile = time.perf_counter() - t0
    reports = {}
    for be in backends:
        try:
            eng = Engine(compiled, backend=be)
        except NotImplementedError as e:
            raise UsageError(str(e)) from None
        for name, arr in inputs.items():
            eng.write_tensor(name, arr)
        t1 = time.perf_counter()
        result = eng.run(max_cycles, check=False)
        rep = _report(result, compiled, macs, eng.read_tensor(out.name), want)
        problem = eng.diagnose(max_cycles)
        if problem is not None:          # fault / timeout: where it stopped, at source level
            rep["error"] = str(problem)
        rep["run_seconds"] = round(time.perf_counter() - t1, 3)
        rep["result_json"] = result.to_json()
        reports[be] = rep
        if prof_var is not None and be == backends[0]:
            from tessera.toolchain.profile import build_profile, write_profile
            paths = write_profile(build_profile(
                compiled, result, eng.read_tensor(prof_var.name),
                title=f"tessera run {kernel} - {config.tiles} tiles, {be} backend"), profile_dir)
            rep["profile"] = {key: str(v) for key, v in paths.items()}
    first = reports[backends[0]]
    report = {"kernel": kernel, "backend": backend, "config": config.name if hasattr(
        config, "name") else str(config), "tiles": config.tiles, "contexts": config.contexts,
        "params": {key: v for key, v in p.items()}, "seed": seed,
        **{key: v for key, v in first.items() if key != "result_json"},
        "compile_seconds": round(t_compile, 3)}
    if len(backends) > 1:
        same = reports["model"]["result_json"] == reports["rtl"]["result_json"]
        report["backends_agree"] = same
        report["match"] = all(r["match"] for r in reports.values()) and same
        report["backends"] = {b: {key: v for key, v in r.items() if key != "result_json"}
                              for b, r in reports.items()}
    if json_out is not None:
        write_output(json_out, json.dumps(report, indent=2, default=str), error=UsageError)
    return report


def format_report(r: dict) -> str:
    """A few human-readable lines of a :func:`run_kernel` report."""
    ph = r["phase_cycles"]
    status = r["status"]
    head = f"{r['kernel']} on {r['tiles']} tiles x {r['contexts']} contexts ({r['backend']}): "
    if status == "timeout":
        head += (f"TIMEOUT: the run did not finish within {r['cycles']} cycles (raise "
                 "--max-cycles); output not compared")
    elif status != "halted":
        head += f"run ended with status {status.upper()}; output not compared"
    else:
        head += f"{'MATCH' if r['match'] else 'MISMATCH'} vs numpy reference (status {status})"
    expected = r.get("macs_expected")
    if r["macs"] and status == "halted":
        macs = (f"macs {r['macs']}  utilisation {100 * r['mac_utilization']:.1f}% end-to-end, "
                f"{100 * r['compute_utilization']:.1f}% of compute-phase cycles "
                f"(peak {r['peak_macs_per_cycle_per_tile']} MACs/cycle/tile, "
                f"{'matrix engine' if r.get('matrix_engine') else 'dot4'})")
    elif status != "halted":
        macs = (f"macs {r['macs']} counted before the run stopped"
                + (f" (of {expected} expected)" if expected else ""))
    elif expected:
        macs = f"macs {r['macs']} of {expected} expected"
    else:
        macs = "macs n/a (this kernel does no dot4 multiply-accumulates)"
    lines = [
        head,
        f"cycles {r['cycles']}  compute {ph['compute']}  sync {ph['sync']}  exchange "
        f"{ph['exchange']} (max over tiles)",
        macs,
        f"exchange {r['exchange_cycles']} cycles, bound {r['exchange_bound']} "
        f"({'met' if r['exchange_bound_met'] else 'NOT met'}, {r['exchange_phases']} phase(s))",
    ]
    if r.get("error"):
        lines.append(r["error"])
    if "backends_agree" in r:
        lines.append("model and RTL agree (identical run results)" if r["backends_agree"] else
                     "model and RTL DISAGREE (run results differ; see --json backends)")
    return "\n".join(lines)
