"""Feasibility of issue #14's sparse bar for digits-sized CNNs whose big convolutions run on
the 8×8 maps (docs/compiler.md, "Why 90 % sparsity gives ..."): cycles only, untrained weights.

A network is a comma-separated layer list, e.g. ``c3:16,c3:64*,c3:64*,c2s2:16*,fc``:

* ``c<k>[s<s>]:<C>`` — Conv k×k, stride s (default 1), pad ``k // 2`` for stride 1 and 0
  otherwise, ``C`` output channels, then Relu; a trailing ``*`` marks the layer pruned;
* ``pool`` — MaxPool 2×2 stride 2; ``gap`` — GlobalAveragePool;
* ``fc`` — Flatten + Gemm to 10 logits (``fc*``: pruned);
* ``k<k>`` — the classifier as a k×k valid Conv to 10 channels (no Relu) + Flatten
  (``k<k>*``: pruned).

He-initialised random weights (seed 0), quantized by ``quantize_static`` (QDQ, calibrated on
64 training images), dense and with 90 % of the 8×4 engine blocks of the marked layers zeroed
(``digits_cnn.prune_blocks``; the Gemm as its ``[K, 10]`` matrix); both are imported on the
``small`` preset and run on ``4 × S`` test images on the golden model; prints cycles per image,
the ratio, the per-layer cycles and blocks streamed, the tile memory and the mismatches against
onnxruntime (every element must be equal). Accuracy is meaningless (untrained).

    .venv/bin/python scripts/onnx_sparsity_scale.py SPEC [S] [SPARSITY] [S_SPARSE]

``S_SPARSE`` (default ``S``) runs the sparse model with another number of images per tile (its
weights store only the stored blocks, so more images may fit); the ratio is per image.
"""

from __future__ import annotations

import re
import sys

import numpy as np


def parse(spec: str) -> list[tuple]:
    """``SPEC`` → ``[(kind, k, stride, C, pruned)]`` (kind ``conv``, ``pool``, ``gap``, ``fc``)."""
    out = []
    for tok in spec.split(","):
        tok = tok.strip()
        pruned = tok.endswith("*")
        tok = tok.rstrip("*")
        m = re.fullmatch(r"c(\d+)(?:s(\d+))?:(\d+)", tok)
        if m:
            out.append(("conv", int(m[1]), int(m[2] or 1), int(m[3]), pruned))
        elif re.fullmatch(r"k(\d+)", tok):
            out.append(("cls", int(tok[1:]), 1, 10, pruned))
        elif tok in ("pool", "gap", "fc"):
            out.append((tok, 0, 0, 10 if tok == "fc" else 0, pruned))
        else:
            raise ValueError(f"bad layer {tok!r} in {spec!r}")
    return out


def build(layers, sparsity: float, seed: int = 0):
    """The float32 ONNX model of ``layers`` (input ``x`` [N, 1, 8, 8], output ``logits``)."""
    from onnx import helper, numpy_helper
    from tessera.toolchain.models.digits_cnn import prune_blocks
    rng = np.random.default_rng(seed)
    c, h, w = 1, 8, 8
    init, nodes, cur = [], [], "x"
    for i, (kind, k, s, co, pruned) in enumerate(layers):
        n = f"l{i}"
        if kind in ("conv", "cls"):
            pad = k // 2 if s == 1 and kind == "conv" else 0
            wt = rng.normal(0, np.sqrt(2 / (k * k * c)), (co, c, k, k))
            if sparsity and pruned:
                wt = wt * prune_blocks(wt, sparsity)
            init += [numpy_helper.from_array(wt.astype(np.float32), n + "_w"),
                     numpy_helper.from_array(rng.normal(0, .1, co).astype(np.float32), n + "_b")]
            nodes.append(helper.make_node("Conv", [cur, n + "_w", n + "_b"], [n + "_c"], name=n,
                                          kernel_shape=[k, k], pads=[pad] * 4, strides=[s, s]))
            if kind == "cls":
                nodes.append(helper.make_node("Flatten", [n + "_c"], ["logits"],
                                              name=n + "_flatten", axis=1))
                cur = "logits"
                continue
            nodes.append(helper.make_node("Relu", [n + "_c"], [n + "_r"], name=n + "_relu"))
            cur, c = n + "_r", co
            h, w = (h + 2 * pad - k) // s + 1, (w + 2 * pad - k) // s + 1
        elif kind == "pool":
            nodes.append(helper.make_node("MaxPool", [cur], [n], name=n, kernel_shape=[2, 2],
                                          strides=[2, 2]))
            cur, h, w = n, h // 2, w // 2
        elif kind == "gap":
            nodes.append(helper.make_node("GlobalAveragePool", [cur], [n], name=n))
            cur, h, w = n, 1, 1
        else:
            kin = c * h * w
            wt = rng.normal(0, np.sqrt(2 / kin), (kin, 10))
            if sparsity and pruned:
                wt = wt * prune_blocks(wt.T[:, :, None, None], sparsity)[:, :, 0, 0].T
            init += [numpy_helper.from_array(wt.astype(np.float32), n + "_w"),
                     numpy_helper.from_array(np.zeros(10, np.float32), n + "_b")]
            nodes += [helper.make_node("Flatten", [cur], [n + "_f"], name=n + "_flatten", axis=1),
                      helper.make_node("Gemm", [n + "_f", n + "_w", n + "_b"], ["logits"],
                                       name=n)]
            cur = "logits"
    from tessera.toolchain.models.digits_cnn import digits_model
    return digits_model(nodes, init, "digits_scale")


def main(argv=None) -> int:
    from tessera.spec.config import preset
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import pixels_to_input, quantize_onnx
    from tessera.toolchain.onnx import compare_outputs, import_model, reference_outputs
    argv = sys.argv[1:] if argv is None else argv
    layers = parse(argv[0])
    spt = int(argv[1]) if len(argv) >= 2 else 4
    sparsity = float(argv[2]) if len(argv) >= 3 else 0.9
    spt_sparse = int(argv[3]) if len(argv) >= 4 else spt
    x_tr, x_te = load_digits_split()[:2]
    calib = pixels_to_input(x_tr[:64])
    cfg = preset("small")
    res = {}
    for sp in (0.0, sparsity):
        spt = spt_sparse if sp else spt
        x = pixels_to_input(x_te[:4 * spt])
        q = quantize_onnx(build(layers, sp), calib)
        ref = reference_outputs(q, {"x": x})
        prog = import_model(q, cfg, samples_per_tile=spt)
        run = prog.run({"x": x}, backend="model")
        bad = compare_outputs(run.outputs, ref)["reference_mismatches"]
        res[sp] = run.report["cycles"] / len(x)
        mem = run.report["memory"][0]
        print(f"{argv[0]} S={spt} sparsity {sp:.0%}: {res[sp]:.1f} cycles/image, "
              f"{bad} mismatches vs onnxruntime, tile 0 used {mem['used']} free {mem['free']} "
              f"(code {mem['code']}, tensors {mem['tensors']})")
        for l in run.report["layers"]:
            print(f"    {l['name']:24s} {l['cycles']:7d}  {l['steps']}"
                  + (f"  blocks {l['sparse']['blocks_streamed']}/{l['sparse']['blocks_total']}"
                     if l.get("sparse") else ""))
    print(f"ratio {sparsity:.0%} / dense: {res[sparsity] / res[0.0]:.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
