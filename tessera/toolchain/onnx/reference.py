"""The independent oracle: onnxruntime's CPU provider with default session options (what users
run), and the element-wise comparison the CLI reports (``reference_mismatches``,
``reference_max_abs_diff``).

One CPU-dependent deviation of onnxruntime is taken out of the oracle: on x86-64 processors
without VNNI (AVX2 only, for example AMD Zen 2 and 3), its MLAS kernels for uint8 activations ×
int8 weights add each pair of u8·s8 products in int16 with saturation (``vpmaddubsw``), while
the ONNX operators (``QLinearConv``, ``QLinearMatMul``, ``ConvInteger``, ``MatMulInteger``,
onnxruntime's ``QGemm``, and
a QDQ model's ``DequantizeLinear`` → ``Conv`` / ``MatMul`` → ``QuantizeLinear`` that onnxruntime
fuses into them) accumulate exactly in int32. Measured here (onnxruntime 1.32.0, AMD EPYC with
AVX2): a 64-deep ``MatMulInteger`` of 255 by −128 gives −1,048,576 instead of −2,088,960, and
the 8 × 8 digits CNN 77 mismatching logits of 80. :func:`exact_weights` re-expresses every int8
weight initializer as uint8 with its zero point + 128 — the same integer values w − zp, so the
same ONNX function — and onnxruntime then runs its u8u8 kernels, whose int16 operands and int32
sums are exact on every CPU. An integer operator with int8 activations keeps its weights: int8
× int8 was measured exact, and onnxruntime has no ``QLinearConv`` for int8 × uint8.
"""

from __future__ import annotations

import numpy as np

__all__ = ["reference_outputs", "compare_outputs", "exact_weights"]

#: (weight input, its zero point's input) of each operator whose int8 weight initializer
#: :func:`exact_weights` re-expresses as uint8 (ONNX operator specs; the zero point is optional
#: in ``ConvInteger``, ``MatMulInteger`` and ``DequantizeLinear``).
_WEIGHT_INPUTS = {"QLinearConv": (3, 5), "QLinearMatMul": (3, 5), "ConvInteger": (1, 3),
                  "MatMulInteger": (1, 3), "DequantizeLinear": (0, 2),
                  # onnxruntime's contrib operator (quantize_static's QOperator Gemm)
                  "QGemm": (3, 5)}
#: the domains of those operators
_DOMAINS = {"QGemm": ("com.microsoft",)}


def exact_weights(model):
    """A copy of ``model`` with every int8 weight initializer of the integer operators as uint8.

    For each node of ``_WEIGHT_INPUTS``' types in the main graph (the integer operators only where
    their activation is uint8: :func:`_uint8_activation`; a QDQ model's ``DequantizeLinear``
    always, since onnxruntime turns int8 QDQ activations into uint8 on x86) whose weight input
    is an int8
    initializer and whose zero point is an int8 initializer or absent (0), the node reads new
    initializers w + 128 and zp + 128 (uint8; an absent zero point becomes 128, shaped like the
    scale for ``DequantizeLinear``, a scalar otherwise). w − zp, and so the model's function,
    is unchanged (ONNX ``DequantizeLinear``: y = (x − x_zero_point) · x_scale; the integer
    operators use w − w_zero_point). An original initializer no node reads any more is dropped.

    Parameters
    ----------
    model : onnx.ModelProto

    Returns
    -------
    onnx.ModelProto
        The copy (``model`` itself is not changed).
    """
    import onnx
    from onnx import TensorProto, numpy_helper
    out = onnx.ModelProto()
    out.CopyFrom(model)
    g = out.graph
    inits = {t.name: t for t in g.initializer}
    taken = set(inits) | {v for n in g.node for v in list(n.input) + list(n.output)}
    made = {}

    def fresh(base):
        name, k = f"{base}__u8", 1
        while name in taken:
            name, k = f"{base}__u8_{k}", k + 1
        taken.add(name)
        return name

    def add(values, base):
        t = numpy_helper.from_array(np.asarray(values, np.uint8), fresh(base))
        g.initializer.append(t)
        return t.name

    def shifted(name):
        if name not in made:
            v = numpy_helper.to_array(inits[name]).astype(np.int16) + 128
            made[name] = add(v, name)
        return made[name]

    for n in g.node:
        if n.op_type not in _WEIGHT_INPUTS or \
                n.domain not in _DOMAINS.get(n.op_type, ("", "ai.onnx")):
            continue
        wi, zi = _WEIGHT_INPUTS[n.op_type]
        if n.op_type != "DequantizeLinear" and not _uint8_activation(n, g, inits):
            continue
        w = n.input[wi] if len(n.input) > wi else ""
        if w not in inits or inits[w].data_type != TensorProto.INT8:
            continue
        zp = n.input[zi] if len(n.input) > zi else ""
        if zp and (zp not in inits or inits[zp].data_type != TensorProto.INT8):
            continue                  # a zero point computed at run time: left as it is
        if zp:
            new_zp = shifted(zp)
        elif n.op_type == "DequantizeLinear":
            if n.input[1] not in inits:
                continue              # the scale's shape is not known before the run
            shape = numpy_helper.to_array(inits[n.input[1]]).shape
            new_zp = add(np.full(shape, 128), w + "_zero_point")
        else:
            new_zp = add(128, w + "_zero_point")
        n.input[wi] = shifted(w)
        while len(n.input) <= zi:
            n.input.append("")
        n.input[zi] = new_zp
    # drop the replaced initializers no node reads any more (onnxruntime warns about them)
    used = {v for n in g.node for v in n.input} | {i.name for i in g.input} | \
        {o.name for o in g.output}
    keep = [t for t in g.initializer if t.name in used or t.name not in made]
    if len(keep) != len(g.initializer):
        del g.initializer[:]
        g.initializer.extend(keep)
    return out


def _uint8_activation(n, g, inits) -> bool:
    """Whether the activation (input 0) of an integer operator is known to be uint8: its zero
    point (input 2) is a uint8 initializer, or it has none and is a uint8 graph input.
    onnxruntime has no ``QLinearConv`` for int8 activations × uint8 weights (and its int8 ×
    int8 kernels were measured exact), so a node with int8 or unknown activations keeps its
    weights."""
    from onnx import TensorProto
    zp = n.input[2] if len(n.input) > 2 else ""
    if zp:
        return zp in inits and inits[zp].data_type == TensorProto.UINT8
    return any(i.name == n.input[0] and i.type.tensor_type.elem_type == TensorProto.UINT8
               for i in g.input)


def reference_outputs(source, inputs: dict) -> dict:
    """Run ``source`` (path, bytes or ModelProto) with ``onnxruntime.InferenceSession`` on the
    CPU provider with default options, its int8 weights re-expressed as uint8 by
    :func:`exact_weights` (the same function, computed exactly on every CPU: module docstring);
    returns output name -> array."""
    import onnx
    import onnxruntime as ort
    if isinstance(source, onnx.ModelProto):
        model = source
    elif isinstance(source, (bytes, bytearray)):
        model = onnx.load_from_string(bytes(source))
    else:
        model = onnx.load(source)
    data = exact_weights(model).SerializeToString()
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
