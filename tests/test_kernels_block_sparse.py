"""Block-sparse weights: BSR round trip, sparse == dense, pruning, validation."""

import numpy as np
import pytest

from tessera.golden_model.kernels import (
    BlockSparseMatrix, block_sparse_conv2d, block_sparse_matmul, conv2d, matmul,
)


def sparse_weights(rng, k, n, bs, density):
    """Dense int8 [k, n] whose bs-blocks are zero with probability 1 - density."""
    w = rng.integers(-128, 128, (k, n), dtype=np.int8)
    kb, nb = -(-k // bs), -(-n // bs)
    keep = rng.random((kb, nb)) < density
    w *= np.kron(keep, np.ones((bs, bs), dtype=np.int8))[:k, :n]
    return w, keep


@pytest.mark.parametrize("bs", [4, 8, 16])
@pytest.mark.parametrize("k, n", [(32, 48), (37, 21), (16, 16)])
def test_round_trip_and_matmul_equals_dense(bs, k, n):
    rng = np.random.default_rng(bs * 1000 + k + n)
    w, keep = sparse_weights(rng, k, n, bs, 0.4)
    W = BlockSparseMatrix.from_dense(w, bs)
    np.testing.assert_array_equal(W.to_dense(), w)
    assert W.nnzb <= keep.sum()
    # structure: every stored block's content equals the dense block (loop formulation)
    for z, (r, c) in enumerate(zip(W.block_rows(), W.indices)):
        dense_block = np.zeros((bs, bs), np.int8)
        part = w[r * bs:(r + 1) * bs, c * bs:(c + 1) * bs]
        dense_block[:part.shape[0], :part.shape[1]] = part
        np.testing.assert_array_equal(W.blocks[z], dense_block)
    a = rng.integers(-128, 128, (5, k), dtype=np.int8)
    got = block_sparse_matmul(a, W)
    assert got.dtype == np.int32 and got.shape == (5, n)
    np.testing.assert_array_equal(got, matmul(a, w))
    np.testing.assert_array_equal(got, (a.astype(np.float64) @ w.astype(np.float64)).astype(np.int64))


def test_hand_built_bsr():
    # 8x8 matrix, bs 4: blocks (0,1) and (1,0) only.
    b01 = np.arange(16, dtype=np.int8).reshape(4, 4)
    b10 = np.eye(4, dtype=np.int8) * np.int8(-128)
    W = BlockSparseMatrix(block_size=4, shape=(8, 8), indptr=[0, 1, 2], indices=[1, 0],
                          blocks=np.stack([b01, b10]))
    dense = np.zeros((8, 8), np.int8)
    dense[0:4, 4:8] = b01
    dense[4:8, 0:4] = b10
    np.testing.assert_array_equal(W.to_dense(), dense)
    a = np.full((1, 8), -128, dtype=np.int8)
    out = block_sparse_matmul(a, W)
    # columns 0..3: -128 * -128 = 16384 (the widened product); columns 4..7: -128 * column sums
    assert out[0, :4].tolist() == [16384] * 4
    assert out[0, 4:].tolist() == [-128 * int(b01[:, j].sum()) for j in range(4)]
    assert W.density == 0.5


def test_threshold_and_mask_pruning():
    w = np.zeros((8, 8), np.int8)
    w[0, 0] = 1          # block (0,0): max |w| = 1
    w[1, 5] = -50        # block (0,1): max |w| = 50
    w[6, 6] = 10         # block (1,1): max |w| = 10
    assert BlockSparseMatrix.from_dense(w, 4).nnzb == 3
    W = BlockSparseMatrix.from_dense(w, 4, threshold=9)
    assert W.nnzb == 2 and W.indptr.tolist() == [0, 1, 2] and W.indices.tolist() == [1, 1]
    pruned = w.copy()
    pruned[0, 0] = 0
    np.testing.assert_array_equal(W.to_dense(), pruned)
    M = BlockSparseMatrix.from_dense(w, 4, mask=np.array([[True, False], [True, False]]))
    assert M.nnzb == 2          # kept blocks may be all-zero when the mask says so
    expect = np.zeros_like(w)
    expect[0, 0] = 1
    np.testing.assert_array_equal(M.to_dense(), expect)


def test_empty_matrix_and_int32_wrap():
    W = BlockSparseMatrix.from_dense(np.zeros((8, 4), np.int8), 4)
    assert W.nnzb == 0
    assert not block_sparse_matmul(np.ones((2, 8), np.int8), W).any()
    k = 131088   # multiple of 16: 16384 * k wraps past 2^31
    W = BlockSparseMatrix.from_dense(np.full((k, 1), -128, np.int8), 16)
    out = block_sparse_matmul(np.full((1, k), -128, np.int8), W)
    assert out[0, 0] == (16384 * k + 2**31) % 2**32 - 2**31


@pytest.mark.parametrize("kernel, stride, padding", [(1, 1, "valid"), (3, 1, "same"), ((3, 2), 2, "same")])
def test_block_sparse_conv2d_equals_dense(kernel, stride, padding):
    rng = np.random.default_rng(11)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    cin, cout = 8, 16
    w2, _ = sparse_weights(rng, kh * kw * cin, cout, 8, 0.5)
    W = BlockSparseMatrix.from_dense(w2, 8)
    x = rng.integers(-128, 128, (2, 6, 5, cin), dtype=np.int8)
    got = block_sparse_conv2d(x, W, kernel, stride=stride, padding=padding, input_zero_point=-3)
    ref = conv2d(x, w2.reshape(kh, kw, cin, cout), stride=stride, padding=padding, input_zero_point=-3)
    np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("kwargs, text", [
    (dict(block_size=5), "block_size must be one of"),
    (dict(indptr=[0, 1]), "indptr must have KB"),
    (dict(indptr=[0, 2, 1]), "non-decreasing"),
    (dict(indices=[0, 2]), "block-column indices must be in"),
    (dict(indptr=[0, 2, 2], indices=[1, 0]), "strictly increasing"),
    (dict(blocks=np.zeros((2, 4, 8), np.int8)), "blocks must have shape"),
])
def test_bsr_validation(kwargs, text):
    args = dict(block_size=4, shape=(8, 8), indptr=[0, 1, 2], indices=[1, 0],
                blocks=np.zeros((2, 4, 4), np.int8))
    args.update(kwargs)
    with pytest.raises(ValueError, match=text):
        BlockSparseMatrix(**args)


def test_bad_calls():
    W = BlockSparseMatrix.from_dense(np.ones((8, 8), np.int8), 4)
    with pytest.raises(ValueError, match="inner dimensions"):
        block_sparse_matmul(np.ones((1, 9), np.int8), W)
    with pytest.raises(TypeError, match="must be a BlockSparseMatrix"):
        block_sparse_matmul(np.ones((1, 8), np.int8), np.ones((8, 8), np.int8))
    with pytest.raises(ValueError, match="not both"):
        BlockSparseMatrix.from_dense(np.ones((8, 8), np.int8), 4, threshold=1, mask=np.ones((2, 2), bool))
    with pytest.raises(ValueError, match="KH·KW·Cin"):
        block_sparse_conv2d(np.ones((1, 4, 4, 3), np.int8), W, 1)


def test_from_dense_rejects_a_w_that_is_not_a_2d_int8_array():
    # the docstring's Raises: w must be a 2-D int8 array, no silent cast (an int16 300 would
    # wrap to 44 in the int8 blocks) and no other rank. (Kills golden-model mutant M01c6c0:
    # the check of w dropped.)
    where = "BlockSparseMatrix.from_dense: w"
    with pytest.raises(TypeError, match=f"{where} must be a int8 array, got dtype int16"):
        BlockSparseMatrix.from_dense(np.full((4, 4), 300, np.int16), 4)
    with pytest.raises(TypeError, match=f"{where} must be a int8 array, got dtype int64"):
        BlockSparseMatrix.from_dense([[1, 2], [3, 4]], 4)
    with pytest.raises(ValueError, match=rf"{where} must have 2 dimensions, got shape \(16,\)"):
        BlockSparseMatrix.from_dense(np.ones(16, np.int8), 4)
