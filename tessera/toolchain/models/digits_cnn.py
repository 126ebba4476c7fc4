"""The digits CNN: trained with numpy, exported to ONNX, quantized by onnxruntime.

Network (NCHW, float input ``pixel / 16``, shape ``[N, 1, 8, 8]``)::

    Conv 3x3 (1 -> C1, pad 1) -> Relu -> MaxPool 2x2 -> Conv 3x3 (C1 -> C2, pad 1) -> Relu
    -> MaxPool 2x2 -> Flatten -> Gemm (C2*2*2 -> 10)

With ``CnnConfig.arch`` set, the network is that layer list instead
(:mod:`tessera.toolchain.models.convnet`: strided convolutions and a classifier convolution, no
pooling, e.g. ``c3:8,c3:48*,c3:56*,c2s2:16*,k4*``); its ``*`` layers are the pruned ones.

Data: scikit-learn's bundled 8×8 digits and the fixed 75/25 split of
:func:`tessera.toolchain.models.digits.load_digits_split` (no download).

Training: float64 numpy, He initialisation, Adam on softmax cross-entropy with L2 decay,
mini-batches shuffled by ``numpy.random.default_rng(seed)``: deterministic for a given
:class:`CnnConfig`.

Block sparsity (popsparse's static mode): for ``sparsity > 0`` the trained dense network's
second convolution (78 % of the MACs), seen as the ``[K, C_out]`` matrix the matrix engine
multiplies (rows in the order (kh, kw, c_in) of the importer's padded NHWC input, the input
channels of each tap padded to a multiple of 8), is pruned in the engine's native 8×4 blocks
(:data:`BLOCK`: 8 input channels of one tap = one 8-byte streamed vector, docs/architecture.md
§12 — × 4 output channels = the lanes of one command on the ``small`` preset's P = 32 engine,
M = P / 8) by block L2 norm, smallest first, to the requested fraction of zero blocks, then
fine-tuned for ``finetune_epochs`` with the mask held fixed. A command skips a block (streams
only its stored blocks, ``K_GATHER``) only when all of its channels' weights in it are zero,
so this is the block that turns into cycles; smaller blocks (the dot4 kernels' 4×4) leave a
nonzero weight in most 8×4 blocks. The first convolution (9 weights per filter) and the fully
connected layer (10 outputs) stay dense: pruning them costs accuracy and saves almost no
cycles. The ONNX file stores them as dense tensors with zero blocks; the importer finds the
blocks itself.

Export and quantization: the float graph is built with ``onnx.helper`` and quantized with
``onnxruntime.quantization.quantize_static`` (QDQ format, int8 activations and weights,
per-channel weights, calibrated on the training split). Both files are produced here and cached
in ``tessera.paths.cache_root() / "onnx"`` (never committed), keyed by the configuration and the
package versions.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tessera.paths import cache_root

__all__ = ["CnnConfig", "FloatCNN", "train_cnn", "prune_blocks", "float_onnx", "quantize_onnx",
           "load_digits_cnn", "DigitsCnn", "pixels_to_input", "BLOCK", "SPARSITIES",
           "ARCH_8X8", "arch_config"]

#: Pruning block (K rows, output channels): the matrix engine's 8-byte vector of 8 input
#: channels at one tap x the 4 lanes of a P = 32 engine command (docs/architecture.md §12).
BLOCK = (8, 4)
#: The sparsity levels of the demo's sparse variants.
SPARSITIES = (0.5, 0.75, 0.9)
#: Bump when the training or export code changes.
VERSION = 2
#: The layer list whose big convolutions run on the 8×8 maps (docs/compiler.md, "Why 90 %
#: sparsity ..."): conv 3x3 1->8, 8->48, 48->56 at 8x8, conv 2x2 stride 2 56->16 (4x4), the
#: 4x4 classifier convolution; conv2..conv4 block-pruned in the sparse variants (conv1's 9
#: taps and the classifier stay dense: pruning them costs accuracy and saves almost no cycles —
#: the classifier's J = 1 commands are lane loads, and 90 % pruned it measured 87.6 % float).
ARCH_8X8 = "c3:8,c3:48*,c3:56*,c2s2:16*,k4"


def arch_config(sparsity: float = 0.0, arch: str = ARCH_8X8) -> "CnnConfig":
    """The :data:`ARCH_8X8` network's configuration: 15 dense epochs, 10 of fine-tuning."""
    return CnnConfig(arch=arch, epochs=15, finetune_epochs=10, sparsity=float(sparsity))


@dataclass(frozen=True, kw_only=True)
class CnnConfig:
    """Hyper-parameters (they key the cache).

    Parameters
    ----------
    c1, c2 : int
        Channels of the two convolutions.
    epochs : int
        Dense training epochs.
    finetune_epochs : int
        Epochs of masked fine-tuning after pruning (sparse variants).
    batch_size : int
    learning_rate : float
        Adam step size.
    weight_decay : float
    seed : int
    sparsity : float
        Fraction of zero :data:`BLOCK` (8×4) blocks in the pruned convolutions' weights
        (0 = dense): conv2, or with ``arch`` the layers marked ``*``.
    arch : str
        ``""``: the network above (``c1``, ``c2``); else a layer list
        (:func:`tessera.toolchain.models.convnet.parse_arch`; ``c1``, ``c2`` are then unused).
    """
    c1: int = 8
    c2: int = 16
    epochs: int = 40
    finetune_epochs: int = 40
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 1e-4
    seed: int = 0
    sparsity: float = 0.0
    arch: str = ""

    def __post_init__(self):
        for n in ("c1", "c2", "epochs", "batch_size"):
            v = getattr(self, n)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"CnnConfig.{n} must be a positive int, not {v!r}")
        if not 0.0 <= self.sparsity < 1.0:
            raise ValueError(f"CnnConfig.sparsity must be in [0, 1), not {self.sparsity!r}")
        if self.arch:
            from .convnet import parse_arch
            parse_arch(self.arch)

    def layers(self):
        """The parsed ``arch`` (:class:`tessera.toolchain.models.convnet.Layer` list), or None
        for the default network."""
        from .convnet import parse_arch
        return parse_arch(self.arch) if self.arch else None

    def cache_key(self) -> str:
        import onnx
        import onnxruntime
        extra = {"prune_block": list(BLOCK)} if self.sparsity > 0 else {}
        fields = dataclasses.asdict(self)
        if not self.arch:
            del fields["arch"]           # the default network keeps its cache keys
        elif self.sparsity == 0:
            fields["arch"] = self.arch.replace("*", "")   # the prune marks: sparse only
        blob = json.dumps({"v": VERSION, "onnx": onnx.__version__, "ort": onnxruntime.__version__,
                           **extra, **fields}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def pixels_to_input(pixels) -> np.ndarray:
    """Digits pixels ``[B, 64]`` (0..16) → float32 model input ``[B, 1, 8, 8]`` (``pixel / 16``)."""
    x = np.asarray(pixels, dtype=np.float64).reshape(-1, 1, 8, 8) / 16.0
    return x.astype(np.float32)


# ---------------------------------------------------------------------------------------------
# numpy training
# ---------------------------------------------------------------------------------------------
def _im2col(x, pad=1):
    """[B, C, H, W] -> patches [B, H, W, C*9] (3x3, stride 1), order (c, kh, kw)."""
    b, c, h, w = x.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (3, 3), axis=(2, 3))  # [B,C,H,W,3,3]
    return win.transpose(0, 2, 3, 1, 4, 5).reshape(b, h, w, c * 9)


def _col2im(dcols, shape, pad=1):
    """Adjoint of :func:`_im2col`: [B, H, W, C*9] -> [B, C, H, W]."""
    b, c, h, w = shape
    d = dcols.reshape(b, h, w, c, 3, 3)
    out = np.zeros((b, c, h + 2 * pad, w + 2 * pad))
    for i in range(3):
        for j in range(3):
            out[:, :, i:i + h, j:j + w] += d[:, :, :, :, i, j].transpose(0, 3, 1, 2)
    return out[:, :, pad:pad + h, pad:pad + w]


def _pool(x):
    b, c, h, w = x.shape
    r = x.reshape(b, c, h // 2, 2, w // 2, 2)
    m = r.max(axis=(3, 5))
    mask = (r == m[:, :, :, None, :, None])
    mask = mask / mask.sum(axis=(3, 5), keepdims=True)       # ties share the gradient
    return m, mask


@dataclass(eq=False)
class FloatCNN:
    """Float64 weights in ONNX layouts: ``w1 [C1,1,3,3]``, ``w2 [C2,C1,3,3]``, ``w3 [C2*4, 10]``
    (Gemm B, no transpose), biases ``b1, b2, b3``."""
    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray
    w3: np.ndarray
    b3: np.ndarray

    def arrays(self) -> dict:
        return dataclasses.asdict(self)

    def forward(self, x, cache=False):
        """Logits [B, 10] for float input [B, 1, 8, 8]."""
        x = np.asarray(x, dtype=np.float64)
        b = x.shape[0]
        c1 = self.w1.shape[0]
        p1 = _im2col(x)
        z1 = (p1 @ self.w1.reshape(c1, -1).T + self.b1).transpose(0, 3, 1, 2)
        a1 = np.maximum(z1, 0)
        m1, k1 = _pool(a1)
        p2 = _im2col(m1)
        c2 = self.w2.shape[0]
        z2 = (p2 @ self.w2.reshape(c2, -1).T + self.b2).transpose(0, 3, 1, 2)
        a2 = np.maximum(z2, 0)
        m2, k2 = _pool(a2)
        f = m2.reshape(b, -1)
        y = f @ self.w3 + self.b3
        if cache:
            return y, (x, p1, z1, k1, m1, p2, z2, k2, m2, f)
        return y

    def predict(self, x) -> np.ndarray:
        return self.forward(x).argmax(axis=1)


def _grads(model: FloatCNN, x, onehot):
    y, (x, p1, z1, k1, m1, p2, z2, k2, m2, f) = model.forward(x, cache=True)
    b = x.shape[0]
    y = y - y.max(axis=1, keepdims=True)
    prob = np.exp(y)
    prob /= prob.sum(axis=1, keepdims=True)
    dy = (prob - onehot) / b
    g = {"w3": f.T @ dy, "b3": dy.sum(axis=0)}
    df = dy @ model.w3.T
    dm2 = df.reshape(m2.shape)
    da2 = (dm2[:, :, :, None, :, None] * k2).reshape(z2.shape)
    dz2 = da2 * (z2 > 0)
    c2 = model.w2.shape[0]
    dz2r = dz2.transpose(0, 2, 3, 1).reshape(-1, c2)
    g["w2"] = (dz2r.T @ p2.reshape(-1, p2.shape[-1])).reshape(model.w2.shape)
    g["b2"] = dz2r.sum(axis=0)
    dp2 = (dz2r @ model.w2.reshape(c2, -1)).reshape(p2.shape)
    dm1 = _col2im(dp2, m1.shape)
    da1 = (dm1[:, :, :, None, :, None] * k1).reshape(z1.shape)
    dz1 = da1 * (z1 > 0)
    c1 = model.w1.shape[0]
    dz1r = dz1.transpose(0, 2, 3, 1).reshape(-1, c1)
    g["w1"] = (dz1r.T @ p1.reshape(-1, p1.shape[-1])).reshape(model.w1.shape)
    g["b1"] = dz1r.sum(axis=0)
    return g


def _adam(model, x, y, epochs, cfg: CnnConfig, rng, masks=None):
    """Adam on ``model`` (a :class:`FloatCNN` or a :class:`~.convnet.ConvNet`), the ``masks``
    (same keys as ``model.arrays()``) held fixed."""
    from .convnet import ConvNet
    if isinstance(model, ConvNet):
        grads = model.grads

        def put(k, v):
            (model.w if k[0] == "w" else model.b)[int(k[1:])] = v
    else:
        grads = lambda xb, ob: _grads(model, xb, ob)
        put = lambda k, v: setattr(model, k, v)
    params = model.arrays()
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    onehot = np.eye(10)[y]
    beta1, beta2, eps, step = 0.9, 0.999, 1e-8, 0
    n = x.shape[0]
    for _ in range(epochs):
        order = rng.permutation(n)
        for s in range(0, n, cfg.batch_size):
            idx = order[s:s + cfg.batch_size]
            g = grads(x[idx], onehot[idx])
            step += 1
            for k in params:
                gk = g[k] + (cfg.weight_decay * params[k] if k[0] == "w" else 0)
                m[k] = beta1 * m[k] + (1 - beta1) * gk
                v[k] = beta2 * v[k] + (1 - beta2) * gk * gk
                upd = cfg.learning_rate * (m[k] / (1 - beta1 ** step)) / (
                    np.sqrt(v[k] / (1 - beta2 ** step)) + eps)
                params[k] = params[k] - upd
                if masks is not None and k in masks:
                    params[k] = params[k] * masks[k]
                put(k, params[k])
    return model


def _kn_blocks(w):
    """Conv weight [M, C, kh, kw] -> the [kh·kw·Cp, M] matrix the matrix engine multiplies:
    rows in the order (kh, kw, c) of the importer's padded NHWC input, each tap's C input
    channels padded with zero rows to Cp = C rounded up to 8 (so a block of 8 rows is one tap's
    8-byte vector). Returns the matrix and Cp."""
    m, c, kh, kw = w.shape
    cp = -(-c // BLOCK[0]) * BLOCK[0]
    mat = np.zeros((kh, kw, cp, m))
    mat[:, :, :c] = w.transpose(2, 3, 1, 0)
    return mat.reshape(kh * kw * cp, m), cp


def prune_blocks(w, sparsity: float) -> np.ndarray:
    """Mask (same shape as the conv weight ``w``) zeroing the ``sparsity`` fraction of the
    :data:`BLOCK` (8 × 4) blocks of its ``[kh·kw·Cp, M]`` engine matrix with the smallest L2
    norm (rounded to whole blocks)."""
    bk, bn = BLOCK
    mat, cp = _kn_blocks(w)
    kp, m = mat.shape
    mb = -(-m // bn) * bn
    padded = np.zeros((kp, mb))
    padded[:, :m] = mat
    grid = padded.reshape(kp // bk, bk, mb // bn, bn)
    norms = np.sqrt((grid ** 2).sum(axis=(1, 3)))
    n_zero = int(round(sparsity * norms.size))
    order = np.argsort(norms, axis=None, kind="stable")
    keep = np.ones(norms.size, bool)
    keep[order[:n_zero]] = False
    keep = keep.reshape(norms.shape)
    full = np.repeat(np.repeat(keep, bk, axis=0), bn, axis=1)[:, :m]          # [kp, M]
    mo, c, kh, kw = w.shape
    full = full.reshape(kh, kw, cp, m)[:, :, :c]                               # [kh, kw, C, M]
    return full.transpose(3, 2, 0, 1).astype(np.float64)


def train_cnn(cfg: CnnConfig = CnnConfig()) -> FloatCNN:
    """Train (and for ``cfg.sparsity > 0``: prune and fine-tune) the CNN. Deterministic."""
    from .digits import load_digits_split
    x_tr, _, y_tr, _ = load_digits_split()
    x = pixels_to_input(x_tr).astype(np.float64)
    rng = np.random.default_rng(cfg.seed)
    layers = cfg.layers()
    if layers is not None:
        from .convnet import ConvNet
        if cfg.sparsity > 0:
            model = load_float(dataclasses.replace(cfg, sparsity=0.0))
            masks = {f"w{i}": prune_blocks(model.w[i], cfg.sparsity).astype(model.w[i].dtype)
                     for i, lay in enumerate(layers) if lay.pruned}
            for k, m in masks.items():
                model.w[int(k[1:])] = model.w[int(k[1:])] * m
            return _adam(model, x, y_tr, cfg.finetune_epochs, cfg, rng, masks)
        return _adam(ConvNet.init(layers, rng), x, y_tr, cfg.epochs, cfg, rng)
    c1, c2 = cfg.c1, cfg.c2
    model = FloatCNN(
        w1=rng.normal(0, np.sqrt(2 / 9), (c1, 1, 3, 3)), b1=np.zeros(c1),
        w2=rng.normal(0, np.sqrt(2 / (9 * c1)), (c2, c1, 3, 3)), b2=np.zeros(c2),
        w3=rng.normal(0, np.sqrt(2 / (4 * c2)), (4 * c2, 10)), b3=np.zeros(10))
    if cfg.sparsity > 0:
        dense = dataclasses.replace(cfg, sparsity=0.0)
        model = load_float(dense)
        masks = {"w2": prune_blocks(model.w2, cfg.sparsity)}
        model.w2 = model.w2 * masks["w2"]
        return _adam(model, x, y_tr, cfg.finetune_epochs, cfg, rng, masks)
    return _adam(model, x, y_tr, cfg.epochs, cfg, rng)


def _cache(cache_dir=None) -> Path:
    d = Path(cache_dir) if cache_dir is not None else cache_root() / "onnx"
    d.mkdir(parents=True, exist_ok=True)
    return d


def _atomic_write(path: Path, data: bytes):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def load_float(cfg: CnnConfig = CnnConfig(), cache_dir=None):
    """Trained weights (a :class:`FloatCNN`, or a :class:`~.convnet.ConvNet` for ``cfg.arch``)
    from the cache, training (and caching) them on a miss."""
    path = _cache(cache_dir) / f"digits-cnn-{cfg.cache_key()}.npz"
    try:
        with np.load(path) as f:
            if cfg.arch:
                from .convnet import ConvNet
                return ConvNet.from_arrays(cfg.layers(), f)
            return FloatCNN(**{k: f[k] for k in ("w1", "b1", "w2", "b2", "w3", "b3")})
    except (OSError, KeyError, ValueError):
        pass
    model = train_cnn(cfg)
    import io
    buf = io.BytesIO()
    np.savez(buf, **model.arrays())
    try:
        _atomic_write(path, buf.getvalue())
    except OSError:
        pass
    return model


# ---------------------------------------------------------------------------------------------
# ONNX export and quantization
# ---------------------------------------------------------------------------------------------
def float_onnx(model, opset: int = 17):
    """The float32 ONNX graph of ``model`` (input ``x`` [N, 1, 8, 8], output ``logits`` [N, 10];
    a :class:`~.convnet.ConvNet`: :func:`~.convnet.convnet_onnx`)."""
    from .convnet import ConvNet, convnet_onnx
    if isinstance(model, ConvNet):
        return convnet_onnx(model, opset)
    from onnx import helper, numpy_helper
    init = [numpy_helper.from_array(np.asarray(getattr(model, k), np.float32), k)
            for k in ("w1", "b1", "w2", "b2", "w3", "b3")]
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    pool = dict(kernel_shape=[2, 2], strides=[2, 2])
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", **conv),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", **pool),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", **conv),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p2"], name="pool2", **pool),
        helper.make_node("Flatten", ["p2"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "w3", "b3"], ["logits"], name="fc"),
    ]
    return digits_model(nodes, init, "digits_cnn", opset, producer="tessera.digits_cnn")


def digits_model(nodes, init, name: str, opset: int = 17, producer: str | None = None):
    """A checked ONNX model of a digits network: graph ``name`` with input ``x`` (float32
    [N, 1, 8, 8]) and output ``logits`` (float32 [N, 10]), the given nodes and initializers,
    the default domain at ``opset``, IR version 8 and, if given, ``producer_name``.

    Raises
    ------
    onnx.checker.ValidationError
        The graph is not a valid ONNX model.
    """
    import onnx
    from onnx import TensorProto, helper
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])],
                          init)
    kw = {"producer_name": producer} if producer else {}
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], **kw)
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def quantize_onnx(float_model, calibration_input, *, quant_format="QDQ", activation="int8",
                  per_channel=True, workdir=None) -> bytes:
    """``onnxruntime.quantization.quantize_static`` of ``float_model`` (a ModelProto),
    calibrated on ``calibration_input`` (float32 [B, 1, 8, 8], one sample per step, MinMax).
    Returns the serialized int8 model."""
    import logging
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": calibration_input[i:i + 1]} for i in range(len(calibration_input))])

        def get_next(self):
            return next(self.it, None)

    with tempfile.TemporaryDirectory(dir=workdir) as d:
        src, dst = Path(d) / "float.onnx", Path(d) / "int8.onnx"
        src.write_bytes(float_model.SerializeToString())
        level = logging.getLogger().level
        logging.getLogger().setLevel(logging.ERROR)
        try:
            quantize_static(str(src), str(dst), Reader(),
                            quant_format=QuantFormat.QDQ if quant_format == "QDQ" else QuantFormat.QOperator,
                            activation_type=QuantType.QInt8 if activation == "int8" else QuantType.QUInt8,
                            weight_type=QuantType.QInt8, per_channel=per_channel)
        finally:
            logging.getLogger().setLevel(level)
        return dst.read_bytes()


@dataclass
class DigitsCnn:
    """The cached files and data of one CNN variant."""
    config: CnnConfig
    float_path: Path
    int8_path: Path
    float_model: object   # FloatCNN, or convnet.ConvNet for CnnConfig.arch


def load_digits_cnn(cfg: CnnConfig = CnnConfig(), cache_dir=None) -> DigitsCnn:
    """Train (or load), export and quantize the CNN; returns the cached ONNX file paths."""
    from .digits import load_digits_split
    d = _cache(cache_dir)
    key = cfg.cache_key()
    fpath, qpath = d / f"digits-cnn-{key}-float.onnx", d / f"digits-cnn-{key}-int8.onnx"
    model = load_float(cfg, cache_dir)
    if not fpath.exists() or not qpath.exists():
        fm = float_onnx(model)
        x_tr = load_digits_split()[0]
        q = quantize_onnx(fm, pixels_to_input(x_tr), workdir=d)
        _atomic_write(fpath, fm.SerializeToString())
        _atomic_write(qpath, q)
    return DigitsCnn(cfg, fpath, qpath, model)


def main(argv=None) -> int:  # pragma: no cover - exercised by examples/onnx_model.sh
    """``python -m tessera.toolchain.models.digits_cnn --out DIR [--images K] [--sparsity S]``:
    write the quantized model (``digits_cnn_int8.onnx``), its float original and ``K`` test
    images as ``digits_test.npz`` (input ``x``) for ``tessera onnx``."""
    import argparse
    import shutil
    from .digits import load_digits_split
    p = argparse.ArgumentParser(prog="python -m tessera.toolchain.models.digits_cnn")
    p.add_argument("--out", required=True, metavar="DIR")
    p.add_argument("--images", type=int, default=8)
    p.add_argument("--sparsity", type=float, default=0.0)
    p.add_argument("--arch", default="")
    a = p.parse_args(argv)
    cnn = load_digits_cnn(CnnConfig(sparsity=a.sparsity, arch=a.arch))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cnn.int8_path, out / "digits_cnn_int8.onnx")
    shutil.copyfile(cnn.float_path, out / "digits_cnn_float.onnx")
    x_te = load_digits_split()[1]
    np.savez(out / "digits_test.npz", x=pixels_to_input(x_te[:a.images]))
    print(f"wrote {out / 'digits_cnn_int8.onnx'}, {out / 'digits_cnn_float.onnx'}, "
          f"{out / 'digits_test.npz'} ({a.images} images)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
