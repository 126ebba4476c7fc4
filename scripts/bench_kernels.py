"""Kernel-library benchmark on the golden model (cycle-exact to the RTL).

    .venv/bin/python scripts/bench_kernels.py [--size 128] [--preset array16] [--json OUT]

Dense int8 matmul SIZE^3 on the preset's tiles (compute-phase and end-to-end MAC utilisation,
peak 4 MACs/cycle/tile), then block-sparse matmul of the same shape at 50/75/90% block
sparsity for block sizes 16, 8 and 4, with cycles relative to the dense run; then the pools
(max / average 2x2 stride 2 and 3x3 stride 2 'same', global average) on a 1x32x32x16 input.
Every run is checked bit-exact against the numpy reference (the script exits 3 otherwise).
"""

from __future__ import annotations

import argparse
import json
import sys

from tessera.toolchain.kernels.run import run_kernel
from tessera.toolchain.run import resolve_config


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--preset", default="array16")
    ap.add_argument("--block-sizes", default="16,8,4")
    ap.add_argument("--sparsities", default="0.5,0.75,0.9")
    ap.add_argument("--json", help="write all reports here")
    args = ap.parse_args(argv)
    cfg = resolve_config(args.preset)
    s = args.size
    rows, ok = [], True

    def show(label, r, dense_cycles=None):
        nonlocal ok
        ok &= r["match"]
        ph = r["phase_cycles"]
        rel = f"{r['cycles'] / dense_cycles:.3f}x" if dense_cycles else "1.000x"
        print(f"{label:<28} {r['cycles']:>8} {ph['compute']:>8} {ph['exchange']:>6} "
              f"{r['exchange_bound']:>6} {100 * r['compute_utilization']:>6.1f}% "
              f"{100 * r['mac_utilization']:>6.1f}% {rel:>7} {'ok' if r['match'] else 'MISMATCH'}",
              flush=True)
        rows.append({"label": label, **{k: v for k, v in r.items() if k != "backends"}})

    print(f"{s}x{s}x{s} int8 on {cfg.tiles} tiles x {cfg.contexts} contexts (golden model)")
    print(f"{'kernel':<28} {'cycles':>8} {'compute':>8} {'exch':>6} {'bound':>6} "
          f"{'util_c':>7} {'util_e2e':>7} {'vs dense':>7}")
    dense = run_kernel("matmul", cfg, m=s, k=s, n=s, seed=1)
    show("matmul dense", dense)
    for bs in (int(x) for x in args.block_sizes.split(",")):
        for sp in (float(x) for x in args.sparsities.split(",")):
            r = run_kernel("block_sparse_matmul", cfg, m=s, k=s, n=s, block_size=bs,
                           sparsity=sp, seed=1)
            show(f"block_sparse bs={bs} sp={sp:.2f}", r, dense["cycles"])
    print(f"{'pool (1x32x32x16 int8)':<28} {'cycles':>8} {'compute':>8} {'exch':>6} {'bound':>6}")
    pool = dict(batch=1, height=32, width=32, cin=16, seed=1)
    for label, kern, kw in (("maxpool2d 2x2/2 valid", "maxpool2d", dict(kernel_size=2, stride=2,
                                                                          padding="valid")),
                            ("avgpool2d 2x2/2 valid", "avgpool2d", dict(kernel_size=2, stride=2,
                                                                          padding="valid")),
                            ("maxpool2d 3x3/2 same", "maxpool2d", dict(kernel_size=3, stride=2,
                                                                         padding="same")),
                            ("avgpool2d 3x3/2 same", "avgpool2d", dict(kernel_size=3, stride=2,
                                                                         padding="same")),
                            ("global_avgpool", "global_avgpool", {})):
        r = run_kernel(kern, cfg, **pool, **kw)
        ok &= r["match"]
        ph = r["phase_cycles"]
        print(f"{label:<28} {r['cycles']:>8} {ph['compute']:>8} {ph['exchange']:>6} "
              f"{r['exchange_bound']:>6} {'ok' if r['match'] else 'MISMATCH'}", flush=True)
        rows.append({"label": label, **{k: v for k, v in r.items() if k != "backends"}})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2, default=str)
    return 0 if ok else 3


if __name__ == "__main__":
    sys.exit(main())
