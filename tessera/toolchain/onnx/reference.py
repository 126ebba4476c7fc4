"""The independent oracle: onnxruntime's CPU provider with default session options (what users
run), and the element-wise comparison the CLI reports (``reference_mismatches``,
``reference_max_abs_diff``)."""

from __future__ import annotations

import numpy as np

__all__ = ["reference_outputs", "compare_outputs"]


def reference_outputs(source, inputs: dict) -> dict:
    """Run ``source`` (path, bytes or ModelProto) with ``onnxruntime.InferenceSession`` on the
    CPU provider with default options; returns output name -> array."""
    import onnx
    import onnxruntime as ort
    if isinstance(source, onnx.ModelProto):
        data = source.SerializeToString()
    elif isinstance(source, (bytes, bytearray)):
        data = bytes(source)
    else:
        data = open(source, "rb").read()
    sess = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    vals = sess.run(names, {k: np.asarray(v) for k, v in inputs.items()})
    return dict(zip(names, vals))


def compare_outputs(got: dict, ref: dict) -> dict:
    """``{"reference_mismatches": int, "reference_max_abs_diff": float, "per_output": {...}}``.

    Elements are compared by value (``==``; NaN equals NaN); the difference of integer outputs
    is taken in int64, of float outputs in float64.
    """
    total, worst, per = 0, 0.0, {}
    for name, r in ref.items():
        g = np.asarray(got[name])
        r = np.asarray(r)
        if g.shape != r.shape:
            per[name] = {"mismatches": int(r.size), "max_abs_diff": float("inf"),
                         "shape": [list(g.shape), list(r.shape)]}
            total += r.size
            worst = float("inf")
            continue
        if r.dtype.kind == "f" or g.dtype.kind == "f":
            gf, rf = g.astype(np.float64), r.astype(np.float64)
            same = (gf == rf) | (np.isnan(gf) & np.isnan(rf))
            diff = np.where(same, 0.0, np.abs(gf - rf))
        else:
            same = g.astype(np.int64) == r.astype(np.int64)
            diff = np.abs(g.astype(np.int64) - r.astype(np.int64)).astype(np.float64)
        n = int((~same).sum())
        m = float(np.nanmax(diff)) if diff.size else 0.0
        per[name] = {"mismatches": n, "max_abs_diff": m}
        total += n
        worst = max(worst, m)
    return {"reference_mismatches": total, "reference_max_abs_diff": worst, "per_output": per}
