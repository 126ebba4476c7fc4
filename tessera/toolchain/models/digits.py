"""The digits network: a 64 → 32 → 10 ReLU MLP, trained in float, quantized to int8.

Data: scikit-learn's bundled 8×8 digits (``sklearn.datasets.load_digits``, no download),
1797 images with pixels 0..16, split 75/25 by ``train_test_split`` (stratified, fixed seed).

Training: float64 numpy, Adam on softmax cross-entropy with L2 weight decay, He-initialised,
mini-batches shuffled by ``numpy.random.default_rng(seed)`` — fully deterministic for a given
:class:`DigitsConfig`. Float weights are cached in ``tessera.paths.cache_root()`` (``$TESSERA_CACHE``,
default ``~/.cache/tessera``) as ``digits-<hash>.npz``, keyed by the configuration.

Quantization (post-training, TFLite int8 conventions, ``real = scale · (q - zero_point)``):

- **input**: float input is ``pixel / 16``; it is quantized with scale 1/16 and zero point 0, so
  the int8 code *is* the pixel value (0..16) — lossless;
- **weights**: per-output-channel symmetric int8, ``scale[n] = max_k |W[k, n]| / 127``, codes
  in -127..127, zero point 0 (the scale is floored at ``|b[n]| / (input_scale · 2^30)`` so that
  the int32 bias always fits — this only matters for dead units whose weights decayed to ~0);
- **activations** (hidden layer and logits): per-tensor asymmetric int8, calibrated by
  **min/max** over the whole training split (range widened to include 0 so that real 0 is
  exactly representable; ``scale = (max - min) / 255``,
  ``zero_point = round(-128 - min / scale)``);
- **biases**: int32, ``round(b[n] / (input_scale · weight_scale[n]))``;
- **requantization**: per-channel ``quantize_multiplier(input_scale · weight_scale[n] /
  output_scale)`` and :func:`tessera.golden_model.kernels.requantize` (fused ReLU on the hidden layer).

Each layer is ``requantize(matmul(x, W), m, shift, out_zp, bias=bias_folded, relu=...)``, where
``bias_folded = bias - input_zero_point · Σ_k W[k, n]`` folds the input zero point into the bias,
so a tile needs only a plain ``dot4`` int8 matmul with int32 accumulators (no zero-point handling).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tessera.golden_model.kernels import matmul, quantize_multiplier, requantize
from tessera.paths import cache_root

__all__ = [
    "DigitsConfig", "FloatMLP", "QuantizedLayer", "QuantizedMLP",
    "load_digits_split", "train_float", "load_or_train", "quantize_mlp", "load_digits_model",
    "INPUT_SCALE", "INPUT_ZERO_POINT", "PIXEL_MAX", "N_FEATURES", "N_CLASSES",
]

#: Digits pixels are integers 0..PIXEL_MAX.
PIXEL_MAX = 16
N_FEATURES, N_CLASSES = 64, 10
#: Input quantization: int8 code = pixel value (exact).
INPUT_SCALE, INPUT_ZERO_POINT = 1.0 / PIXEL_MAX, 0
#: Bump when the training code changes so that stale cache entries are not reused.
TRAINING_VERSION = 1


@dataclass(frozen=True, kw_only=True)
class DigitsConfig:
    """Hyper-parameters of the digits MLP (they key the weight cache).

    Parameters
    ----------
    hidden : int
        Hidden-layer width (default 32).
    epochs : int
        Passes over the training split.
    batch_size : int
        Mini-batch size.
    learning_rate : float
        Adam step size.
    weight_decay : float
        L2 penalty on the weights (keeps them small, which helps int8).
    seed : int
        Seed of the initialisation and of the mini-batch shuffles.
    test_size : float
        Fraction of the 1797 images held out for testing.
    split_seed : int
        ``random_state`` of the stratified train/test split.

    Raises
    ------
    ValueError
        If a field is out of range.
    """

    hidden: int = 32
    epochs: int = 60
    batch_size: int = 32
    learning_rate: float = 3e-3
    weight_decay: float = 1e-4
    seed: int = 0
    test_size: float = 0.25
    split_seed: int = 0

    def __post_init__(self):
        for name in ("hidden", "epochs", "batch_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"DigitsConfig.{name} must be a positive int, not {v!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"DigitsConfig.learning_rate must be > 0, not {self.learning_rate!r}")
        if not self.weight_decay >= 0:
            raise ValueError(f"DigitsConfig.weight_decay must be >= 0, not {self.weight_decay!r}")
        if not 0 < self.test_size < 1:
            raise ValueError(f"DigitsConfig.test_size must be in (0, 1), not {self.test_size!r}")

    def cache_key(self) -> str:
        """Short hash of the fields and :data:`TRAINING_VERSION`."""
        blob = json.dumps({"v": TRAINING_VERSION, **dataclasses.asdict(self)}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def load_digits_split(config: DigitsConfig = DigitsConfig()):
    """The fixed train/test split of scikit-learn's digits, as raw pixels.

    Returns
    -------
    x_train, x_test : ndarray of uint8, shape [B, 64], values 0..16
    y_train, y_test : ndarray of int64, shape [B], labels 0..9
    """
    key = (config.test_size, config.split_seed)
    if key in _SPLITS:
        return tuple(a.copy() for a in _SPLITS[key])
    path = _split_cache_path(config)
    try:
        with np.load(path) as z:
            split = (z["x_train"], z["x_test"], z["y_train"], z["y_test"])
    except (OSError, KeyError, ValueError):
        split = None
    if split is None:
        from sklearn.datasets import load_digits
        from sklearn.model_selection import train_test_split

        data = load_digits()
        x = data.data.astype(np.uint8)
        y = data.target.astype(np.int64)
        split = tuple(train_test_split(
            x, y, test_size=config.test_size, random_state=config.split_seed, stratify=y))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npz")
            np.savez(tmp, x_train=split[0], x_test=split[1], y_train=split[2], y_test=split[3])
            os.replace(tmp, path)
        except OSError:
            pass                        # an unwritable cache only costs the sklearn import
    _SPLITS[key] = split
    return tuple(a.copy() for a in split)


_SPLITS: dict = {}


def _split_cache_path(config: DigitsConfig) -> Path:
    """Cache file of the split: scikit-learn is imported only on a miss (it takes ~1.5 s)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        skl = version("scikit-learn")
    except PackageNotFoundError:
        skl = "none"
    blob = json.dumps({"test_size": config.test_size, "split_seed": config.split_seed,
                       "sklearn": skl}, sort_keys=True)
    return cache_root() / f"digits-split-{hashlib.sha256(blob.encode()).hexdigest()[:16]}.npz"


def _check_pixels(where: str, x) -> np.ndarray:
    x = np.asarray(x)
    if x.ndim != 2 or x.shape[1] != N_FEATURES:
        raise ValueError(f"{where}: expected pixels of shape [B, {N_FEATURES}], got {x.shape}")
    if x.dtype == np.bool_ or not (np.issubdtype(x.dtype, np.integer) or np.issubdtype(x.dtype, np.floating)):
        raise TypeError(f"{where}: pixels must be numeric, got dtype {x.dtype.name}")
    if x.size and (x.min() < 0 or x.max() > PIXEL_MAX or np.any(x != np.round(x))):
        raise ValueError(f"{where}: pixels must be integers in 0..{PIXEL_MAX}, got values in "
                         f"[{x.min()}, {x.max()}]")
    return x


@dataclass(eq=False)
class FloatMLP:
    """The float64 reference network ``logits = relu(x W1 + b1) W2 + b2`` with ``x = pixel/16``.

    Members
    -------
    w1 : ndarray of float64, [64, hidden]
    b1 : ndarray of float64, [hidden]
    w2 : ndarray of float64, [hidden, 10]
    b2 : ndarray of float64, [10]
    """

    w1: np.ndarray
    b1: np.ndarray
    w2: np.ndarray
    b2: np.ndarray

    def hidden(self, pixels) -> np.ndarray:
        """Post-ReLU hidden activations, float64 [B, hidden]."""
        x = _check_pixels("FloatMLP.hidden", pixels).astype(np.float64) / PIXEL_MAX
        return np.maximum(x @ self.w1 + self.b1, 0.0)

    def forward(self, pixels) -> np.ndarray:
        """Float logits [B, 10] for raw pixels [B, 64] (0..16)."""
        return self.hidden(pixels) @ self.w2 + self.b2

    def arrays(self) -> dict:
        return {"w1": self.w1, "b1": self.b1, "w2": self.w2, "b2": self.b2}


def train_float(config: DigitsConfig = DigitsConfig()) -> FloatMLP:
    """Train the float MLP deterministically (Adam, float64). Takes about a second.

    Returns
    -------
    FloatMLP
    """
    x_tr, _, y_tr, _ = load_digits_split(config)
    x = x_tr.astype(np.float64) / PIXEL_MAX
    onehot = np.eye(N_CLASSES)[y_tr]
    rng = np.random.default_rng(config.seed)
    h = config.hidden
    params = {
        "w1": rng.normal(0.0, np.sqrt(2.0 / N_FEATURES), (N_FEATURES, h)),
        "b1": np.zeros(h),
        "w2": rng.normal(0.0, np.sqrt(2.0 / h), (h, N_CLASSES)),
        "b2": np.zeros(N_CLASSES),
    }
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    beta1, beta2, eps, step = 0.9, 0.999, 1e-8, 0
    n = x.shape[0]
    for _ in range(config.epochs):
        order = rng.permutation(n)
        for start in range(0, n, config.batch_size):
            idx = order[start:start + config.batch_size]
            xb, tb = x[idx], onehot[idx]
            pre = xb @ params["w1"] + params["b1"]
            hid = np.maximum(pre, 0.0)
            logits = hid @ params["w2"] + params["b2"]
            logits -= logits.max(axis=1, keepdims=True)
            prob = np.exp(logits)
            prob /= prob.sum(axis=1, keepdims=True)
            d_logits = (prob - tb) / len(idx)
            d_hid = (d_logits @ params["w2"].T) * (pre > 0)
            grads = {
                "w1": xb.T @ d_hid + config.weight_decay * params["w1"],
                "b1": d_hid.sum(axis=0),
                "w2": hid.T @ d_logits + config.weight_decay * params["w2"],
                "b2": d_logits.sum(axis=0),
            }
            step += 1
            for k, g in grads.items():
                m[k] = beta1 * m[k] + (1 - beta1) * g
                v[k] = beta2 * v[k] + (1 - beta2) * g * g
                mhat = m[k] / (1 - beta1 ** step)
                vhat = v[k] / (1 - beta2 ** step)
                params[k] = params[k] - config.learning_rate * mhat / (np.sqrt(vhat) + eps)
    return FloatMLP(**params)


def _cache_dir(cache_dir) -> Path:
    if cache_dir is not None:
        return Path(cache_dir)
    return cache_root()


def cache_path(config: DigitsConfig = DigitsConfig(), cache_dir=None) -> Path:
    """Where :func:`load_or_train` stores the weights of ``config``."""
    return _cache_dir(cache_dir) / f"digits-{config.cache_key()}.npz"


def load_or_train(config: DigitsConfig = DigitsConfig(), cache_dir=None) -> FloatMLP:
    """Float weights from the cache, training (and caching) them on a miss.

    Parameters
    ----------
    config : DigitsConfig
    cache_dir : path-like or None
        Cache directory; default ``tessera.paths.cache_root()``. A corrupt or
        unreadable entry is retrained and overwritten; an unwritable directory only skips caching.

    Returns
    -------
    FloatMLP
    """
    path = cache_path(config, cache_dir)
    try:
        with np.load(path) as f:
            return FloatMLP(**{k: f[k] for k in ("w1", "b1", "w2", "b2")})
    except (OSError, KeyError, ValueError):
        pass
    model = train_float(config)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.stem, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **model.arrays())
        os.replace(tmp, path)                 # atomic: concurrent readers never see half a file
    except OSError:
        pass
    return model


@dataclass(frozen=True, eq=False)
class QuantizedLayer:
    """One fully-connected int8 layer: ``out = requantize(x @ weight, ...)``, in tile-ready form.

    Members
    -------
    weight : ndarray of int8, [K, N]
        Symmetric per-output-channel weights (codes -127..127, zero point 0).
    bias : ndarray of int32, [N]
        Bias in accumulator scale (``input_scale · weight_scale[n]``).
    bias_folded : ndarray of int32, [N]
        ``bias - input_zero_point · Σ_k weight[k, n]``: the bias to use with a plain
        ``matmul(x, weight)`` (no zero-point subtraction on the tile).
    multiplier : ndarray of int32, [N]
    shift : ndarray of int32, [N]
        Per-channel requantization (``quantize_multiplier``).
    input_scale, output_scale : float
    input_zero_point, output_zero_point : int
    weight_scale : ndarray of float64, [N]
    relu : bool
        Fused ReLU (clamp at ``output_zero_point``).
    """

    weight: np.ndarray
    bias: np.ndarray
    bias_folded: np.ndarray
    multiplier: np.ndarray
    shift: np.ndarray
    input_scale: float
    input_zero_point: int
    weight_scale: np.ndarray
    output_scale: float
    output_zero_point: int
    relu: bool

    def forward(self, x) -> np.ndarray:
        """int8 [B, K] → int8 [B, N], using only ``tessera.golden_model.kernels``."""
        acc = matmul(x, self.weight)
        return requantize(acc, self.multiplier, self.shift, self.output_zero_point,
                          bias=self.bias_folded, relu=self.relu)

    def packed_weight(self, align: int = 4) -> np.ndarray:
        """Weights laid out for ``dot4``: one row per output channel, K zero-padded to ``align``.

        ``packed[n, k] = weight[k, n]`` for ``k < K`` and 0 beyond, so output ``n`` is the sum
        of ``dot4`` over the little-endian 32-bit words of row ``n`` and of the (equally padded)
        input row. Padding contributes 0 to the accumulator.

        Returns
        -------
        ndarray of int8, shape [N, ceil(K / align) · align], C-contiguous
        """
        if not isinstance(align, int) or isinstance(align, bool) or align < 1:
            raise ValueError(f"QuantizedLayer.packed_weight: align must be a positive int, not {align!r}")
        k, n = self.weight.shape
        out = np.zeros((n, -(-k // align) * align), dtype=np.int8)
        out[:, :k] = self.weight.T
        return out

    def to_dict(self) -> dict:
        """Plain lists/ints/floats (JSON-ready) for a compiler."""
        out = {}
        for f in dataclasses.fields(self):
            val = getattr(self, f.name)
            out[f.name] = val.tolist() if isinstance(val, np.ndarray) else val
        return out


def _asymmetric(lo: float, hi: float) -> tuple[float, int]:
    """Per-tensor asymmetric int8 (scale, zero point) for the real range [lo, hi] ∪ {0}."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0 if hi > lo else 1.0
    zp = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return float(scale), zp


def _quantize_layer(w, b, s_in, zp_in, s_out, zp_out, relu) -> QuantizedLayer:
    # Per-channel symmetric scale; floored so that the int32 bias code stays below 2^30 (a dead
    # unit whose weights decayed to ~0 but whose bias did not would otherwise overflow int32).
    s_w = np.maximum(np.abs(w).max(axis=0) / 127.0, np.abs(b) / (s_in * 2.0**30))
    s_w = np.where(s_w > 0, s_w, 1.0)
    w_q = np.clip(np.round(w / s_w), -127, 127).astype(np.int8)
    acc_scale = s_in * s_w
    b_q = np.clip(np.round(b / acc_scale), -2**31, 2**31 - 1).astype(np.int64)
    folded = b_q - zp_in * w_q.astype(np.int64).sum(axis=0)
    if np.any(np.abs(folded) >= 2**31):
        raise ValueError("quantize_mlp: folded bias does not fit in int32")
    m, sh = quantize_multiplier(acc_scale / s_out)
    return QuantizedLayer(weight=w_q, bias=b_q.astype(np.int32), bias_folded=folded.astype(np.int32),
                          multiplier=m, shift=sh, input_scale=float(s_in), input_zero_point=int(zp_in),
                          weight_scale=s_w, output_scale=s_out, output_zero_point=zp_out, relu=relu)


@dataclass(frozen=True, eq=False)
class QuantizedMLP:
    """The int8 digits network and its float reference.

    Members
    -------
    layers : tuple of QuantizedLayer
        ``layers[0]``: 64 → hidden with ReLU; ``layers[1]``: hidden → 10 logits.
    float_model : FloatMLP
    config : DigitsConfig
    """

    layers: tuple
    float_model: FloatMLP
    config: DigitsConfig = field(default_factory=DigitsConfig)

    @staticmethod
    def quantize_input(pixels) -> np.ndarray:
        """Digits pixels (0..16, any numeric dtype) → int8 codes (scale 1/16, zero point 0).

        Raises
        ------
        ValueError
            If the shape is not [B, 64] or a pixel is not an integer in 0..16.
        """
        x = _check_pixels("QuantizedMLP.quantize_input", pixels)
        real = x.astype(np.float64) / PIXEL_MAX                 # the float model's input
        return (np.round(real / INPUT_SCALE).astype(np.int64) + INPUT_ZERO_POINT).astype(np.int8)

    def forward_int8(self, x) -> np.ndarray:
        """int8 logits [B, 10] for inputs [B, 64], built only from ``tessera.golden_model.kernels``.

        Parameters
        ----------
        x : ndarray, shape [B, 64]
            int8 codes from :meth:`quantize_input`, or raw pixels (uint8/int, 0..16), which are
            quantized first (the codes equal the pixels).

        Returns
        -------
        ndarray of int8, shape [B, 10]
        """
        x = np.asarray(x)
        if x.dtype != np.int8:
            x = self.quantize_input(x)
        elif x.ndim != 2 or x.shape[1] != N_FEATURES:
            raise ValueError(f"QuantizedMLP.forward_int8: expected shape [B, {N_FEATURES}], got {x.shape}")
        for layer in self.layers:
            x = layer.forward(x)
        return x

    def forward_float(self, pixels) -> np.ndarray:
        """Float64 logits [B, 10] of the unquantized network for raw pixels [B, 64]."""
        return self.float_model.forward(pixels)

    def dequantize_logits(self, q) -> np.ndarray:
        """Real-valued logits from int8 logits: ``scale · (q - zero_point)``."""
        last = self.layers[-1]
        return last.output_scale * (np.asarray(q, dtype=np.float64) - last.output_zero_point)

    def predict_int8(self, x) -> np.ndarray:
        """Class predictions [B] from the int8 network (argmax; ties → lowest class)."""
        return self.forward_int8(x).argmax(axis=1)

    def predict_float(self, pixels) -> np.ndarray:
        """Class predictions [B] from the float network."""
        return self.forward_float(pixels).argmax(axis=1)

    def evaluate(self) -> dict:
        """Accuracy of both networks on the fixed test split: ``{'float': .., 'int8': ..}``."""
        _, x_te, _, y_te = load_digits_split(self.config)
        return {"float": float((self.predict_float(x_te) == y_te).mean()),
                "int8": float((self.predict_int8(x_te) == y_te).mean()),
                "test_samples": int(y_te.size)}

    def to_dict(self) -> dict:
        """JSON-ready description: input quantization and every layer's parameters."""
        return {"input_scale": INPUT_SCALE, "input_zero_point": INPUT_ZERO_POINT,
                "layers": [layer.to_dict() for layer in self.layers]}


def quantize_mlp(model: FloatMLP, calibration_pixels, config: DigitsConfig = DigitsConfig()) -> QuantizedMLP:
    """Post-training quantization of ``model`` calibrated on ``calibration_pixels`` (min/max).

    Parameters
    ----------
    model : FloatMLP
    calibration_pixels : array_like, [B, 64], pixels 0..16
        Normally the training split.
    config : DigitsConfig
        Recorded in the result (for :meth:`QuantizedMLP.evaluate`).

    Returns
    -------
    QuantizedMLP
    """
    hid = model.hidden(calibration_pixels)
    logits = hid @ model.w2 + model.b2
    s_h, zp_h = _asymmetric(float(hid.min()), float(hid.max()))
    s_o, zp_o = _asymmetric(float(logits.min()), float(logits.max()))
    l1 = _quantize_layer(model.w1, model.b1, INPUT_SCALE, INPUT_ZERO_POINT, s_h, zp_h, relu=True)
    l2 = _quantize_layer(model.w2, model.b2, s_h, zp_h, s_o, zp_o, relu=False)
    return QuantizedMLP(layers=(l1, l2), float_model=model, config=config)


def load_digits_model(config: DigitsConfig = DigitsConfig(), cache_dir=None) -> QuantizedMLP:
    """Train (or load from cache) and quantize the digits MLP — the one-call entry point."""
    x_tr, _, _, _ = load_digits_split(config)
    return quantize_mlp(load_or_train(config, cache_dir), x_tr, config)


def main() -> None:  # pragma: no cover - convenience
    """``python -m tessera.toolchain.models.digits``: print float and int8 test accuracy."""
    q = load_digits_model()
    r = q.evaluate()
    print(f"digits MLP 64-{q.config.hidden}-10: float {r['float']:.4f}, int8 {r['int8']:.4f} "
          f"on {r['test_samples']} test images")


if __name__ == "__main__":  # pragma: no cover
    main()
