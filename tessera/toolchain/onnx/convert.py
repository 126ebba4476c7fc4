"""ONNX graph → the importer's integer operations (docs/compiler.md, "ONNX importer").

Steps:

1. **Constants**: initializers, ``Constant`` nodes and graph inputs bound by the caller.
2. **QDQ fusion** (the QDQ form ``onnxruntime.quantization.quantize_static`` writes), as
   onnxruntime's CPU session fuses it at load time: ``DequantizeLinear → Conv / MatMul / Gemm /
   GlobalAveragePool → QuantizeLinear`` becomes ``QLinearConv`` / ``QLinearMatMul`` / ``QGemm``
   / ``QLinearGlobalAveragePool`` (int32 accumulation, int32 bias, float32 requantization); ``DequantizeLinear → op → QuantizeLinear`` around an op
   that only moves or compares values (MaxPool, Relu, Clip, Reshape, Flatten, Transpose,
   Identity, Concat) with the same scale and zero point on both sides runs on the codes
   directly (exactly the same result: quantization is monotone and ``Q(DQ(q)) = q``).
3. **Lowering to ops**: every remaining node becomes one :class:`~tessera.toolchain.onnx.ir.Op` with its
   output shape; unsupported operators, attributes and data types raise
   :class:`~tessera.toolchain.onnx.errors.UnsupportedError` naming the node, the op type and what is
   supported.

Operator semantics follow the ONNX operator specification (onnx/docs/Operators.md, the section
of each operator) and, for the com.microsoft contrib operators, onnxruntime's
docs/ContribOperators.md.
"""

from __future__ import annotations

import math
import platform
from dataclasses import dataclass, field

import numpy as np

from tessera.golden_model.kernels import float32_multiplier, quantize_linear, dequantize_linear, qrange
from tessera.golden_model.kernels.qlinear import (
    fma_float32, ort_broadcast_kind, qlinear_add_fixed, qlinear_softmax_table,
)

from .errors import UnsupportedError
from .ir import IRGraph, Op, Value
from .model import MS_DOMAIN, as_array, attributes, node_label, np_dtype, value_shape

__all__ = ["convert", "SUPPORTED_OPS", "REFUSED_OPS", "NotSeparable"]

#: Operators the importer maps, by domain ("" = ONNX).
SUPPORTED_OPS = {
    "": ("QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "ConvInteger",
         "MatMulInteger", "Conv", "MatMul", "Gemm", "Relu", "Clip", "MaxPool", "AveragePool",
         "GlobalAveragePool", "Add", "Mul", "Reshape", "Flatten", "Transpose", "Concat",
         "Identity", "Constant"),
    MS_DOMAIN: ("QLinearConv", "QGemm", "QLinearGlobalAveragePool", "QLinearAdd", "QLinearMul",
                "QLinearAveragePool", "QLinearSoftmax"),
}

#: Operators refused on purpose, with the reason (checked before the generic "not supported").
REFUSED_OPS = {
    "Softmax": (
        "a float32 Softmax is float32 arithmetic with exp; onnxruntime computes it with MLAS's "
        "float32 polynomial exp and vectorized max/sum reductions, which Tessera's "
        "integer-only cores do not reproduce bit for bit, so Tessera does not run it (it runs "
        "the quantized form: DequantizeLinear -> Softmax -> QuantizeLinear, which onnxruntime "
        "fuses into com.microsoft QLinearSoftmax, or QLinearSoftmax itself); otherwise end the "
        "imported graph before the Softmax and apply it on the host (argmax of the logits is "
        "unchanged by Softmax)"),
}


def _supported_text() -> str:
    return (", ".join(SUPPORTED_OPS[""]) + f"; {MS_DOMAIN}: " + ", ".join(SUPPORTED_OPS[MS_DOMAIN]))


class NotSeparable(Exception):
    """The batch axis does not stay axis 0 through the model (internal: selects single mode)."""


@dataclass
class _Node:
    op: str
    domain: str
    name: str
    inputs: list
    outputs: list
    attrs: dict
    fused: tuple = ()

    @property
    def where(self) -> str:
        return f"node {self.name!r} ({self.op})"


def _err(node: _Node, text: str) -> UnsupportedError:
    return UnsupportedError(f"{node.where}: {text}", node.name, node.op)


# ---------------------------------------------------------------------------------------------
# QDQ fusion on the node list
# ---------------------------------------------------------------------------------------------
_MOVE_OPS = ("MaxPool", "Relu", "Clip", "Reshape", "Flatten", "Transpose", "Identity")


def _qparams_equal(consts, a: _Node, b: _Node) -> bool:
    """DQ node ``a`` and Q node ``b`` use the same scale, zero point (type) and axis."""
    def get(n, i):
        if len(n.inputs) > i and n.inputs[i]:
            return consts.get(n.inputs[i])
        return None
    sa, sb = get(a, 1), get(b, 1)
    if sa is None or sb is None:
        return False
    za, zb = get(a, 2), get(b, 2)
    za = np.zeros((), np.uint8) if za is None else za
    zb = np.zeros((), np.uint8) if zb is None else zb
    if za.dtype != zb.dtype or sa.size != 1 or sb.size != 1 or za.size != 1 or zb.size != 1:
        return False
    return (np.float32(sa.reshape(-1)[0]) == np.float32(sb.reshape(-1)[0])
            and int(za.reshape(-1)[0]) == int(zb.reshape(-1)[0]))


#: onnxruntime's ``QDQIsInt8Allowed()``: true on ARM only. Elsewhere its CPU session runs
#: ``QDQS8ToU8Transformer`` (int8 Q -> DQ activation pairs become uint8, zero point + 128) and
#: fuses int8 convolutions and matmuls only where that made their activations uint8.
QDQ_INT8_ALLOWED = platform.machine().lower() in ("arm64", "aarch64") or \
    platform.machine().lower().startswith("arm")


def _s8_to_u8_pairs(nodes, consts, graph_outputs) -> set:
    """Tensors of the int8 Q -> DQ pairs onnxruntime's QDQS8ToU8Transformer turns into uint8
    (``core/optimizer/qdq_transformer/qdq_s8_to_u8.cc``): the Q output has exactly one consumer,
    a DequantizeLinear, both with an explicit constant scalar int8 zero point, the same on both;
    the DQ output itself is used once (one consumer or a graph output: onnxruntime first
    duplicates a DQ used several times, which leaves its Q with several consumers)."""
    if QDQ_INT8_ALLOWED:
        return set()
    uses = {}
    for n in nodes:
        for x in n.inputs:
            if x:
                uses.setdefault(x, []).append(n)
    out = set()
    for q in nodes:
        if q.op != "QuantizeLinear" or q.domain != "" or len(q.inputs) != 3:
            continue
        y = q.outputs[0]
        cs = uses.get(y, [])
        if y in graph_outputs or len(cs) != 1:
            continue
        dq = cs[0]
        if dq.op != "DequantizeLinear" or dq.domain != "" or len(dq.inputs) != 3 or \
                dq.inputs[0] != y or \
                len(uses.get(dq.outputs[0], [])) + (dq.outputs[0] in graph_outputs) > 1:
            continue
        zq, zd = consts.get(q.inputs[2]), consts.get(dq.inputs[2])
        if zq is None or zd is None or zq.size != 1 or zd.size != 1 or \
                zq.dtype != np.int8 or zd.dtype != np.int8 or int(zq.reshape(-1)[0]) != int(zd.reshape(-1)[0]):
            continue
        out.add(y)
    return out


def _binary_qdq_ok(consts, dqs, q) -> bool:
    """onnxruntime's QDQ selectors for QLinearAdd/QLinearMul/QLinearAveragePool: per-tensor
    constant scales and zero points, all of one 8-bit type."""
    def zp_dtype(n, i):
        if len(n.inputs) > i and n.inputs[i]:
            z = consts.get(n.inputs[i])
            return None if z is None or z.size != 1 else z.dtype
        return np.dtype(np.uint8)
    for n in list(dqs) + [q]:
        sc = consts.get(n.inputs[1]) if len(n.inputs) > 1 else None
        if sc is None or sc.size != 1:
            return False
    types = {zp_dtype(n, 2) for n in list(dqs) + [q]}
    return len(types) == 1 and types.pop() in (np.dtype(np.int8), np.dtype(np.uint8))


def _fuse_qdq(nodes: list, consts: dict, graph_outputs: set) -> list:
    producer = {o: n for n in nodes for o in n.outputs}

    def consumers(name):
        return [n for n in nodes if name in n.inputs]

    def dq_of(name):
        n = producer.get(name)
        return n if n is not None and n.op == "DequantizeLinear" and n.domain == "" else None

    def single_q(name):
        if name in graph_outputs:
            return None
        cs = consumers(name)
        if len(cs) == 1 and cs[0].op == "QuantizeLinear" and cs[0].domain == "" \
                and cs[0].inputs[0] == name:
            return cs[0]
        return None

    u8 = _s8_to_u8_pairs(nodes, consts, graph_outputs)

    def zp_type(n, i):
        z = consts.get(n.inputs[i]) if len(n.inputs) > i and n.inputs[i] else None
        return "uint8" if z is None else z.dtype.name

    def dq_type(dq):        # the DQ's input type after onnxruntime's s8 -> u8 conversion
        return "uint8" if dq.inputs[0] in u8 else zp_type(dq, 2)

    def q_type(q):
        return "uint8" if q.outputs[0] in u8 else zp_type(q, 2)

    def u8_domain(dqs, q):  # int8 codes that onnxruntime computes on as uint8 (+128)
        return zp_type(q, 2) == "int8" and q_type(q) == "uint8"

    out = []
    for n in nodes:
        if n.domain == "" and n.op in ("Conv", "MatMul", "Gemm"):
            dqs = [dq_of(x) if x else None for x in n.inputs]
            q = single_q(n.outputs[0])
            if q is None or dqs[0] is None or dqs[1] is None:
                out.append(n)
                continue
            tin, tout = dq_type(dqs[0]), q_type(q)
            if tin != tout or (tin == "int8" and not QDQ_INT8_ALLOWED):
                n.attrs["_not_fused"] = (
                    f"onnxruntime does not fuse this DequantizeLinear -> {n.op} -> "
                    f"QuantizeLinear group (activations {tin} in, {tout} out after its int8 -> "
                    "uint8 QDQ conversion on this platform) and runs the float32 " + n.op)
                out.append(n)
                continue
            def qin(dq, i):
                return [dq.inputs[0], dq.inputs[1], dq.inputs[2] if len(dq.inputs) > 2 else ""]
            xa, wa = qin(dqs[0], 0), qin(dqs[1], 1)
            qy = [q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else ""]
            bias = ""
            if len(n.inputs) > 2 and n.inputs[2]:
                if dqs[2] is None:
                    raise _err(n, "the bias is float32 but not a DequantizeLinear of an int32 "
                                  "constant; Tessera runs Conv/Gemm between DequantizeLinear and "
                                  "QuantizeLinear only with an int32 bias (as quantize_static writes)")
                bias = dqs[2].inputs[0]
            fused = ("DequantizeLinear", n.op, "QuantizeLinear")
            if n.op == "Conv":
                m = _Node("QLinearConv", "", n.name, xa + wa + qy + ([bias] if bias else []),
                          [q.outputs[0]], n.attrs, fused)
            elif n.op == "MatMul":
                m = _Node("QLinearMatMul", "", n.name, xa + wa + qy, [q.outputs[0]], n.attrs, fused)
            else:
                m = _Node("QGemm", MS_DOMAIN, n.name, xa + wa + [bias] + qy, [q.outputs[0]],
                          n.attrs, fused)
            q.op = "_fused"
            out.append(m)
        elif n.domain == "" and n.op == "GlobalAveragePool" and dq_of(n.inputs[0]) is not None \
                and single_q(n.outputs[0]) is not None \
                and dq_type(dq_of(n.inputs[0])) == q_type(single_q(n.outputs[0])):
            # onnxruntime fuses this into com.microsoft QLinearGlobalAveragePool
            dq, q = dq_of(n.inputs[0]), single_q(n.outputs[0])
            ins = [dq.inputs[0], dq.inputs[1], dq.inputs[2] if len(dq.inputs) > 2 else "",
                   q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else ""]
            out.append(_Node("QLinearGlobalAveragePool", MS_DOMAIN, n.name, ins, [q.outputs[0]],
                             {}, ("DequantizeLinear", "GlobalAveragePool", "QuantizeLinear")))
            q.op = "_fused"
        elif n.domain == "" and n.op in ("Add", "Mul") and len(n.inputs) == 2 and \
                all(dq_of(x) is not None for x in n.inputs) and single_q(n.outputs[0]) is not None \
                and _binary_qdq_ok(consts, [dq_of(x) for x in n.inputs], single_q(n.outputs[0])) \
                and dq_type(dq_of(n.inputs[0])) == dq_type(dq_of(n.inputs[1])) \
                == q_type(single_q(n.outputs[0])):
            # onnxruntime's QDQ transformer makes this com.microsoft QLinearAdd / QLinearMul
            dqa, dqb = (dq_of(x) for x in n.inputs)
            q = single_q(n.outputs[0])
            ins = []
            for d in (dqa, dqb):
                ins += [d.inputs[0], d.inputs[1], d.inputs[2] if len(d.inputs) > 2 else ""]
            ins += [q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else ""]
            out.append(_Node("QLinear" + n.op, MS_DOMAIN, n.name, ins, [q.outputs[0]],
                             {"_u8_domain": u8_domain([dqa, dqb], q)},
                             ("DequantizeLinear", n.op, "QuantizeLinear")))
            q.op = "_fused"
        elif n.domain == "" and n.op == "Softmax" and dq_of(n.inputs[0]) is not None \
                and single_q(n.outputs[0]) is not None \
                and _binary_qdq_ok(consts, [dq_of(n.inputs[0])], single_q(n.outputs[0])) \
                and dq_type(dq_of(n.inputs[0])) == q_type(single_q(n.outputs[0])):
            # onnxruntime's QDQ transformer makes this com.microsoft QLinearSoftmax (attribute
            # opset = the model's, filled in by the converter)
            dq, q = dq_of(n.inputs[0]), single_q(n.outputs[0])
            ins = [dq.inputs[0], dq.inputs[1], dq.inputs[2] if len(dq.inputs) > 2 else "",
                   q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else ""]
            out.append(_Node("QLinearSoftmax", MS_DOMAIN, n.name, ins, [q.outputs[0]],
                             dict(n.attrs, _from_qdq=True),
                             ("DequantizeLinear", "Softmax", "QuantizeLinear")))
            q.op = "_fused"
        elif n.domain == "" and n.op == "AveragePool" and dq_of(n.inputs[0]) is not None \
                and single_q(n.outputs[0]) is not None \
                and _binary_qdq_ok(consts, [dq_of(n.inputs[0])], single_q(n.outputs[0])) \
                and dq_type(dq_of(n.inputs[0])) == q_type(single_q(n.outputs[0])):
            # onnxruntime's QDQ transformer makes this com.microsoft QLinearAveragePool
            dq, q = dq_of(n.inputs[0]), single_q(n.outputs[0])
            ins = [dq.inputs[0], dq.inputs[1], dq.inputs[2] if len(dq.inputs) > 2 else "",
                   q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else ""]
            out.append(_Node("QLinearAveragePool", MS_DOMAIN, n.name, ins, [q.outputs[0]],
                             dict(n.attrs, _u8_domain=u8_domain([dq], q)),
                             ("DequantizeLinear", "AveragePool", "QuantizeLinear")))
            q.op = "_fused"
        elif n.domain == "" and n.op in _MOVE_OPS + ("Concat",):
            ins = [x for x in n.inputs]
            data_idx = list(range(len(ins))) if n.op == "Concat" else [0]
            dqs = [dq_of(ins[i]) for i in data_idx]
            q = single_q(n.outputs[0])
            if q is None or any(d is None for d in dqs) or \
                    not all(_qparams_equal(consts, d, q) for d in dqs):
                out.append(n)
                continue
            m = _Node(n.op, "", n.name, list(ins), [q.outputs[0]], dict(n.attrs),
                      ("DequantizeLinear", n.op, "QuantizeLinear"))
            for i, d in zip(data_idx, dqs):
                m.inputs[i] = d.inputs[0]
            if n.op == "Clip":   # bounds are reals: turn them into codes with the Q parameters
                m.attrs["_qparams"] = (q.inputs[1], q.inputs[2] if len(q.inputs) > 2 else "")
            q.op = "_fused"
            out.append(m)
        else:
            out.append(n)
    out = [n for n in out if n.op != "_fused"]
    # drop nodes whose outputs nobody uses any more (the DequantizeLinear of fused groups)
    while True:
        used = {x for n in out for x in n.inputs} | graph_outputs
        keep = [n for n in out if any(o in used for o in n.outputs)]
        if len(keep) == len(out):
            return keep
        out = keep


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _ints(v, n=None):
    return [int(x) for x in v] if v is not None else None


def _conv_geometry(node, in_hw, k_hw, attrs, kind="conv"):
    """pads (top, left, bottom, right), strides, dilations and output (OH, OW) of a 2-D window."""
    nd = len(in_hw)
    strides = _ints(attrs.get("strides")) or [1] * nd
    dil = _ints(attrs.get("dilations")) or [1] * nd
    pads = _ints(attrs.get("pads")) or [0] * (2 * nd)
    auto = attrs.get("auto_pad", "NOTSET") or "NOTSET"
    ceil_mode = int(attrs.get("ceil_mode", 0)) if kind == "pool" else 0
    if len(strides) != nd or len(dil) != nd or len(pads) != 2 * nd:
        raise _err(node, f"strides {strides}, dilations {dil}, pads {pads} do not match the "
                         f"{nd}-D kernel {list(k_hw)}")
    if min(strides) < 1 or min(dil) < 1 or min(pads) < 0:
        raise _err(node, "strides and dilations must be positive and pads non-negative")
    out = []
    pb, pe = list(pads[:nd]), list(pads[nd:])
    for a in range(nd):
        ek = (k_hw[a] - 1) * dil[a] + 1
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-in_hw[a] // strides[a])
            total = max((o - 1) * strides[a] + ek - in_hw[a], 0)
            small = total // 2
            pb[a], pe[a] = (small, total - small) if auto == "SAME_UPPER" else (total - small, small)
        elif auto == "VALID":
            pb[a] = pe[a] = 0
        elif auto != "NOTSET":
            raise _err(node, f"auto_pad {auto!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
        span = in_hw[a] + pb[a] + pe[a] - ek
        if span < 0:
            raise _err(node, f"the kernel ({ek} with dilation) is larger than the padded input "
                             f"({in_hw[a] + pb[a] + pe[a]}) on spatial axis {a}")
        if auto in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-in_hw[a] // strides[a])
        elif ceil_mode:
            o = -(-span // strides[a]) + 1
            if (o - 1) * strides[a] >= in_hw[a] + pb[a]:
                o -= 1
        else:
            o = span // strides[a] + 1
        out.append(o)
    return pb, pe, strides, dil, out


def _spatial(node, shape, what="input"):
    """(N, C, H, W) view of an NCHW or NCW shape (1-D convolutions/pools have H = 1)."""
    if len(shape) == 4:
        return shape, False
    if len(shape) == 3:
        return (shape[0], shape[1], 1, shape[2]), True
    raise _err(node, f"{what} has shape {list(shape)}; Tessera supports 1-D and 2-D "
                     "convolution and pooling (NCW or NCHW), not "
                     f"{'3-D' if len(shape) == 5 else str(len(shape) - 2) + '-D'}")


# ---------------------------------------------------------------------------------------------
# the converter
# ---------------------------------------------------------------------------------------------
class _Converter:
    def __init__(self, model, constants: dict, batched: bool):
        self.model = model
        self.batched = batched
        g = model.graph
        self.consts: dict = {}
        for t in g.initializer:
            self.consts[t.name] = as_array(t)
        for name, arr in (constants or {}).items():
            self.consts[name] = np.asarray(arr)
        self.values: dict = {}
        self.ops: list = []
        self.count = 0
        self.graph_outputs = [o.name for o in g.output]

    # -- values ------------------------------------------------------------------------
    def const(self, node, name, what, required=True):
        if not name:
            if required:
                raise _err(node, f"{what} is missing")
            return None
        if name in self.consts:
            return self.consts[name]
        if required:
            raise _err(node, f"{what} {name!r} must be a constant (an initializer); Tessera "
                             "compiles scales, zero points, weights and shapes into the program")
        return None

    def act(self, node, name, what="input") -> Value:
        if name in self.consts:
            raise _err(node, f"{what} {name!r} is a constant; Tessera needs it computed on the array")
        v = self.values.get(name)
        if v is None:
            raise _err(node, f"{what} {name!r} is not produced by any supported node")
        return v

    def is_const(self, name):
        return bool(name) and name in self.consts

    def new_value(self, name, shape, dtype, node=None):
        shape = tuple(int(d) for d in shape)
        if any(d < 1 for d in shape):
            raise UnsupportedError(f"{node.where if node else 'model'}: tensor {name!r} has shape "
                                   f"{list(shape)}; empty tensors are not supported",
                                   node.name if node else None, node.op if node else None)
        if self.batched and (not shape or shape[0] != 1):
            raise NotSeparable(f"{node.where if node else name}: tensor {name!r} would have "
                               f"shape {list(shape)} per sample (the batch axis does not stay axis 0)")
        v = Value(name, shape, dtype)
        self.values[name] = v
        return v

    def emit(self, kind, node, inputs, out_name, shape, dtype, **attrs):
        v = self.new_value(out_name, shape, dtype, node)
        self.ops.append(Op(kind, node.name, node.fused or (node.op,), list(inputs), out_name, attrs))
        return v

    # -- quantization parameters -------------------------------------------------------
    def scale(self, node, name, what, n=None):
        s = self.const(node, name, what)
        if s.dtype == np.float16:
            s = s.astype(np.float32)            # exact: every float16 is a float32
        if s.dtype != np.float32:
            raise _err(node, f"{what} {name!r} has type {s.dtype.name}; scales must be float32")
        s = s.reshape(-1)
        if n is not None and s.size not in (1, n):
            raise _err(node, f"{what} {name!r} has {s.size} values; expected 1 or {n}")
        if not np.all(np.isfinite(s)) or np.any(s <= 0) or np.any(s < np.float32(2.0 ** -100)) \
                or np.any(s > np.float32(2.0 ** 96)):
            raise _err(node, f"{what} {name!r} must be finite, positive float32 values in "
                             f"[2^-100, 2^96], got {s.tolist()[:4]}")
        return s

    def zero_point(self, node, name, what, dtype, n=None):
        if not name:
            return np.zeros(1, np.int64), np.dtype(dtype)
        z = self.const(node, name, what)
        if z.dtype not in (np.int8, np.uint8, np.int32):
            raise _err(node, f"{what} {name!r} has type {z.dtype.name}; Tessera supports int8 "
                             "and uint8 quantized tensors")
        z = z.reshape(-1)
        if n is not None and z.size not in (1, n):
            raise _err(node, f"{what} {name!r} has {z.size} values; expected 1 or {n}")
        return z.astype(np.int64), z.dtype

    # -- main loop -----------------------------------------------------------------------
    def run(self, nodes, graph_inputs):
        for name, shape, dtype in graph_inputs:
            self.new_value(name, shape, dtype)
        for node in nodes:
            handler = getattr(self, f"op_{node.op}", None)
            supported = node.op in SUPPORTED_OPS.get(node.domain, ()) or node.op in ("QGemm",)
            if node.domain == "" and node.op in REFUSED_OPS:
                raise UnsupportedError(
                    f"{node.where}: operator {node.op} is not supported: {REFUSED_OPS[node.op]}; "
                    f"supported operators: {_supported_text()}", node.name, node.op)
            if handler is None or not supported or (node.domain not in ("", MS_DOMAIN)):
                dom = f" in domain {node.domain!r}" if node.domain else ""
                raise UnsupportedError(
                    f"{node.where}: operator {node.op}{dom} is not supported; supported "
                    f"operators: {_supported_text()}", node.name, node.op)
            if node.op != "Constant" and all(self.is_const(x) for x in node.inputs if x):
                self.fold(node)
                continue
            handler(node)
        return self.ops

    # -- constant folding --------------------------------------------------------------
    def fold(self, node):
        ins = [self.consts.get(x) if x else None for x in node.inputs]
        a = node.attrs
        try:
            if node.op == "DequantizeLinear":
                axis = int(a.get("axis", 1))
                r = dequantize_linear(ins[0], ins[1].astype(np.float32).reshape(-1) if ins[1].size > 1
                                      else np.float32(ins[1].reshape(-1)[0]),
                                      0 if len(ins) < 3 or ins[2] is None else
                                      (ins[2].reshape(-1) if ins[2].size > 1 else int(ins[2].reshape(-1)[0])),
                                      axis=axis)
            elif node.op == "QuantizeLinear":
                zp = ins[2] if len(ins) > 2 and ins[2] is not None else np.zeros((), np.uint8)
                r = quantize_linear(ins[0].astype(np.float32), ins[1].reshape(-1) if ins[1].size > 1
                                    else np.float32(ins[1].reshape(-1)[0]),
                                    zp.reshape(-1) if zp.size > 1 else int(zp.reshape(-1)[0]),
                                    dtype=zp.dtype, axis=int(a.get("axis", 1)))
            elif node.op == "Identity":
                r = ins[0]
            elif node.op == "Reshape":
                r = ins[0].reshape(_reshape_shape(node, ins[0].shape, ins[1], a))
            elif node.op == "Flatten":
                ax = int(a.get("axis", 1)) % max(ins[0].ndim, 1) if ins[0].ndim else 0
                r = ins[0].reshape(int(np.prod(ins[0].shape[:ax])), -1)
            elif node.op == "Transpose":
                r = np.transpose(ins[0], a.get("perm"))
            elif node.op == "Concat":
                r = np.concatenate(ins, axis=int(a["axis"]))
            else:
                raise _err(node, "all inputs are constants; Tessera folds constants only "
                                 "through QuantizeLinear, DequantizeLinear, Identity, Reshape, "
                                 "Flatten, Transpose and Concat")
        except UnsupportedError:
            raise
        except Exception as e:   # noqa: BLE001 - any numpy failure is a model error
            raise _err(node, f"cannot fold constant inputs: {e}") from None
        self.consts[node.outputs[0]] = np.asarray(r)

    def op_Constant(self, node):
        a = node.attrs
        if "value" in a:
            self.consts[node.outputs[0]] = np.asarray(a["value"])
        elif "value_float" in a:
            self.consts[node.outputs[0]] = np.asarray(a["value_float"], np.float32)
        elif "value_int" in a:
            self.consts[node.outputs[0]] = np.asarray(a["value_int"], np.int64)
        elif "value_floats" in a:
            self.consts[node.outputs[0]] = np.asarray(a["value_floats"], np.float32)
        elif "value_ints" in a:
            self.consts[node.outputs[0]] = np.asarray(a["value_ints"], np.int64)
        else:
            raise _err(node, f"Constant with attribute(s) {sorted(a)} is not supported")

    # -- QuantizeLinear / DequantizeLinear --------------------------------------------------
    def _axis_params(self, node, x: Value, scale, zp):
        if scale.size == 1 and zp.size == 1:
            return 1, 1, np.float32(scale[0]), int(zp[0])
        axis = int(node.attrs.get("axis", 1))
        if not -len(x.shape) <= axis < len(x.shape):
            raise _err(node, f"axis {axis} is out of range for input shape {list(x.shape)}")
        axis %= len(x.shape)
        if self.batched and axis == 0:
            raise NotSeparable("per-axis quantization along the batch axis")
        c = x.shape[axis]
        if scale.size not in (1, c) or zp.size not in (1, c):
            raise _err(node, f"per-axis scale/zero point have {scale.size}/{zp.size} values but "
                             f"axis {axis} of {list(x.shape)} has {c}")
        inner = int(np.prod(x.shape[axis + 1:], dtype=np.int64))
        return c, inner, np.broadcast_to(scale, (c,)).astype(np.float32), \
            np.broadcast_to(zp, (c,)).astype(np.int64)

    def op_QuantizeLinear(self, node):
        a = node.attrs
        if int(a.get("block_size", 0)):
            raise _err(node, "blocked quantization (block_size) is not supported")
        x = self.act(node, node.inputs[0])
        if x.dtype != "float32":
            raise _err(node, f"input {x.name!r} is {x.dtype}; QuantizeLinear needs float32")
        scale = self.scale(node, node.inputs[1], "y_scale")
        zname = node.inputs[2] if len(node.inputs) > 2 else ""
        if zname:
            zp, zdt = self.zero_point(node, zname, "y_zero_point", np.uint8)
        else:
            od = int(a.get("output_dtype", 0))
            zdt = np.dtype(np_dtype(od, f"{node.where} output_dtype")) if od else np.dtype(np.uint8)
            zp = np.zeros(1, np.int64)
        if zdt not in (np.int8, np.uint8):
            raise _err(node, f"output type {zdt.name} is not supported (int8 or uint8)")
        c, inner, s, z = self._axis_params(node, x, scale, zp)
        self.emit("quant", node, [x.name], node.outputs[0], x.shape, zdt.name,
                  channels=c, inner=inner, scale=s, zero_point=z)

    def op_DequantizeLinear(self, node):
        a = node.attrs
        if int(a.get("block_size", 0)):
            raise _err(node, "blocked quantization (block_size) is not supported")
        x = self.act(node, node.inputs[0])
        if x.dtype not in ("int8", "uint8", "int32"):
            raise _err(node, f"input {x.name!r} is {x.dtype}; DequantizeLinear needs int8, uint8 "
                             "or int32")
        if int(a.get("output_dtype", 1)) not in (0, 1):
            raise _err(node, "only float32 output is supported")
        scale = self.scale(node, node.inputs[1], "x_scale")
        zname = node.inputs[2] if len(node.inputs) > 2 else ""
        zp, _ = self.zero_point(node, zname, "x_zero_point", x.dtype)
        c, inner, s, z = self._axis_params(node, x, scale, zp)
        self.emit("dequant", node, [x.name], node.outputs[0], x.shape, "float32",
                  channels=c, inner=inner, scale=s, zero_point=z)

    # -- convolutions -----------------------------------------------------------------------
    def _conv(self, node, x_name, x_zp, w_name, w_zp, bias, out):
        """out: ("rq", multiplier[M], y_zp, y_dtype) or ("int32",)."""
        a = node.attrs
        x = self.act(node, x_name)
        if x.dtype not in ("int8", "uint8"):
            raise _err(node, f"input {x.name!r} is {x.dtype}; expected int8 or uint8")
        w = self.const(node, w_name, "weight")
        if w.dtype not in (np.int8, np.uint8):
            raise _err(node, f"weight {w_name!r} has type {w.dtype.name}; expected int8 or uint8")
        (n, c, h, wd), one_d = _spatial(node, x.shape)
        if w.ndim != len(x.shape):
            raise _err(node, f"weight {w_name!r} has shape {list(w.shape)}, which does not match "
                             f"input shape {list(x.shape)}")
        w4 = w.reshape(w.shape[0], w.shape[1], 1, w.shape[2]) if one_d else w
        m, cg, kh, kw = w4.shape
        group = int(a.get("group", 1))
        ks = _ints(a.get("kernel_shape"))
        if ks is not None and list(ks) != list(w.shape[2:]):
            raise _err(node, f"kernel_shape {ks} does not match the weight shape {list(w.shape)}")
        if group < 1 or c % group or m % group or cg * group != c:
            raise _err(node, f"group {group} does not divide input channels {c} / output "
                             f"channels {m} consistently with weight shape {list(w.shape)}")
        attrs = dict(a)
        if one_d:
            for key, pad1 in (("strides", 1), ("dilations", 1)):
                if key in attrs:
                    attrs[key] = [pad1] + list(attrs[key])
            if "pads" in attrs:
                p = list(attrs["pads"])
                attrs["pads"] = [0, p[0], 0, p[1]]
        pb, pe, st, dl, (oh, ow) = _conv_geometry(node, (h, wd), (kh, kw), attrs)
        wzp = np.broadcast_to(w_zp, (m,)).astype(np.int64)
        if bias is not None:
            if bias.dtype != np.int32 or bias.size not in (1, m):
                raise _err(node, f"bias must be int32 with {m} values, got {bias.dtype.name} "
                                 f"shape {list(bias.shape)}")
            bias = np.broadcast_to(bias.reshape(-1), (m,)).astype(np.int64)
        shape = (n, m, oh, ow) if not one_d else (n, m, ow)
        dtype = out[3] if out[0] == "rq" else "int32"
        self.emit("conv", node, [x.name], node.outputs[0], shape, dtype,
                  w=w4, w_name=w_name, w_zp=wzp, x_zp=int(x_zp), bias=bias, group=group,
                  geom=dict(C=c, H=h, W=wd, M=m, cg=cg, kh=kh, kw=kw, sh=st[0], sw=st[1],
                            dh=dl[0], dw=dl[1], pt=pb[0], pl=pb[1], OH=oh, OW=ow),
                  out=out, x_dtype=x.dtype)

    def _rq_out(self, node, x_scale, w_scale, y_scale_name, y_zp_name, m, in_dtype, alpha=None):
        ys = self.scale(node, y_scale_name, "y_scale", 1)
        yz, ydt = self.zero_point(node, y_zp_name, "y_zero_point", in_dtype, 1)
        if ydt not in (np.int8, np.uint8):
            raise _err(node, f"output type {ydt.name} is not supported (int8 or uint8)")
        if alpha is not None:
            xs = (np.float32(alpha) * x_scale).astype(np.float32)
        else:
            xs = x_scale
        mult = np.broadcast_to(float32_multiplier(xs, w_scale, ys[0]), (m,)).astype(np.float32)
        if np.any(~np.isfinite(mult)) or np.any(mult < np.float32(2.0 ** -100)):
            raise _err(node, f"the output multiplier x_scale*w_scale/y_scale = {mult.tolist()[:4]} "
                             "is not a positive normal float32")
        return ("rq", mult, int(yz[0]), ydt.name)

    def op_QLinearConv(self, node):
        ins = node.inputs + [""] * (9 - len(node.inputs))
        x = self.act(node, ins[0])
        w = self.const(node, ins[3], "weight")
        m = w.shape[0]
        xs = self.scale(node, ins[1], "x_scale", 1)
        xz, _ = self.zero_point(node, ins[2], "x_zero_point", x.dtype, 1)
        ws = self.scale(node, ins[4], "w_scale", m)
        wz, _ = self.zero_point(node, ins[5], "w_zero_point", w.dtype, m)
        if np.unique(wz).size > 1:
            raise _err(node, "per-channel weight zero points must all be equal (onnxruntime's "
                             "QLinearConv requires it)")
        out = self._rq_out(node, xs[0], ws, ins[6], ins[7], m, x.dtype)
        bias = self.const(node, ins[8], "bias") if ins[8] else None
        self._conv(node, ins[0], xz[0], ins[3], wz, bias, out)

    def op_ConvInteger(self, node):
        ins = node.inputs + [""] * (4 - len(node.inputs))
        x = self.act(node, ins[0])
        w = self.const(node, ins[1], "weight")
        xz, _ = self.zero_point(node, ins[2], "x_zero_point", x.dtype, 1)
        wz, _ = self.zero_point(node, ins[3], "w_zero_point", w.dtype, w.shape[0])
        self._conv(node, ins[0], xz[0], ins[1], wz, None, ("int32",))

    def op_Conv(self, node):
        if node.attrs.get("_not_fused"):
            raise _err(node, node.attrs["_not_fused"] + "; Tessera does not emulate float32 "
                             "Conv (it would not equal onnxruntime's result)")
        raise _err(node, "float32 Conv is not supported: Tessera runs Conv on int8/uint8 data, "
                         "as QLinearConv or ConvInteger, or between DequantizeLinear and "
                         "QuantizeLinear nodes (QDQ, e.g. from onnxruntime.quantization."
                         "quantize_static)")

    # -- matmuls ----------------------------------------------------------------------------
    def _matmul(self, node, a_name, a_zp, b_name, b_zp, bias, out, trans_b=False,
                trans_a=False, gemm=False):
        a = self.act(node, a_name)
        if a.dtype not in ("int8", "uint8"):
            raise _err(node, f"input A {a.name!r} is {a.dtype}; expected int8 or uint8")
        if trans_a:
            raise _err(node, "transA=1 is not supported")
        if len(a.shape) < 2:
            raise _err(node, f"input A has shape {list(a.shape)}; Tessera needs at least 2-D")
        b_const = self.is_const(b_name)
        if b_const:
            b = self.consts[b_name]
            if b.dtype not in (np.int8, np.uint8):
                raise _err(node, f"input B {b_name!r} has type {b.dtype.name}; expected int8 or uint8")
            if trans_b:
                b = b.T
            if b.ndim != 2:
                raise _err(node, f"constant B has shape {list(b.shape)}; Tessera supports a 2-D "
                                 "constant B (broadcast over A's leading axes)")
            b_shape, b_dtype = b.shape, b.dtype.name
        else:
            bv = self.act(node, b_name, "input B")
            if trans_b:
                raise _err(node, "transB=1 with a non-constant B is not supported")
            if bv.dtype not in ("int8", "uint8"):
                raise _err(node, f"input B {bv.name!r} is {bv.dtype}; expected int8 or uint8")
            if len(bv.shape) != len(a.shape) or bv.shape[:-2] != a.shape[:-2]:
                raise _err(node, f"non-constant B {list(bv.shape)} must have A's leading "
                                 f"dimensions {list(a.shape[:-2])}")
            b, b_shape, b_dtype = None, bv.shape[-2:], bv.dtype
        k, n = b_shape
        if a.shape[-1] != k:
            raise _err(node, f"inner dimensions differ: A is {list(a.shape)}, B is "
                             f"{list(b.shape if b is not None else bv.shape)}")
        bz = np.broadcast_to(b_zp, (n,)).astype(np.int64)
        if bias is not None:
            if bias.dtype != np.int32 or bias.size not in (1, n):
                raise _err(node, f"bias C must be int32 with 1 or {n} values (shape [N] or [1, N]), "
                                 f"got {bias.dtype.name} shape {list(bias.shape)}")
            bias = np.broadcast_to(bias.reshape(-1), (n,)).astype(np.int64)
        shape = tuple(a.shape[:-1]) + (n,)
        dtype = out[3] if out[0] == "rq" else "int32"
        inputs = [a.name] if b_const else [a.name, b_name]
        self.emit("matmul", node, inputs, node.outputs[0], shape, dtype,
                  b=b, b_name=b_name, b_dtype=b_dtype, a_zp=int(a_zp), b_zp=bz, bias=bias, out=out,
                  a_dtype=a.dtype, K=k, N=n)

    def op_QLinearMatMul(self, node):
        ins = node.inputs
        a = self.act(node, ins[0])
        n = (self.consts[ins[3]].shape[-1] if self.is_const(ins[3])
             else self.act(node, ins[3]).shape[-1])
        as_ = self.scale(node, ins[1], "a_scale", 1)
        az, _ = self.zero_point(node, ins[2], "a_zero_point", a.dtype, 1)
        bs = self.scale(node, ins[4], "b_scale", n)
        bz, _ = self.zero_point(node, ins[5], "b_zero_point", "uint8", n)
        out = self._rq_out(node, as_[0], bs, ins[6], ins[7], n, a.dtype)
        self._matmul(node, ins[0], az[0], ins[3], bz, None, out)

    def op_MatMulInteger(self, node):
        ins = node.inputs + [""] * (4 - len(node.inputs))
        a = self.act(node, ins[0])
        n = (self.consts[ins[1]].shape[-1] if self.is_const(ins[1])
             else self.act(node, ins[1]).shape[-1])
        az, _ = self.zero_point(node, ins[2], "a_zero_point", a.dtype, 1)
        bz, _ = self.zero_point(node, ins[3], "b_zero_point", "uint8", n)
        self._matmul(node, ins[0], az[0], ins[1], bz, None, ("int32",))

    def op_QGemm(self, node):
        a_ = node.attrs
        ins = node.inputs + [""] * (9 - len(node.inputs))
        a = self.act(node, ins[0])
        if not ins[7]:
            raise _err(node, "QGemm with a float32 output (no y_scale) is not supported")
        trans_b = bool(int(a_.get("transB", 0)))
        b = self.const(node, ins[3], "B")
        n = b.shape[0] if trans_b else b.shape[-1]
        if float(a_.get("beta", 1.0)) != 1.0:
            raise _err(node, f"beta = {a_.get('beta')} is not supported (only 1)")
        as_ = self.scale(node, ins[1], "a_scale", 1)
        az, _ = self.zero_point(node, ins[2], "a_zero_point", a.dtype, 1)
        bs = self.scale(node, ins[4], "b_scale", n)
        bz, _ = self.zero_point(node, ins[5], "b_zero_point", b.dtype, n)
        bias = self.const(node, ins[6], "C") if ins[6] else None
        out = self._rq_out(node, as_[0], bs, ins[7], ins[8], n, a.dtype,
                           alpha=float(a_.get("alpha", 1.0)))
        self._matmul(node, ins[0], az[0], ins[3], bz, bias, out, trans_b=trans_b,
                     trans_a=bool(int(a_.get("transA", 0))), gemm=True)

    def op_MatMul(self, node):
        if node.attrs.get("_not_fused"):
            raise _err(node, node.attrs["_not_fused"] + "; Tessera does not emulate float32 "
                             "MatMul (it would not equal onnxruntime's result)")
        raise _err(node, "float32 MatMul is not supported: Tessera runs MatMul on int8/uint8 data "
                         "(QLinearMatMul, MatMulInteger, or between DequantizeLinear and "
                         "QuantizeLinear nodes)")

    def op_Gemm(self, node):
        if node.attrs.get("_not_fused"):
            raise _err(node, node.attrs["_not_fused"] + "; Tessera does not emulate float32 "
                             "Gemm (it would not equal onnxruntime's result)")
        raise _err(node, "float32 Gemm is not supported: Tessera runs Gemm on int8/uint8 data "
                         "between DequantizeLinear and QuantizeLinear nodes (QDQ)")

    # -- pooling ----------------------------------------------------------------------------
    def op_MaxPool(self, node):
        a = node.attrs
        if len([o for o in node.outputs if o]) > 1:
            raise _err(node, "the Indices output of MaxPool is not supported")
        x = self.act(node, node.inputs[0])
        if x.dtype not in ("int8", "uint8", "float32"):
            raise _err(node, f"input is {x.dtype}; MaxPool supports int8, uint8 and float32")
        (n, c, h, w), one_d = _spatial(node, x.shape)
        ks = _ints(a.get("kernel_shape"))
        if ks is None:
            raise _err(node, "kernel_shape is required")
        attrs = dict(a)
        if one_d:
            ks = [1] + ks
            for key in ("strides", "dilations"):
                if key in attrs:
                    attrs[key] = [1] + list(attrs[key])
            if "pads" in attrs:
                p = list(attrs["pads"])
                attrs["pads"] = [0, p[0], 0, p[1]]
        if len(ks) != 2:
            raise _err(node, f"kernel_shape {ks} is not 1-D or 2-D")
        if int(a.get("storage_order", 0)):
            raise _err(node, "storage_order=1 is not supported")
        pb, pe, st, dl, (oh, ow) = _conv_geometry(node, (h, w), ks, attrs, kind="pool")
        shape = (n, c, oh, ow) if not one_d else (n, c, ow)
        self.emit("maxpool", node, [x.name], node.outputs[0], shape, x.dtype,
                  geom=dict(planes=n * c, H=h, W=w, OH=oh, OW=ow, kh=ks[0], kw=ks[1],
                            sh=st[0], sw=st[1], dh=dl[0], dw=dl[1], pt=pb[0], pl=pb[1]))

    def op_AveragePool(self, node):
        x = self.act(node, node.inputs[0])
        raise _err(node, f"AveragePool on {x.dtype} data is not supported yet (it needs "
                         "onnxruntime's float32 averaging; QLinearAveragePool is planned)")

    def op_GlobalAveragePool(self, node):
        x = self.act(node, node.inputs[0])
        raise _err(node, f"GlobalAveragePool on {x.dtype} data is not supported (float32 "
                         "arithmetic); use QLinearGlobalAveragePool (com.microsoft) or QDQ")

    def op_QLinearGlobalAveragePool(self, node):
        ins = node.inputs
        x = self.act(node, ins[0])
        if int(node.attrs.get("channels_last", 0)):
            raise _err(node, "channels_last=1 is not supported")
        if x.dtype not in ("int8", "uint8") or len(x.shape) < 3:
            raise _err(node, f"input must be int8/uint8 NCHW, got {x.dtype} {list(x.shape)}")
        xs = self.scale(node, ins[1], "x_scale", 1)
        xz, _ = self.zero_point(node, ins[2], "x_zero_point", x.dtype, 1)
        ys = self.scale(node, ins[3], "y_scale", 1)
        yz, ydt = self.zero_point(node, ins[4], "y_zero_point", x.dtype, 1)
        hw = int(np.prod(x.shape[2:]))
        mult = (xs[0] / (ys[0] * np.float32(hw))).astype(np.float32)
        shape = tuple(x.shape[:2]) + (1,) * (len(x.shape) - 2)
        self.emit("gap", node, [x.name], node.outputs[0], shape, ydt.name,
                  planes=x.shape[0] * x.shape[1], hw=hw, bias=-int(xz[0]) * hw,
                  out=("rq", np.array([mult], np.float32), int(yz[0]), ydt.name))


    # -- com.microsoft QLinearAdd / QLinearMul / QLinearAveragePool --------------------------
    def _qoperand(self, node, name, what, out_shape, dtype):
        """A QLinearAdd/QLinearMul operand against the per-sample output shape: ("const",
        bytes expanded to the output) or ("act", value name, rep, per) with element index
        ``(i // rep) % per`` (per = None: the whole tensor, any number of samples)."""
        if self.is_const(name):
            c = self.consts[name]
            if c.dtype != np.dtype(dtype):
                raise _err(node, f"{what} {name!r} is {c.dtype.name} but the other operand is "
                                 f"{dtype}; QLinear{node.op[7:]} needs one 8-bit type")
            if self.batched and c.ndim == len(out_shape) and c.shape[0] != 1:
                raise NotSeparable(f"{node.where}: constant {name!r} {list(c.shape)} varies "
                                   "along the batch axis")
            try:
                full = np.ascontiguousarray(np.broadcast_to(c, out_shape))
            except ValueError:
                raise _err(node, f"constant {what} {name!r} {list(c.shape)} does not broadcast "
                                 f"to the output {list(out_shape)}") from None
            return ("const", full.view(np.uint8).reshape(-1))
        v = self.act(node, name, what)
        if v.dtype != dtype:
            raise _err(node, f"{what} {name!r} is {v.dtype} but the other operand is {dtype}")
        size, total = v.size, int(np.prod(out_shape, dtype=np.int64))
        if tuple(v.shape) == tuple(out_shape):
            return ("act", v.name, 1, None)
        idx = np.broadcast_to(np.arange(size).reshape(v.shape), out_shape).reshape(-1)
        runs = np.flatnonzero(np.diff(idx)) + 1
        rep = int(runs[0]) if runs.size else total
        j = np.arange(total)
        if np.array_equal(idx, j // rep):
            return ("act", v.name, rep, None)
        if not self.batched and np.array_equal(idx, (j // rep) % size):
            return ("act", v.name, rep, size)
        raise _err(node, f"{what} {name!r} {list(v.shape)} broadcasts to {list(out_shape)} in a "
                         "pattern Tessera does not index on the tiles (supported for computed "
                         "operands: the output shape, one value per sample, or blocks such as "
                         "[C, 1, 1]; constants broadcast freely)")

    def _qlinear_binary(self, node):
        """com.microsoft QLinearAdd / QLinearMul (onnxruntime docs/ContribOperators.md: inputs
        A, A_scale, A_zero_point, B, B_scale, B_zero_point, C_scale, C_zero_point; per-tensor
        scales; numpy broadcasting) as onnxruntime's CPU kernels compute them
        (:mod:`tessera.golden_model.kernels.qlinear`). Emits one ``qlbin`` op.

        Raises
        ------
        UnsupportedError
            Mixed or non-8-bit types, per-axis scales or zero points, shapes that do not
            broadcast, or a broadcast of a computed operand the codelet cannot index.
        """
        op = node.op
        ins = node.inputs + [""] * (8 - len(node.inputs))
        names = (ins[0], ins[3])
        types = set()
        for nm in names:
            if self.is_const(nm):
                types.add(self.consts[nm].dtype.name)
            else:
                types.add(self.act(node, nm, "input").dtype)
        if len(types) != 1 or not types <= {"int8", "uint8"}:
            raise _err(node, f"inputs A and B are {sorted(types)}; {op} supports int8 or uint8 "
                             "(both the same type)")
        dt = types.pop()
        sa = self.scale(node, ins[1], "A_scale", 1)[0]
        za, _ = self.zero_point(node, ins[2], "A_zero_point", dt, 1)
        sb = self.scale(node, ins[4], "B_scale", 1)[0]
        zb, _ = self.zero_point(node, ins[5], "B_zero_point", dt, 1)
        sc = self.scale(node, ins[6], "C_scale", 1)[0]
        zc, zcdt = self.zero_point(node, ins[7], "C_zero_point", dt, 1)
        for z, zn, zi in ((za, "A_zero_point", 2), (zb, "B_zero_point", 5), (zc, "C_zero_point", 7)):
            if ins[zi] and self.consts[ins[zi]].dtype != np.dtype(dt):
                raise _err(node, f"{zn} is {self.consts[ins[zi]].dtype.name}, the data are {dt}")
        shapes = []
        for nm in names:
            if self.is_const(nm):
                shapes.append(tuple(self.consts[nm].shape))
            else:
                v = self.values[nm]
                shapes.append(((2,) + tuple(v.shape[1:])) if self.batched else tuple(v.shape))
        try:
            full = np.broadcast_shapes(*shapes)
        except ValueError:
            raise _err(node, f"input shapes {[list(x) for x in shapes]} do not broadcast") from None
        if self.batched:
            if not full or full[0] != 2:
                raise NotSeparable(f"{node.where}: the output does not keep the batch axis")
            out_shape = (1,) + tuple(full[1:])
        else:
            out_shape = tuple(full)
        kind = ort_broadcast_kind(*shapes)
        za, zb, zc = int(za[0]), int(zb[0]), int(zc[0])
        # x: the operand of the last fused multiply-add (onnxruntime's kernel input A)
        if op == "QLinearAdd" and kind == "scalar_a":
            x = (names[1], "B", sb, zb)
            u = (names[0], "A", sa, za)
        else:
            x = (names[0], "A", sa, za)
            u = (names[1], "B", sb, zb)
        xo = self._qoperand(node, x[0], x[1], out_shape, dt)
        uo = self._qoperand(node, u[0], u[1], out_shape, dt)
        xorv = 0
        if node.attrs.get("_u8_domain") and dt == "int8":
            # onnxruntime converted these int8 Q/DQ pairs to uint8: codes and zero points + 128
            xorv, dt = 0x80, "uint8"
            x, u = (x[0], x[1], x[2], x[3] + 128), (u[0], u[1], u[2], u[3] + 128)
            zc += 128
        qmin, qmax = qrange(dt)
        codes = (np.arange(256, dtype=np.uint8) ^ xorv).astype(np.uint8).view(dt).astype(np.float32)
        if op == "QLinearAdd":
            rx, ru = np.float32(x[2] / sc), np.float32(u[2] / sc)
            f = qlinear_add_fixed(rx, x[3], ru, u[3], zc)
            tab = fma_float32(codes, ru, f).view(np.int32)
            r, zcf = rx, np.float32(0)
        else:
            r = np.float32(np.float32(sa * sb) / sc)
            tab, zcf = None, np.float32(zc)
        for what, v in (("the multiplier", r),):
            if not np.isfinite(v) or v == 0:
                raise _err(node, f"{what} of the scales is {float(v)}, not a finite nonzero float32")
        inputs = [o[1] for o in (xo, uo) if o[0] == "act"]
        if op == "QLinearMul":
            zcf = np.float32(zc)
        fx = _qlbin_fast_table(op, codes, r, tab, zc)
        self.emit("qlbin", node, inputs, node.outputs[0], out_shape, "int8" if xorv else dt,
                  op=0 if op == "QLinearAdd" else 1, x=xo, u=uo, tab=tab, xorv=xorv, fx=fx,
                  r=int(np.float32(r).view(np.uint32)), zc=int(zcf.view(np.uint32)),
                  zx=x[3], zu=u[3], lo=qmin, hi=qmax, is_signed=int(dt == "int8"))

    def op_QLinearAdd(self, node):
        """com.microsoft QLinearAdd (see :meth:`_qlinear_binary`)."""
        self._qlinear_binary(node)

    def op_QLinearMul(self, node):
        """com.microsoft QLinearMul (see :meth:`_qlinear_binary`)."""
        self._qlinear_binary(node)

    def op_QLinearAveragePool(self, node):
        """com.microsoft QLinearAveragePool (onnxruntime docs/ContribOperators.md; kernel
        ``contrib_ops/cpu/quantization/qlinear_pool.cc``): NCHW 1-D or 2-D average pooling of
        int8/uint8 data with AveragePool's attributes (``auto_pad``, ``ceil_mode``,
        ``count_include_pad``, ``kernel_shape``, ``pads``, ``strides``) and per-tensor
        x/y scales and zero points. A kernel covering the whole image without padding takes
        onnxruntime's global-average path (a ``gap`` op); else one ``qlavgpool`` op.

        Raises
        ------
        UnsupportedError
            ``channels_last=1``, dilations, 3-D pooling, other types, a window without input
            elements.
        """
        a = node.attrs
        ins = node.inputs + [""] * (5 - len(node.inputs))
        x = self.act(node, ins[0])
        if int(a.get("channels_last", 0)):
            raise _err(node, "channels_last=1 is not supported (NCHW only)")
        if x.dtype not in ("int8", "uint8"):
            raise _err(node, f"input is {x.dtype}; QLinearAveragePool needs int8 or uint8")
        (n, c, h, w), one_d = _spatial(node, x.shape)
        ks = _ints(a.get("kernel_shape"))
        if ks is None:
            raise _err(node, "kernel_shape is required")
        if len(ks) != len(x.shape) - 2:
            raise _err(node, f"kernel_shape {ks} does not match the input shape {list(x.shape)}")
        if any(d != 1 for d in (_ints(a.get("dilations")) or [])):
            raise _err(node, f"dilations {a.get('dilations')} are not supported (onnxruntime's "
                             "QLinearAveragePool has none)")
        xs = self.scale(node, ins[1], "x_scale", 1)[0]
        xz, _ = self.zero_point(node, ins[2], "x_zero_point", x.dtype, 1)
        ys = self.scale(node, ins[3], "y_scale", 1)[0]
        yz, ydt = self.zero_point(node, ins[4], "y_zero_point", x.dtype, 1)
        if ydt.name != x.dtype:
            raise _err(node, f"y_zero_point is {ydt.name} but the input is {x.dtype}")
        attrs = dict(a)
        if one_d:
            ks = [1] + ks
            if "strides" in attrs:
                attrs["strides"] = [1] + list(attrs["strides"])
            if "pads" in attrs:
                p = list(attrs["pads"])
                attrs["pads"] = [0, p[0], 0, p[1]]
        attrs.pop("dilations", None)
        pb, pe, st, _, (oh, ow) = _conv_geometry(node, (h, w), ks, attrs, kind="pool")
        shape = (n, c, oh, ow) if not one_d else (n, c, ow)
        qmin, qmax = qrange(x.dtype)
        if [ks[0], ks[1]] == [h, w] and not any(pb) and not any(pe):
            # onnxruntime takes its global average pool path (int32 sums)
            mult = (xs / (ys * np.float32(h * w))).astype(np.float32)
            self.emit("gap", node, [x.name], node.outputs[0], shape, x.dtype,
                      planes=n * c, hw=h * w, bias=-int(xz[0]) * h * w,
                      out=("rq", np.array([mult], np.float32), int(yz[0]), x.dtype))
            return
        cip = int(a.get("count_include_pad", 0))
        for o, size, k, s_, p0 in ((oh, h, ks[0], st[0], pb[0]), (ow, w, ks[1], st[1], pb[1])):
            for i in range(o):
                lo_, hi_ = max(i * s_ - p0, 0), min(i * s_ - p0 + k, size)
                if hi_ <= lo_:
                    raise _err(node, f"output position {i} has a window with no input element "
                                     "(onnxruntime would divide by a zero or negative count); "
                                     "not supported")
        codes = np.arange(256, dtype=np.uint8).view(x.dtype).astype(np.int64)
        dtab = (xs * (codes - int(xz[0])).astype(np.float32)).astype(np.float32)
        xorv, yzv = 0, int(yz[0])
        if a.get("_u8_domain") and x.dtype == "int8":
            # onnxruntime converted these int8 Q/DQ pairs to uint8: output zero point + 128
            xorv, yzv, (qmin, qmax) = 0x80, yzv + 128, qrange("uint8")
        self.emit("qlavgpool", node, [x.name], node.outputs[0], shape, x.dtype,
                  geom=dict(planes=n * c, H=h, W=w, OH=oh, OW=ow, kh=ks[0], kw=ks[1],
                            sh=st[0], sw=st[1], pt=pb[0], pl=pb[1]),
                  dtab=dtab.view(np.int32), cip=cip, ysc=int(np.float32(ys).view(np.uint32)),
                  yz=int(np.float32(yzv).view(np.uint32)), lo=qmin, hi=qmax, xorv=xorv)

    def op_QLinearSoftmax(self, node):
        """com.microsoft QLinearSoftmax (onnxruntime docs/ContribOperators.md; kernel
        ``contrib_ops/cpu/quantization/qlinear_softmax.cc``; attributes ``opset`` (required)
        and ``axis``), also the fused DequantizeLinear -> Softmax -> QuantizeLinear. One
        ``qlsoftmax`` op: a host lookup table of onnxruntime's exp values
        (:func:`~tessera.golden_model.kernels.qlinear.qlinear_softmax_table`) and float32
        sums and divisions in soft float.

        Raises
        ------
        UnsupportedError
            Other types, a missing ``opset``, or scales for which onnxruntime's float32
            intermediates overflow (its results are then not meaningful).
        """
        a = node.attrs
        ins = node.inputs + [""] * (5 - len(node.inputs))
        x = self.act(node, ins[0])
        if x.dtype not in ("int8", "uint8"):
            raise _err(node, f"input is {x.dtype}; QLinearSoftmax needs int8 or uint8")
        if a.get("_from_qdq"):
            opset = next((int(o.version) for o in self.model.opset_import
                          if o.domain in ("", "ai.onnx")), 13)
        elif "opset" in a:
            opset = int(a["opset"])
        else:
            raise _err(node, "the opset attribute is required (onnxruntime's QLinearSoftmax)")
        r = len(x.shape)
        axis = int(a.get("axis", 1 if opset < 13 else -1))
        if not -r <= axis < r:
            raise _err(node, f"axis {axis} is out of range for rank {r}")
        axis %= r
        if self.batched and axis == 0:
            raise NotSeparable(f"{node.where}: softmax over the batch axis")
        xs = self.scale(node, ins[1], "x_scale", 1)[0]
        ys = self.scale(node, ins[3], "y_scale", 1)[0]
        yz, ydt = self.zero_point(node, ins[4], "y_zero_point", x.dtype, 1)
        if ydt.name != x.dtype:
            raise _err(node, f"y_zero_point is {ydt.name} but the input is {x.dtype}")
        shape = x.shape
        if opset < 13:
            rows, d, inner = int(np.prod(shape[:axis], dtype=np.int64)), \
                int(np.prod(shape[axis:], dtype=np.int64)), 1
        else:
            inner = int(np.prod(shape[axis + 1:], dtype=np.int64))
            d = int(shape[axis])
            rows = int(np.prod(shape[:axis], dtype=np.int64)) * inner
        tab = qlinear_softmax_table(xs, d, x.dtype == "int8")
        big_y = np.float32(np.floor(np.float32(np.float32(1.0) / ys)))
        fmax = float(np.finfo(np.float32).max)
        overflow = not (float(tab.max()) * float(big_y) < fmax
                        and float(tab.max()) * d * (1 + 2.0 ** -10) < fmax and big_y < 2.0 ** 30)
        if overflow:
            raise _err(node, f"with x_scale {float(xs)}, y_scale {float(ys)} and {d} elements "
                             "per row onnxruntime's float32 intermediates (exp table · "
                             "floor(1/y_scale), their sum) overflow; not supported")
        self.emit("qlsoftmax", node, [x.name], node.outputs[0], x.shape, x.dtype,
                  tab=tab.view(np.int32), rows=rows, D=d, inner=inner,
                  is_signed=int(x.dtype == "int8"), ysc=int(big_y.view(np.uint32)),
                  yz=int(yz[0]), hi=qrange(x.dtype)[1])

    # -- element-wise -----------------------------------------------------------------------
    def _key_bounds(self, node, x: Value, lo, hi):
        """Clamp bounds as element keys (see tso_data.c)."""
        if x.dtype in ("int8", "uint8"):
            qmin, qmax = qrange(x.dtype)
            lo = qmin if lo is None else max(qmin, min(qmax, int(np.ceil(lo))))
            hi = qmax if hi is None else max(qmin, min(qmax, int(np.floor(hi))))
            return lo, hi
        def key(v):
            b = int(np.asarray(v, np.float32).view(np.int32))
            return b ^ 0x7FFFFFFF if b < 0 else b
        klo = -(1 << 31) if lo is None else key(lo)
        khi = (1 << 31) - 1 if hi is None else key(hi)
        return klo, khi

    def op_Relu(self, node):
        x = self.act(node, node.inputs[0])
        if x.dtype not in ("int8", "uint8", "float32"):
            raise _err(node, f"input is {x.dtype}; Relu supports int8, uint8 and float32")
        lo, hi = self._key_bounds(node, x, 0 if x.dtype != "float32" else np.float32(0), None)
        if node.fused:   # DQ -> Relu -> Q: real 0 is the zero point
            zp = self._fused_zp(node)
            lo, hi = zp, qrange(x.dtype)[1]
        self.emit("clamp", node, [x.name], node.outputs[0], x.shape, x.dtype, lo=lo, hi=hi)

    def _fused_zp(self, node):
        # the zero point of the codes (DQ and Q share it): input 0 came from the DQ
        return int(self._fused_params(node)[1])

    def _fused_params(self, node):
        qp = node.attrs.get("_qparams")
        if qp is None:
            raise _err(node, "internal: missing quantization parameters")
        s = self.scale(node, qp[0], "y_scale", 1)[0]
        z = self.consts[qp[1]].reshape(-1)[0] if qp[1] else np.uint8(0)
        return s, z

    def op_Clip(self, node):
        x = self.act(node, node.inputs[0])
        a = node.attrs
        if x.dtype not in ("int8", "uint8", "float32"):
            raise _err(node, f"input is {x.dtype}; Clip supports int8, uint8 and float32")
        lo = hi = None
        if len(node.inputs) > 1 and node.inputs[1]:
            lo = self.const(node, node.inputs[1], "min").reshape(-1)[0]
        elif "min" in a:
            lo = a["min"]
        if len(node.inputs) > 2 and node.inputs[2]:
            hi = self.const(node, node.inputs[2], "max").reshape(-1)[0]
        elif "max" in a:
            hi = a["max"]
        if node.fused:
            s, z = self._fused_params(node)
            lo_q = None if lo is None else int(quantize_linear(np.float32(lo), s, z, dtype=z.dtype))
            hi_q = None if hi is None else int(quantize_linear(np.float32(hi), s, z, dtype=z.dtype))
            lo, hi = self._key_bounds(node, x, lo_q, hi_q)
        else:
            lo, hi = self._key_bounds(node, x, lo, hi)
        self.emit("clamp", node, [x.name], node.outputs[0], x.shape, x.dtype, lo=lo, hi=hi)

    def _binop(self, node, op):
        """Add / Mul (ONNX, opset 7+ multidirectional broadcasting): int8/uint8 wrapping (the low
        8 bits, as numpy computes them) or float32 (one IEEE-754 single operation per element,
        round half to even, as onnxruntime's CPU provider and numpy compute it)."""
        xa = node.inputs[0]
        xb = node.inputs[1]
        if self.is_const(xa) and not self.is_const(xb):
            xa, xb = xb, xa                  # both operations are commutative, also in float32
        a = self.act(node, xa)
        if a.dtype not in ("int8", "uint8", "float32"):
            raise _err(node, f"{node.op} on {a.dtype} is not supported (int8/uint8 wrapping "
                             "arithmetic and float32)")
        code = op + (2 if a.dtype == "float32" else 0)
        if self.is_const(xb):
            b = self.consts[xb]
            if b.dtype != np.dtype(a.dtype):
                raise _err(node, f"operand types differ: {a.dtype} and {b.dtype.name}")
            try:
                out = np.broadcast_shapes(a.shape, b.shape)
                bb = np.broadcast_to(b, a.shape)
            except ValueError:
                raise _err(node, f"constant of shape {list(b.shape)} does not broadcast to "
                                 f"{list(a.shape)}") from None
            if tuple(out) != tuple(a.shape):
                raise _err(node, f"the constant {list(b.shape)} would broadcast the computed "
                                 f"input {list(a.shape)} to {list(out)}; not supported")
            self.emit("binop", node, [a.name], node.outputs[0], a.shape, a.dtype, op=code,
                      b=np.ascontiguousarray(bb).view(np.uint8).reshape(-1))
        else:
            b = self.act(node, xb)
            if b.size > a.size:
                a, b = b, a
            if b.dtype != a.dtype or tuple(b.shape) != tuple(a.shape[len(a.shape) - len(b.shape):]) \
                    or (self.batched and b.shape != a.shape):
                raise _err(node, f"operands {list(a.shape)} {a.dtype} and {list(b.shape)} "
                                 f"{b.dtype} must have the same type, and the smaller one the "
                                 "trailing dimensions of the larger (other broadcasting of two "
                                 "computed tensors is not supported)")
            self.emit("binop", node, [a.name, b.name], node.outputs[0], a.shape, a.dtype,
                      op=code, b=None, bn=b.size)

    def op_Add(self, node):
        self._binop(node, 0)

    def op_Mul(self, node):
        self._binop(node, 1)

    # -- data movement ----------------------------------------------------------------------
    def op_Identity(self, node):
        x = self.act(node, node.inputs[0])
        self.emit("alias", node, [x.name], node.outputs[0], x.shape, x.dtype)

    def op_Reshape(self, node):
        x = self.act(node, node.inputs[0])
        shape = self.const(node, node.inputs[1], "shape")
        out = _reshape_shape(node, x.shape, shape, node.attrs)
        if self.batched:
            big = _reshape_shape(node, (2,) + tuple(x.shape[1:]), shape, node.attrs)
            if list(big) != [2] + list(out[1:]):
                raise NotSeparable(f"{node.where}: the target shape {shape.tolist()} does not "
                                   "keep the batch axis")
        self.emit("alias", node, [x.name], node.outputs[0], out, x.dtype)

    def op_Flatten(self, node):
        x = self.act(node, node.inputs[0])
        r = len(x.shape)
        axis = int(node.attrs.get("axis", 1))
        if not -r <= axis <= r:
            raise _err(node, f"axis {axis} is out of range for rank {r}")
        if axis < 0:
            axis += r
        out = (int(np.prod(x.shape[:axis], dtype=np.int64)), int(np.prod(x.shape[axis:], dtype=np.int64)))
        self.emit("alias", node, [x.name], node.outputs[0], out, x.dtype)

    def op_Transpose(self, node):
        x = self.act(node, node.inputs[0])
        r = len(x.shape)
        perm = _ints(node.attrs.get("perm")) or list(range(r))[::-1]
        if sorted(perm) != list(range(r)):
            raise _err(node, f"perm {perm} is not a permutation of 0..{r - 1}")
        if self.batched and perm[0] != 0:
            raise NotSeparable(f"{node.where}: perm {perm} moves the batch axis")
        if r > 4:
            raise _err(node, f"rank {r} transposes are not supported (at most 4-D)")
        out = tuple(x.shape[p] for p in perm)
        self.emit("copy", node, [x.name], node.outputs[0], out, x.dtype, mode="transpose",
                  perm=perm, in_shape=x.shape)

    def op_Concat(self, node):
        xs = [self.act(node, n) for n in node.inputs if n]
        r = len(xs[0].shape)
        axis = int(node.attrs.get("axis"))
        if not -r <= axis < r:
            raise _err(node, f"axis {axis} is out of range for rank {r}")
        axis %= r
        if self.batched and axis == 0:
            raise NotSeparable(f"{node.where}: concatenation along the batch axis")
        for v in xs:
            if v.dtype != xs[0].dtype or len(v.shape) != r or \
                    any(v.shape[i] != xs[0].shape[i] for i in range(r) if i != axis):
                raise _err(node, f"input {v.name!r} {list(v.shape)} {v.dtype} does not match "
                                 f"{list(xs[0].shape)} {xs[0].dtype} outside axis {axis}")
        out = list(xs[0].shape)
        out[axis] = sum(v.shape[axis] for v in xs)
        self.emit("copy", node, [v.name for v in xs], node.outputs[0], out, xs[0].dtype,
                  mode="concat", axis=axis, in_shapes=[v.shape for v in xs])


def _fixed24(v) -> int:
    """floor(v * 2^24) of a finite float, exactly."""
    from fractions import Fraction
    return math.floor(Fraction(float(v)) * (1 << 24))


def _qlbin_fast_table(op, codes, r, tab, zc):
    """``tso_qlbin``'s fast-path table (see the codelet), or None when the values are too large
    for its 64-bit fixed point (then every element takes the soft-float path).

    QLinearAdd: the 256 values ``floor(code · r · 2^24)`` by byte, then ``floor(tab · 2^24)``
    (int64 little-endian, as int32 word pairs). QLinearMul: ``[mantissa of r, shift, zc · 2^24]``
    with ``p · r · 2^24 = (p · mantissa) · 2^shift``."""
    limit = 1 << 60
    if op == "QLinearAdd":
        from fractions import Fraction
        rf = Fraction(float(np.float32(r)))
        px = [math.floor(Fraction(float(c)) * rf * (1 << 24)) for c in codes]
        tx = [_fixed24(t) for t in np.asarray(tab, np.int32).view(np.float32)]
        vals = px + tx
        if max(abs(v) for v in vals) >= limit:
            return None
        return np.array(vals, np.int64).view(np.int32)
    bits = int(np.float32(r).view(np.uint32))
    ex, man = (bits >> 23) & 0xFF, bits & 0x7FFFFF
    if ex == 0 or ex == 0xFF:
        return None
    mant, sh = man | 0x800000, ex - 150 + 24
    if not -62 <= sh <= 20:
        return None
    zc64 = int(zc) << 24
    return np.concatenate([np.array([mant, sh], np.int64).astype(np.uint32).view(np.int32),
                           np.array([zc64], np.int64).view(np.int32)])


def _reshape_shape(node, in_shape, target, attrs):
    target = [int(t) for t in np.asarray(target).reshape(-1)]
    allowzero = int(attrs.get("allowzero", 0))
    out = []
    for i, t in enumerate(target):
        if t == 0 and not allowzero:
            if i >= len(in_shape):
                raise _err(node, f"shape entry {i} is 0 but the input has rank {len(in_shape)}")
            out.append(int(in_shape[i]))
        else:
            out.append(t)
    size = int(np.prod(in_shape, dtype=np.int64))
    if out.count(-1) > 1:
        raise _err(node, f"shape {target} has more than one -1")
    if -1 in out:
        rest = int(np.prod([d for d in out if d != -1], dtype=np.int64))
        if rest == 0 or size % rest:
            raise _err(node, f"cannot reshape {list(in_shape)} to {target}")
        out[out.index(-1)] = size // rest
    if int(np.prod(out, dtype=np.int64)) != size or any(d < 0 for d in out):
        raise _err(node, f"cannot reshape {list(in_shape)} ({size} elements) to {target}")
    return tuple(out)


def convert(model, *, constants=None, batch_mode="auto") -> IRGraph:
    """Map a checked ONNX model to the importer's operations.

    Parameters
    ----------
    model : onnx.ModelProto
        From :func:`tessera.toolchain.onnx.model.load_model`.
    constants : dict of str -> array, optional
        Graph inputs to compile in as constants (e.g. scales given as inputs).
    batch_mode : {"auto", "batched", "single"}
        ``batched``: axis 0 of every input is the batch; samples are independent and spread
        over the tiles. ``single``: the inputs are one sample of the declared shapes (run on
        one tile). ``auto``: batched if every graph input has a symbolic (or unknown) first
        dimension and the model keeps the batch axis, else single.

    Returns
    -------
    IRGraph

    Raises
    ------
    UnsupportedError
        An operator, attribute, data type or shape that is not supported (the message names the
        node and its op type).
    """
    g = model.graph
    constants = dict(constants or {})
    init_names = {t.name for t in g.initializer} | set(constants)
    graph_inputs = []
    declared = {}
    for vi in g.input:
        if vi.name in init_names:
            continue
        dt = np_dtype(vi.type.tensor_type.elem_type, f"graph input {vi.name!r}")
        if dt == "int64":
            raise UnsupportedError(f"graph input {vi.name!r} is int64; bind it as a constant")
        shape = value_shape(vi)
        if shape is None:
            raise UnsupportedError(f"graph input {vi.name!r} has no shape; Tessera needs ranked "
                                   "inputs (give the shape in the model)")
        declared[vi.name] = (shape, dt)
        graph_inputs.append((vi.name, shape, dt))
    for vi in g.output:
        np_dtype(vi.type.tensor_type.elem_type, f"graph output {vi.name!r}")
    nodes = [_Node(n.op_type, n.domain, node_label(n, i), list(n.input), list(n.output),
                   attributes(n)) for i, n in enumerate(g.node)]
    for n in nodes:
        if n.domain == "ai.onnx":
            n.domain = ""

    symbolic = bool(graph_inputs) and all(s[0] is None for _, s, _ in graph_inputs if s)
    modes = {"auto": [True, False] if symbolic else [False], "batched": [True],
             "single": [False]}[batch_mode]
    last = None
    for batched in modes:
        ins = []
        for name, shape, dt in graph_inputs:
            if batched:
                if not shape:
                    last = NotSeparable(f"graph input {name!r} is a scalar")
                    break
                sh = [1] + list(shape[1:])
            else:
                sh = list(shape)
            if any(d is None for d in sh):
                raise UnsupportedError(f"graph input {name!r} has symbolic dimensions "
                                       f"{[d if d is not None else '?' for d in shape]}; only "
                                       "the first (batch) dimension may be symbolic")
            ins.append((name, tuple(sh), dt))
        else:
            conv = _Converter(model, constants, batched)
            fused = _fuse_qdq([_Node(n.op, n.domain, n.name, list(n.inputs), list(n.outputs),
                                     dict(n.attrs)) for n in nodes], conv.consts,
                              set(conv.graph_outputs))
            try:
                ops = conv.run(fused, ins)
            except NotSeparable as e:
                last = e
                continue
            for o in conv.graph_outputs:
                if o not in conv.values:
                    raise UnsupportedError(f"graph output {o!r} is a constant or not produced; "
                                           "Tessera outputs must be computed")
            return IRGraph(conv.values, ops, [n for n, _, _ in ins], list(conv.graph_outputs),
                           batched, declared)
    raise UnsupportedError(f"the model cannot be split by batch ({last}) and its inputs have a "
                           "symbolic batch dimension; give the inputs fixed shapes")
