"""What block sparsity can buy a digits-sized CNN on the ``small`` array (docs/compiler.md,
"Why 90 % sparsity gives ..."): cycles only, untrained weights.

Builds, with ``onnx.helper``, an all-engine variant of the digits CNN without max pooling
(Conv 3x3 stride 2 1->C1, Relu, Conv 3x3 C1->C2, Relu, Conv 4x4 valid C2->10 as the classifier,
Flatten), He-initialised random weights, quantized by ``quantize_static`` (QDQ, calibrated
on 64 training images), dense and with 90 % of the 8x4 engine blocks of conv2 and the
classifier zeroed (``prune_blocks``); imports both, runs 4 x SAMPLES_PER_TILE (default 16)
test images on the golden model and prints cycles per image and the per-layer steps. The outputs are checked
against onnxruntime (every element equal); accuracy is meaningless (untrained).

    .venv/bin/python scripts/onnx_sparsity_bound.py [C1 C2 [SAMPLES_PER_TILE]]
"""

from __future__ import annotations

import sys

import numpy as np


def build(c1: int, c2: int, sparsity: float, seed: int = 0):
    from onnx import helper, numpy_helper
    from tessera.toolchain.models.digits_cnn import prune_blocks
    rng = np.random.default_rng(seed)
    w1 = rng.normal(0, np.sqrt(2 / 9), (c1, 1, 3, 3))
    w2 = rng.normal(0, np.sqrt(2 / (9 * c1)), (c2, c1, 3, 3))
    w3 = rng.normal(0, np.sqrt(2 / (16 * c2)), (10, c2, 4, 4))
    if sparsity:
        w2 = w2 * prune_blocks(w2, sparsity)
        w3 = w3 * prune_blocks(w3, sparsity)
    arrs = {"w1": w1, "b1": rng.normal(0, .1, c1), "w2": w2, "b2": rng.normal(0, .1, c2),
            "w3": w3, "b3": np.zeros(10)}
    init = [numpy_helper.from_array(np.asarray(v, np.float32), k) for k, v in arrs.items()]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], strides=[2, 2]),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], name="classifier",
                         kernel_shape=[4, 4]),
        helper.make_node("Flatten", ["c3"], ["logits"], name="flatten", axis=1)]
    from tessera.toolchain.models.digits_cnn import digits_model
    return digits_model(nodes, init, "digits_allconv")


def main(argv=None) -> int:
    from tessera.spec.config import preset
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import pixels_to_input, quantize_onnx
    from tessera.toolchain.onnx import compare_outputs, import_model, reference_outputs
    argv = sys.argv[1:] if argv is None else argv
    c1, c2 = (int(argv[0]), int(argv[1])) if len(argv) >= 2 else (16, 64)
    spt = int(argv[2]) if len(argv) >= 3 else 4
    x_tr, x_te = load_digits_split()[:2]
    calib, x = pixels_to_input(x_tr[:64]), pixels_to_input(x_te[:4 * spt])
    cfg = preset("small")
    res = {}
    for sp in (0.0, 0.9):
        q = quantize_onnx(build(c1, c2, sp), calib)
        ref = reference_outputs(q, {"x": x})
        run = import_model(q, cfg, samples_per_tile=spt).run({"x": x}, backend="model")
        bad = compare_outputs(run.outputs, ref)["reference_mismatches"]
        res[sp] = run.report["cycles"] / len(x)
        print(f"C1={c1} C2={c2} sparsity {sp:.0%}: {res[sp]:.1f} cycles/image, "
              f"{bad} mismatches vs onnxruntime")
        for l in run.report["layers"]:
            print(f"    {l['name']:24s} {l['cycles']:7d}  {l['steps']}"
                  + (f"  blocks {l['sparse']['blocks_streamed']}/{l['sparse']['blocks_total']}"
                     if l.get("sparse") else ""))
    print(f"ratio 90 % / dense: {res[0.9] / res[0.0]:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
