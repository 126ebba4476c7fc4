"""The layer-list digits CNN (tessera/toolchain/models/convnet.py): the parser's errors, the
numpy gradients against central differences, the ONNX export against onnxruntime, and the
block pruning of its marked layers (CnnConfig.arch, digits_cnn)."""

import numpy as np
import pytest

from tessera.toolchain.models.convnet import ConvNet, Layer, convnet_onnx, parse_arch


def test_parse_arch_layers():
    # c3:8 -> 8x8 (pad 1); c2s2:16 -> (8 - 2) // 2 + 1 = 4; k4 -> (4 - 4) + 1 = 1
    assert parse_arch("c3:8,c2s2:16*,k4*") == [Layer(3, 1, 1, 8, True, False),
                                                Layer(2, 2, 0, 16, True, True),
                                                Layer(4, 1, 0, 10, False, True)]


@pytest.mark.parametrize("spec, msg", [
    ("", "non-empty layer list"),
    ("c3:8,p2,k8", "layer 1 'p2'"),
    ("c3:8,k8,c3:8", "classifier must be last"),
    ("c3:8", "must end with the classifier"),
    ("c3:8,k4", "output map is 5x5, not 1x1"),           # (8 - 4) + 1 = 5
    ("c3s2:8,c3s2:8,k2", "layer 2 'k2'"),                # 8 -> 3 -> 1 -> empty
])
def test_parse_arch_errors_name_the_layer(spec, msg):
    with pytest.raises(ValueError, match=msg):
        parse_arch(spec)


def test_grads_match_central_differences():
    layers = parse_arch("c3:3,c2s2:4,c2s2:4,k2")
    rng = np.random.default_rng(0)
    m = ConvNet.init(layers, rng)
    m.w = [w.astype(np.float64) for w in m.w]             # float64 for the differences
    m.b = [b.astype(np.float64) + rng.normal(0.3, .1, b.shape) for b in m.b]
    x = rng.uniform(0, 1, (3, 1, 8, 8))
    onehot = np.eye(10)[[1, 4, 7]]

    def loss():
        y = m.forward(x).astype(np.float64)
        y = y - y.max(axis=1, keepdims=True)
        return -(onehot * (y - np.log(np.exp(y).sum(axis=1, keepdims=True)))).sum() / 3

    g = m.grads(x, onehot)
    for i in range(len(layers)):
        for arrs, key in ((m.w, f"w{i}"), (m.b, f"b{i}")):
            d = rng.normal(size=arrs[i].shape)
            old = arrs[i].copy()
            arrs[i] = old + 1e-3 * d
            lp = loss()
            arrs[i] = old - 1e-3 * d
            lm = loss()
            arrs[i] = old
            # float32 forward: the difference quotient is good to about 1e-3 relative
            assert (lp - lm) / 2e-3 == pytest.approx((g[key] * d).sum(), rel=2e-2, abs=2e-3)


def test_onnx_export_equals_forward():
    import onnxruntime as ort
    m = ConvNet.init(parse_arch("c3:4,c3:8,c2s2:8,k4"), np.random.default_rng(1))
    x = np.random.default_rng(2).uniform(0, 1, (5, 1, 8, 8)).astype(np.float32)
    sess = ort.InferenceSession(convnet_onnx(m).SerializeToString(),
                                providers=["CPUExecutionProvider"])
    got = sess.run(None, {"x": x})[0]
    assert got.shape == (5, 10)
    np.testing.assert_allclose(got, m.forward(x), rtol=1e-4, atol=1e-5)


def test_arch_config_prunes_the_marked_layers_in_engine_blocks():
    """prune_blocks on a marked layer zeroes whole 8 x 4 blocks of its [kh·kw·Cp, M] engine
    matrix: for conv 3x3 8 -> 8 (K = 72 rows = 9 blocks of 8, M = 8 = 2 blocks of 4) 18 blocks,
    90 % -> round(16.2) = 16 zero blocks, 2 kept = 2·8·4 = 64 nonzero weights of 576."""
    from tessera.toolchain.models.digits_cnn import prune_blocks
    w = np.random.default_rng(3).normal(size=(8, 8, 3, 3))
    mask = prune_blocks(w, 0.9)
    assert mask.sum() == 64
    blocks = mask.transpose(2, 3, 1, 0).reshape(9, 8, 2, 4)   # (tap, c in 8, group, m in 4)
    assert set(np.unique(blocks.sum(axis=(1, 3)))) == {0, 32}
