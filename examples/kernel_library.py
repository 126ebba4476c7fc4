import numpy as np
from tessera.golden_model import kernels as ref
from tessera.spec.config import preset
from tessera.toolchain.graph import Engine, Graph, Sequence, compile_graph, map_linearly
from tessera.toolchain.kernels import matmul, matmul_requantize, requantize

g = Graph(preset("small"))
M, K, N = 8, 16, 8
a = g.add_variable("a", (M, K), "int8", map_linearly(grain=K))     # whole rows per tile
w = g.add_variable("w", (N, K), "int8", map_linearly(grain=K))     # B^T [N, K]
rng = np.random.default_rng(1)
multiplier = rng.integers(2**30, 2**31, N)          # per channel (C = last axis)
shift = rng.integers(-12, 0, N)
bias = rng.integers(-1000, 1000, N)

# C = init + A.B  (A int8 [M,K] in whole rows per tile, K % 4 == 0; B [K,N] or, with
# b_layout="nk", B^T [N,K] = TFLite FullyConnected weight layout, no on-tile transpose)
c, mm = matmul(g, a, w, b_layout="nk", init=None, name="mm")

# int32 acc -> int8 out (same shape, mapped alike); per-tensor scalars or per-channel [C]
# arrays (C = last axis); bit-exact with tessera.golden_model.kernels.requantize
out = g.add_variable("out", (M, N), "int8", map_linearly(grain=N))
rq = requantize(g, c, out, multiplier, shift, 3, relu=False, bias=bias)

# quantized dense layer: requantize(A.B + bias) -> int8 [M,N] (bias folded into init)
fc, fc_prog = matmul_requantize(g, a, w, multiplier, shift, 3, relu=True,
                                bias=bias, b_layout="nk", name="fc1")

eng = Engine(compile_graph(g, Sequence(mm, rq, fc_prog)), backend="model")
A = rng.integers(-128, 128, (M, K), dtype=np.int8)
W = rng.integers(-128, 128, (N, K), dtype=np.int8)
eng.write_tensor("a", A); eng.write_tensor("w", W)
eng.run()
acc = ref.matmul(A, W.T)                            # the numpy int8 references
assert (eng.read_tensor(c.name) == acc).all()
assert (eng.read_tensor("out") == ref.requantize(acc, multiplier, shift, 3, bias=bias)).all()
assert (eng.read_tensor(fc.name) == ref.requantize(acc, multiplier, shift, 3, relu=True,
                                                   bias=bias)).all()
