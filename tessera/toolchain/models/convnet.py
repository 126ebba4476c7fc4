"""A digits CNN given as a layer list: parsing, float64 numpy training passes, ONNX export.

The layer list (``CnnConfig.arch``, :mod:`tessera.toolchain.models.digits_cnn`) is a
comma-separated string, input ``[N, 1, 8, 8]``::

    c3:8,c3:48*,c3:56*,c2s2:16*,k4*

* ``c<k>[s<s>]:<C>`` — Conv k×k, stride s (default 1), pads ``k // 2`` for stride 1 and 0
  otherwise, ``C`` output channels, then Relu;
* ``k<k>`` — the classifier: Conv k×k without padding to 10 channels (no Relu), whose output
  map must be 1 × 1, then Flatten to the logits ``[N, 10]``; it must be the last layer;
* a trailing ``*`` marks a layer whose weights are block-pruned in the sparse variants.

There is no pooling: the reduction is strided convolutions and the classifier's kernel, so
every layer but the input QuantizeLinear and the output DequantizeLinear runs on the matrix
engine (docs/compiler.md, "Why 90 % sparsity ...").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

__all__ = ["Layer", "parse_arch", "ConvNet", "convnet_onnx"]


@dataclass(frozen=True)
class Layer:
    """One convolution of the layer list.

    Parameters
    ----------
    k, stride, pad : int
        Square kernel, stride and padding (all four sides).
    cout : int
        Output channels.
    relu : bool
        Followed by Relu (all but the classifier).
    pruned : bool
        Block-pruned in the sparse variants.
    """
    k: int
    stride: int
    pad: int
    cout: int
    relu: bool
    pruned: bool


def parse_arch(spec: str, hw: int = 8) -> list[Layer]:
    """Parse a layer list (module docstring) for an ``hw × hw`` input.

    Raises
    ------
    ValueError
        A malformed layer (named, with its position), a classifier that is not last or whose
        output map is not 1 × 1, a layer whose output map would be empty.
    """
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"CnnConfig.arch must be a non-empty layer list, not {spec!r}")
    toks = [t.strip() for t in spec.split(",")]
    out, size = [], hw
    for i, tok in enumerate(toks):
        pruned = tok.endswith("*")
        t = tok[:-1] if pruned else tok
        m = re.fullmatch(r"c([1-9]\d*)(?:s([1-9]\d*))?:([1-9]\d*)", t)
        mk = re.fullmatch(r"k([1-9]\d*)", t)
        if m:
            k, s, c = int(m[1]), int(m[2] or 1), int(m[3])
            lay = Layer(k, s, k // 2 if s == 1 else 0, c, True, pruned)
        elif mk:
            k = int(mk[1])
            if i != len(toks) - 1:
                raise ValueError(f"layer {i} {tok!r} of {spec!r}: the classifier must be last")
            lay = Layer(k, 1, 0, 10, False, pruned)
        else:
            raise ValueError(f"layer {i} {tok!r} of {spec!r}: expected c<k>[s<s>]:<C> or "
                             "k<k>, optionally followed by *")
        size = (size + 2 * lay.pad - lay.k) // lay.stride + 1
        if size < 1:
            raise ValueError(f"layer {i} {tok!r} of {spec!r}: empty output map")
        out.append(lay)
    if out[-1].relu:
        raise ValueError(f"{spec!r} must end with the classifier k<k>")
    if size != 1:
        raise ValueError(f"{spec!r}: the classifier's output map is {size}x{size}, not 1x1")
    return out


def _im2col(x, k, s, pad):
    """NHWC ``[B, H, W, C]`` → patches ``[B, OH, OW, C·k·k]`` in the order (c, kh, kw) of an
    ONNX weight ``[M, C, k, k]`` reshaped to ``[M, C·k·k]``."""
    xp = np.pad(x, ((0, 0), (pad, pad), (pad, pad), (0, 0))) if pad else x
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::s, ::s]
    b, oh, ow = win.shape[:3]
    return win.reshape(b, oh, ow, -1)


def _col2im(dp, shape, k, s, pad):
    """Adjoint of :func:`_im2col`: ``[B, OH, OW, C·k·k]`` → ``[B, H, W, C]``."""
    b, h, w, c = shape
    oh, ow = dp.shape[1:3]
    d = dp.reshape(b, oh, ow, c, k, k)
    out = np.zeros((b, h + 2 * pad, w + 2 * pad, c), dp.dtype)
    for i in range(k):
        for j in range(k):
            out[:, i:i + s * (oh - 1) + 1:s, j:j + s * (ow - 1) + 1:s] += d[..., i, j]
    return out[:, pad:pad + h, pad:pad + w]


@dataclass(eq=False)
class ConvNet:
    """Float32 weights of a layer-list CNN: ``w[i]`` ``[M, C, k, k]`` (ONNX layout), ``b[i]``
    ``[M]``; :meth:`forward` gives logits ``[B, 10]`` for input ``[B, 1, 8, 8]``. float32 (not
    the default network's float64): its ~2 M MACs per image train in minutes on a shared
    2-core machine; the results are still deterministic for a given configuration."""
    layers: list
    w: list
    b: list

    @classmethod
    def init(cls, layers, rng) -> "ConvNet":
        """He-normal weights, zero biases, drawn layer by layer from ``rng``."""
        w, b, c = [], [], 1
        for lay in layers:
            w.append(rng.normal(0, np.sqrt(2 / (lay.k * lay.k * c)),
                                (lay.cout, c, lay.k, lay.k)).astype(np.float32))
            b.append(np.zeros(lay.cout, np.float32))
            c = lay.cout
        return cls(list(layers), w, b)

    def arrays(self) -> dict:
        """``{"w0": .., "b0": .., ...}`` (the npz cache's keys)."""
        d = {}
        for i, (w, b) in enumerate(zip(self.w, self.b)):
            d[f"w{i}"], d[f"b{i}"] = w, b
        return d

    @classmethod
    def from_arrays(cls, layers, arrs) -> "ConvNet":
        n = len(layers)
        w = [np.asarray(arrs[f"w{i}"], np.float32) for i in range(n)]
        b = [np.asarray(arrs[f"b{i}"], np.float32) for i in range(n)]
        for i, (lay, wi) in enumerate(zip(layers, w)):
            if wi.shape[0] != lay.cout or wi.shape[2:] != (lay.k, lay.k):
                raise ValueError(f"w{i} has shape {wi.shape}, not [{lay.cout}, C, {lay.k}, "
                                 f"{lay.k}]")
        return cls(list(layers), w, b)

    def forward(self, x, cache=False):
        """Logits ``[B, 10]`` for float input ``[B, 1, 8, 8]`` (``cache``: also the
        per-layer (input shape, patches, pre-activation) for :meth:`grads`)."""
        a = np.asarray(x, dtype=np.float32).transpose(0, 2, 3, 1)          # NHWC
        caches = []
        for lay, w, b in zip(self.layers, self.w, self.b):
            p = _im2col(a, lay.k, lay.stride, lay.pad)
            z = p @ w.reshape(lay.cout, -1).T + b
            caches.append((a.shape, p, z))
            a = np.maximum(z, 0) if lay.relu else z
        y = a.reshape(a.shape[0], -1)
        return (y, caches) if cache else y

    def predict(self, x) -> np.ndarray:
        """Class indices ``[B]`` (argmax of the logits)."""
        return self.forward(x).argmax(axis=1)

    def grads(self, x, onehot) -> dict:
        """Gradients of the mean softmax cross-entropy, keyed like :meth:`arrays`."""
        y, caches = self.forward(x, cache=True)
        n = y.shape[0]
        y = y - y.max(axis=1, keepdims=True)
        prob = np.exp(y)
        prob /= prob.sum(axis=1, keepdims=True)
        da = ((prob - onehot) / n).astype(np.float32).reshape(caches[-1][2].shape)
        g = {}
        for i in range(len(self.layers) - 1, -1, -1):
            lay, w = self.layers[i], self.w[i]
            shape, p, z = caches[i]
            dz = da * (z > 0) if lay.relu else da
            dzr = dz.reshape(-1, lay.cout)
            g[f"w{i}"] = (p.reshape(-1, p.shape[-1]).T @ dzr).T.reshape(w.shape)
            g[f"b{i}"] = dzr.sum(axis=0)
            if i:
                dp = (dzr @ w.reshape(lay.cout, -1)).reshape(p.shape)
                da = _col2im(dp, shape, lay.k, lay.stride, lay.pad)
        return g


def convnet_onnx(model: ConvNet, opset: int = 17):
    """The float32 ONNX graph of ``model``: input ``x`` ``[N, 1, 8, 8]``, output ``logits``
    ``[N, 10]``; nodes ``conv<i>`` (+ ``relu<i>``), the classifier ``fc`` and ``flatten``."""
    from onnx import helper, numpy_helper
    init, nodes, cur = [], [], "x"
    last = len(model.layers) - 1
    for i, (lay, w, b) in enumerate(zip(model.layers, model.w, model.b)):
        name = "fc" if i == last else f"conv{i + 1}"
        init += [numpy_helper.from_array(np.asarray(w, np.float32), f"w{i}"),
                 numpy_helper.from_array(np.asarray(b, np.float32), f"b{i}")]
        nodes.append(helper.make_node("Conv", [cur, f"w{i}", f"b{i}"], [f"c{i}"], name=name,
                                      kernel_shape=[lay.k, lay.k], pads=[lay.pad] * 4,
                                      strides=[lay.stride] * 2))
        cur = f"c{i}"
        if lay.relu:
            nodes.append(helper.make_node("Relu", [cur], [f"r{i}"], name=f"relu{i + 1}"))
            cur = f"r{i}"
    nodes.append(helper.make_node("Flatten", [cur], ["logits"], name="flatten", axis=1))
    from .digits_cnn import digits_model
    return digits_model(nodes, init, "digits_convnet", opset, producer="tessera.digits_cnn")
