"""The quantized digits MLP: determinism, cache, accuracy floors, and the int8 forward pass
re-derived in float64 from the published layer parameters (independent of tessera.golden_model.kernels)."""

import dataclasses

import numpy as np
import pytest

from tessera.toolchain.models import digits as D

CFG = D.DigitsConfig()


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return D.load_digits_model(CFG, cache_dir=tmp_path_factory.mktemp("digits-cache"))


@pytest.fixture(scope="module")
def split():
    return D.load_digits_split(CFG)


def test_split_is_fixed(split):
    x_tr, x_te, y_tr, y_te = split
    assert x_tr.shape == (1347, 64) and x_te.shape == (450, 64)
    assert x_tr.dtype == np.uint8 and x_tr.max() == 16 and x_tr.min() == 0
    again = D.load_digits_split(CFG)
    for a, b in zip(split, again):
        np.testing.assert_array_equal(a, b)


def test_training_is_deterministic():
    a = D.train_float(CFG)
    b = D.train_float(CFG)
    for k, v in a.arrays().items():
        assert np.array_equal(v, b.arrays()[k]), k
    c = D.train_float(dataclasses.replace(CFG, seed=1))
    assert not np.array_equal(a.w1, c.w1)


def test_cache_roundtrip(tmp_path, monkeypatch):
    cfg = dataclasses.replace(CFG, epochs=2)
    path = D.cache_path(cfg, tmp_path)
    assert path.name == f"digits-{cfg.cache_key()}.npz" and not path.exists()
    first = D.load_or_train(cfg, tmp_path)
    assert path.exists()

    def no_training(_cfg):
        raise AssertionError("cache miss: train_float was called")
    monkeypatch.setattr(D, "train_float", no_training)
    second = D.load_or_train(cfg, tmp_path)
    for k, v in first.arrays().items():
        assert np.array_equal(v, second.arrays()[k]), k
    # the key depends on every hyper-parameter
    assert dataclasses.replace(cfg, epochs=3).cache_key() != cfg.cache_key()
    assert dataclasses.replace(cfg, learning_rate=1e-3).cache_key() != cfg.cache_key()
    # a corrupt entry is retrained and overwritten
    monkeypatch.undo()
    path.write_bytes(b"not an npz")
    third = D.load_or_train(cfg, tmp_path)
    assert np.array_equal(third.w1, first.w1)
    with np.load(path) as f:
        assert np.array_equal(f["w1"], first.w1)


def test_accuracy_floors(model):
    r = model.evaluate()
    print(f"digits test accuracy: float {r['float']:.4f}, int8 {r['int8']:.4f}")
    assert r["test_samples"] == 450
    assert r["float"] >= 0.95
    assert r["int8"] >= 0.93
    assert r["int8"] >= r["float"] - 0.02


def test_layer_parameters_are_tile_ready(model):
    l1, l2 = model.layers
    assert l1.weight.shape == (64, CFG.hidden) and l2.weight.shape == (CFG.hidden, 10)
    for layer in model.layers:
        n = layer.weight.shape[1]
        assert layer.weight.dtype == np.int8 and layer.weight.min() >= -127
        for name in ("bias", "bias_folded", "multiplier", "shift"):
            arr = getattr(layer, name)
            assert arr.dtype == np.int32 and arr.shape == (n,), name
        live = layer.multiplier != 0
        assert ((layer.multiplier[live] >= 2**30)).all() and (layer.shift <= 0).all()
        assert -128 <= layer.output_zero_point <= 127
        # symmetric per-channel: every live channel uses the full code range
        assert (np.abs(layer.weight).max(axis=0)[live] == 127).all()
        # folded bias definition
        np.testing.assert_array_equal(
            layer.bias_folded.astype(np.int64),
            layer.bias.astype(np.int64) - layer.input_zero_point * layer.weight.astype(np.int64).sum(0))
    # input is pixel codes (scale 1/16, zp 0); hidden is post-ReLU, range [0, max] -> zp = -128
    assert (l1.input_scale, l1.input_zero_point) == (1 / 16, 0)
    assert l1.output_zero_point == -128 and l1.relu and not l2.relu
    assert (l2.input_scale, l2.input_zero_point) == (l1.output_scale, l1.output_zero_point)
    d = model.to_dict()
    assert len(d["layers"]) == 2 and len(d["layers"][0]["weight"]) == 64


def test_weights_dequantize_within_half_step(model):
    fm = model.float_model
    for layer, w in zip(model.layers, (fm.w1, fm.w2)):
        err = np.abs(layer.weight * layer.weight_scale - w)
        assert (err <= layer.weight_scale / 2 + 1e-12).all()


def rederive_layer(x, layer):
    """Same integer arithmetic in float64 (exact below 2^53), from the layer's parameters."""
    acc = (x.astype(np.float64) - layer.input_zero_point) @ layer.weight.astype(np.float64)
    acc = acc + layer.bias.astype(np.float64)
    assert np.abs(acc).max() < 2**31          # no int32 wrap in the hardware accumulator
    m = layer.multiplier.astype(np.float64)
    assert (np.abs(acc) * m).max() < 2**52    # acc * m stays exact in float64
    s = layer.shift.astype(np.float64)
    assert (s <= 0).all()
    high = np.floor((acc * m + 2.0**30) / 2.0**31)            # SRDHM: ties toward +inf
    high = np.where(m == 0, 0.0, high)
    q = high / 2.0**(-s)
    y = np.sign(q) * np.floor(np.abs(q) + 0.5)                 # RDBPOT: ties away from zero
    lo = layer.output_zero_point if layer.relu else -128
    return np.clip(y + layer.output_zero_point, lo, 127)


def test_int8_forward_equals_float64_rederivation(model, split):
    x_tr, x_te, _, _ = split
    x = np.concatenate([x_tr[:300], x_te]).astype(np.int8)      # codes == pixels
    got = model.forward_int8(x)
    assert got.dtype == np.int8 and got.shape == (750, 10)
    h = rederive_layer(x, model.layers[0])
    ref = rederive_layer(h, model.layers[1])
    np.testing.assert_array_equal(got, ref.astype(np.int64))
    # layer by layer too
    np.testing.assert_array_equal(model.layers[0].forward(x), h.astype(np.int64))


def test_int8_logits_track_float_logits(model, split):
    _, x_te, _, _ = split
    deq = model.dequantize_logits(model.forward_int8(x_te))
    ref = model.forward_float(x_te)
    agree = (deq.argmax(1) == ref.argmax(1)).mean()
    assert agree >= 0.97
    assert np.abs(deq - ref).mean() < 0.1 * np.abs(ref).mean()


def test_input_transform(model):
    pix = np.array([[0, 1, 15, 16] * 16], dtype=np.uint8)
    q = model.quantize_input(pix)
    assert q.dtype == np.int8 and q.tolist() == pix.tolist()    # scale 1/16, zp 0: lossless
    np.testing.assert_array_equal(model.forward_int8(pix), model.forward_int8(q))
    np.testing.assert_array_equal(model.quantize_input(pix.astype(np.float64)), q)


@pytest.mark.parametrize("bad, exc, text", [
    (np.full((1, 64), 17), ValueError, "0..16"),
    (np.full((1, 64), -1), ValueError, "0..16"),
    (np.full((1, 64), 0.5), ValueError, "integers"),
    (np.zeros((1, 63)), ValueError, r"shape \[B, 64\]"),
    (np.zeros((1, 64), dtype=bool), TypeError, "numeric"),
])
def test_input_errors(model, bad, exc, text):
    with pytest.raises(exc, match=text):
        model.forward_int8(bad)


def test_config_validation():
    with pytest.raises(ValueError, match="DigitsConfig.hidden"):
        D.DigitsConfig(hidden=0)
    with pytest.raises(ValueError, match="DigitsConfig.test_size"):
        D.DigitsConfig(test_size=1.5)


def test_packed_weight_for_dot4(model, split):
    x = split[1][:20].astype(np.int8)
    l1 = model.layers[0]
    packed = l1.packed_weight()
    assert packed.dtype == np.int8 and packed.shape == (CFG.hidden, 64) and packed.flags.c_contiguous
    aligned16 = model.layers[1].packed_weight(align=16)
    assert aligned16.shape == (10, 32)
    # dot4 view: each output is the sum over 4-byte words of s8 x s8 products (by hand, in int64)
    words_x = x.reshape(20, 16, 4).astype(np.int64)
    words_w = packed.reshape(CFG.hidden, 16, 4).astype(np.int64)
    acc = np.einsum("bwi,nwi->bn", words_x, words_w)
    from tessera.golden_model.kernels import matmul
    np.testing.assert_array_equal(acc, matmul(x, l1.weight))
    padded = model.layers[1].packed_weight(align=12)            # K = 32 -> 36, zeros appended
    assert padded.shape == (10, 36) and not padded[:, 32:].any()
    np.testing.assert_array_equal(padded[:, :32], model.layers[1].weight.T)
