"""Matrix-engine kernels of the kernel library (docs/architecture.md §12, docs/compiler.md
"Matrix engine") on the golden model, vs the numpy references in tessera.golden_model.kernels.

Also checks the host-built descriptor tables with an independent functional evaluator written
from §12 "Semantics" (tests/helpers/engine_eval.py), so a descriptor bug and a model bug are
told apart."""

import types

import numpy as np
import pytest

from tessera.golden_model import kernels as ref
from tessera.spec.config import ArrayConfig, preset
from tessera.spec.engine import ChannelParams, Descriptor, Flag, Mode, command_steps
from tessera.toolchain.graph import Engine, Graph, compile_graph, map_linearly
from tessera.toolchain.kernels import (KernelError, block_sparse_matmul, conv2d_nhwc, matmul,
                                       matmul_requantize, pad_input)
from tessera.toolchain.kernels.matmul import matmul_cols
from tessera.toolchain.kernels.run import _mask

from helpers.engine_eval import run_descriptor, run_engine_vertices


def _cfg(pname="small", p=32):
    return preset(pname).replace(engine_macs=p)


def _run(g, prog, inputs, outs):
    cg = compile_graph(g, prog)
    eng = Engine(cg, backend="model")
    for k, v in inputs.items():
        eng.write_tensor(k, v)
    res = eng.run(5_000_000)
    # the same tables through the functional evaluator (engine kernels only read inputs)
    ev = Engine(cg, backend="model")
    for k, v in inputs.items():
        ev.write_tensor(k, v)
    return [eng.read_tensor(o.name) for o in outs], res, cg, ev


def _engine_tables(cg):
    return [v for v, _ in cg.tensors.values() if getattr(v, "engine_commands", None)]


@pytest.mark.parametrize("p", [16, 32, 64])
@pytest.mark.parametrize("m, k, n", [(13, 24, 10), (40, 64, 16), (300, 16, 6)])
def test_engine_matmul_raw(p, m, k, n):
    rng = np.random.default_rng(m + p)
    g = Graph(_cfg("small", p))
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    B = rng.integers(-128, 128, (k, n), dtype=np.int8)
    A[0], B[:, 0] = -128, -128
    init = rng.integers(-2**31, 2**31, n)
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    b = g.add_variable("b", (n, k), "int8", map_linearly(grain=k))
    c, prog = matmul(g, a, b, b_layout="nk", init=init, engine=True)
    (got,), res, cg, _ = _run(g, prog, {"a": A, "b": B.T.copy()}, [c])
    want = ((ref.matmul(A, B).astype(np.int64) + init + 2**31) % 2**32 - 2**31)
    np.testing.assert_array_equal(got, want.astype(np.int32))
    assert sum(t.counters["macs"] for t in res.tiles) == m * n * k
    # the engine is busy at least the steps of its commands (§12 step schedule)
    for v in _engine_tables(cg):
        t = v.intervals[0].tile
        assert res.tiles[t].counters["engine"] >= sum(c.steps() for c in v.engine_commands)
    assert all(c.fields["C"] <= p // 8 for v in _engine_tables(cg) for c in v.engine_commands)


def test_engine_matmul_requantize_fused_relu():
    rng = np.random.default_rng(9)
    g = Graph(_cfg("small"))
    m, k, n = 12, 64, 10
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    W = rng.integers(-40, 40, (k, n), dtype=np.int8)
    mult, shift = ref.quantize_multiplier(rng.uniform(1e-4, 1e-2, n))
    bias = rng.integers(-3000, 3000, n)
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    w = g.add_variable("w", (n, k), "int8", map_linearly(grain=k))
    out, prog = matmul_requantize(g, a, w, mult, shift, -5, relu=True, bias=bias,
                                  b_layout="nk")
    (got,), _, cg, _ = _run(g, prog, {"a": A, "w": W.T.copy()}, [out])
    assert got.shape == (m, 16)                 # rows padded to 8 bytes (§12 fault 4)
    np.testing.assert_array_equal(
        got[:, :n], ref.requantize(ref.matmul(A, W), mult, shift, -5, relu=True, bias=bias))
    assert [c.fields["mode"] for v in _engine_tables(cg) for c in v.engine_commands] == \
        [Mode.TFLITE] * (4 * 3)                    # one fused pass, 3 channel groups per tile
    assert not any(cs.name.endswith(".rq") for cs in g.compute_sets)


@pytest.mark.parametrize("shape, ks, stride, padding, zp, cout, fused", [
    ((2, 8, 8, 5), 3, 1, "same", 3, 6, False),       # channels padded 5 -> 8
    ((3, 9, 7, 16), 3, 2, "same", -5, 10, True),      # stride 2, fused requantize + ReLU
    ((1, 20, 20, 8), 3, 1, "valid", 0, 4, False),     # 18x18 = 324 outputs: 2 row groups
    ((4, 6, 6, 3), (2, 3), 1, 1, 7, 8, True),         # non-square kernel, explicit padding
])
def test_engine_conv2d_nhwc(shape, ks, stride, padding, zp, cout, fused):
    rng = np.random.default_rng(sum(shape))
    X = rng.integers(-128, 128, shape, dtype=np.int8)
    kh, kw = (ks, ks) if isinstance(ks, int) else ks
    Wt = rng.integers(-128, 128, (kh, kw, shape[3], cout), dtype=np.int8)
    XP = pad_input(X, ks, stride, padding, zp)
    g = Graph(_cfg("small"))
    xp = g.add_variable("xp", XP.shape, "int8", map_linearly(grain=int(np.prod(XP.shape[1:]))))
    req = (dict(multiplier=rng.integers(2**30, 2**31, cout), shift=rng.integers(-14, -6, cout),
                zero_point=-3, relu=True) if fused else None)
    out, prog = conv2d_nhwc(g, xp, Wt, shape, stride=stride, padding=padding,
                            input_zero_point=zp, requant=req)
    (got,), _, _, ev = _run(g, prog, {"xp": XP}, [out])
    want = ref.conv2d(X, Wt, stride=stride, padding=padding, input_zero_point=zp)
    if fused:
        want = ref.requantize(want, req["multiplier"], req["shift"], -3, relu=True)
        got = got[..., :cout]
    np.testing.assert_array_equal(got, want)
    run_engine_vertices(ev)                              # the descriptors, independently
    np.testing.assert_array_equal(ev.read_tensor(out.name)[..., :cout], want)


@pytest.mark.parametrize("bs, m, k, n, sparsity, fused", [
    (8, 40, 64, 32, 0.5, False), (16, 20, 128, 64, 0.9, False), (4, 12, 32, 16, 0.6, False),
    (8, 24, 64, 16, 0.7, True), (8, 8, 16, 16, 0.99, False),
])
def test_engine_block_sparse(bs, m, k, n, sparsity, fused):
    rng = np.random.default_rng(bs + m)
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    W = rng.integers(-128, 128, (k, n), dtype=np.int8)
    w = ref.BlockSparseMatrix.from_dense(W, bs, mask=_mask(rng, k // bs, n // bs, sparsity))
    init = rng.integers(-1000, 1000, n)
    req = (dict(multiplier=rng.integers(2**30, 2**31, n), shift=rng.integers(-16, -8, n),
                zero_point=5, relu=False) if fused else None)
    g = Graph(_cfg("small"))
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    c, prog = block_sparse_matmul(g, a, w, init=init, requant=req)
    (got,), res, cg, ev = _run(g, prog, {"a": A}, [c])
    acc = ref.block_sparse_matmul(A, w)
    want = (ref.requantize(acc, req["multiplier"], req["shift"], 5, bias=init) if fused
            else (acc.astype(np.int64) + init).astype(np.int32))
    np.testing.assert_array_equal(got, want)
    # only stored blocks are computed: columns whose stored block rows are no arithmetic
    # progression gather exactly them (K_GATHER, §12), so with blocks of 8 or 16 the macs
    # counter is the useful MACs (blocks of 4 are regrouped into blocks of 8)
    macs = sum(t.counters["macs"] for t in res.tiles)
    assert macs == m * w.nnzb * bs * bs if bs >= 8 else macs >= m * w.nnzb * bs * bs
    flags = [c_.fields["flags"] for v in _engine_tables(cg) for c_ in v.engine_commands]
    if bs >= 8:           # K_GATHER iff a column's stored block rows are not equally spaced
        rows, cols_ = w.block_rows(), np.asarray(w.indices)
        uneven = any(len(set(np.diff(np.sort(rows[cols_ == j])))) > 1 for j in set(cols_))
        assert any(f & Flag.K_GATHER for f in flags) == uneven
    run_engine_vertices(ev)                              # the descriptors, independently
    np.testing.assert_array_equal(ev.read_tensor(c.name), want)


def test_block_sparse_float32_rule_uint8_relu():
    # FLOAT32 mode, uint8 output, ReLU (qmin = zp = 100); empty block columns get the rule's
    # value of the bias alone
    rng = np.random.default_rng(33)
    m, k, n, bs = 24, 64, 32, 8
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    W = rng.integers(-128, 128, (k, n), dtype=np.int8)
    w = ref.BlockSparseMatrix.from_dense(W, bs, mask=_mask(rng, k // bs, n // bs, 0.7))
    init = rng.integers(-30000, 30000, n)
    mult = ref.float32_multiplier(np.float32(0.02), np.full(n, 0.01, np.float32),
                                  np.float32(0.5))
    g = Graph(_cfg("small"))
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    c, prog = block_sparse_matmul(g, a, w, init=init, requant=dict(
        rule="float32", multiplier=mult, zero_point=100, dtype="uint8", relu=True))
    (got,), _, _, _ = _run(g, prog, {"a": A}, [c])
    want = np.maximum(ref.requantize_float32(ref.block_sparse_matmul(A, w), mult, 100,
                                             dtype="uint8", bias=init), 100)
    np.testing.assert_array_equal(got, want)
    assert (want == 100).any() and len(np.unique(want)) > 20


@pytest.mark.parametrize("p", [0, 32])
def test_matmul_cols_engine_and_dot4(p):
    rng = np.random.default_rng(4)
    g = Graph(_cfg("small", p))
    M, K, N = 24, 32, 16
    A = rng.integers(-128, 128, (M, K), dtype=np.int8)
    B = rng.integers(-128, 128, (K, N), dtype=np.int8)
    init = rng.integers(-99, 99, N)
    a = g.add_variable("a", (M, K), "int8", map_linearly(grain=K))   # broadcast by a Copy
    bt = g.add_variable("bt", (N, K), "int8", map_linearly(grain=K))
    c, prog = matmul_cols(g, a, bt, init=init)
    (got,), res, cg, _ = _run(g, prog, {"a": A, "bt": B.T.copy()}, [c])
    np.testing.assert_array_equal(got.transpose(1, 0, 2).reshape(M, N), ref.matmul(A, B) + init)
    assert bool(_engine_tables(cg)) == (p > 0)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_matmul_cols_float32_rule(dtype):
    # The ONNX float32 rule fused in the engine (FLOAT32 mode): bit-exact with the reference
    # requantize_float32 (onnxruntime's QLinearMatMul rule), per-channel multipliers
    rng = np.random.default_rng(9)
    g = Graph(_cfg("small"))
    M, K, N = 20, 40, 16
    A = rng.integers(-128, 128, (M, K), dtype=np.int8)
    B = rng.integers(-128, 128, (K, N), dtype=np.int8)
    bias = rng.integers(-2000, 2000, N)
    mult = ref.float32_multiplier(np.float32(0.03), rng.uniform(0.002, 0.02, N).astype(
        np.float32), np.float32(0.25))
    zp = 120 if dtype == "uint8" else -6
    a = g.add_variable("a", (M, K), "int8", map_linearly(grain=K))
    bt = g.add_variable("bt", (N, K), "int8", map_linearly(grain=K))
    c, prog = matmul_cols(g, a, bt, init=bias, requant=dict(rule="float32", multiplier=mult,
                                                            zero_point=zp, dtype=dtype))
    assert c.dtype == np.dtype(dtype)
    (got,), _, cg, _ = _run(g, prog, {"a": A, "bt": B.T.copy()}, [c])
    nt = got.shape[0]
    got = got[:, :, :N // nt].transpose(1, 0, 2).reshape(M, N)
    want = ref.requantize_float32(ref.matmul(A, B), mult, zp, dtype=dtype, bias=bias)
    np.testing.assert_array_equal(got, want)
    assert len(np.unique(want)) > 20
    modes = {c_.fields["mode"] for v in _engine_tables(cg) for c_ in v.engine_commands}
    assert modes == {Mode.FLOAT32}


def test_conv2d_nhwc_float32_rule_with_relu():
    rng = np.random.default_rng(21)
    shape, cout, zp_in = (2, 6, 6, 8), 8, 3
    X = rng.integers(-128, 128, shape, dtype=np.int8)
    Wt = rng.integers(-128, 128, (3, 3, 8, cout), dtype=np.int8)
    XP = pad_input(X, 3, 1, "same", zp_in)
    g = Graph(_cfg("small"))
    xp = g.add_variable("xp", XP.shape, "int8", map_linearly(grain=int(np.prod(XP.shape[1:]))))
    mult = np.float32(0.0007)
    out, prog = conv2d_nhwc(g, xp, Wt, shape, padding="same", input_zero_point=zp_in,
                            requant=dict(rule="float32", multiplier=mult, zero_point=-10,
                                         relu=True))
    (got,), _, _, ev = _run(g, prog, {"xp": XP}, [out])
    acc = ref.conv2d(X, Wt, padding="same", input_zero_point=zp_in)
    want = np.maximum(ref.requantize_float32(acc, mult, -10), -10)     # ReLU: qmin = zp
    np.testing.assert_array_equal(got[..., :cout], want)
    run_engine_vertices(ev)                              # the descriptors, independently
    np.testing.assert_array_equal(ev.read_tensor(out.name)[..., :cout], want)
    assert (want == -10).any() and (want > -10).any()


def test_output_rule_errors():
    from tessera.toolchain.kernels.engine import output_rule
    with pytest.raises(KernelError, match="not a float32"):
        output_rule(dict(rule="float32", multiplier=0.1, zero_point=0), 0, 4, "t")
    with pytest.raises(KernelError, match="not finite"):
        output_rule(dict(rule="float32", multiplier=np.float32("inf"), zero_point=0), 0, 4, "t")
    with pytest.raises(KernelError, match="outside uint8"):
        output_rule(dict(rule="float32", multiplier=np.float32(1), zero_point=-1,
                         dtype="uint8"), 0, 4, "t")
    with pytest.raises(KernelError, match="rule must be"):
        output_rule(dict(rule="fp16", multiplier=1, zero_point=0), 0, 4, "t")
    with pytest.raises(KernelError, match="4 values"):
        output_rule(dict(rule="float32", multiplier=np.ones(3, np.float32), zero_point=0), 0,
                    4, "t")


def test_engine_off_and_errors():
    g = Graph(_cfg("small", 0))
    a = g.add_variable("a", (4, 16), "int8", map_linearly(grain=16))
    b = g.add_variable("b", (4, 16), "int8", map_linearly(grain=16))
    with pytest.raises(KernelError, match="no matrix engine"):
        matmul(g, a, b, b_layout="nk", engine=True)
    g = Graph(_cfg("small"))
    a = g.add_variable("a", (4, 12), "int8", map_linearly(grain=12))
    b = g.add_variable("b", (4, 12), "int8", map_linearly(grain=12))
    with pytest.raises(KernelError, match="K % 8"):
        matmul(g, a, b, b_layout="nk", engine=True)
    c, _ = matmul(g, a, b, b_layout="nk")          # engine=None: K = 12 falls back to dot4
    assert not _engine_tables(compile_graph(g, _))


def test_descriptor_evaluator_matches_command_steps_example():
    """§12's worked example: C = 4, J = 128, K = 128, TFLITE: 2,138 steps."""
    # 8 + 2C + KB·C + (KB − 1)·J + J·OW + WRITE_DELAY = 8 + 8 + 64 + 15·128 + 128 + 10 = 2,138
    d = Descriptor(J0=128, K0=16, C=4, mode=Mode.TFLITE)
    assert command_steps(d) == 2138


def test_back_to_back_mrun_keeps_the_last_write():
    """Four commands issued back to back by one context of a T = 6 tile (§12: an mrun whose X
    is the cycle after the last step is accepted; that last step still happens)."""
    from tessera.backends import run_program_io
    from tessera.toolchain import asm
    cfg = ArrayConfig(tiles=1, contexts=6, sram_bytes=16384, engine_macs=32)
    rng = np.random.default_rng(0)
    J, KB, A, Wb, Cb, P, D = 3, 8, 0x1000, 0x2000, 0x3000, 0x3800, 0x3C00
    descs = [Descriptor(a_base=A, a_s0=64, w_base=Wb + m0 * KB * 8, w_sm=KB * 8,
                        c_base=Cb + 16 * i, c_s0=64, p_base=P, J0=J, K0=2, K1=4, ak_s1=16,
                        C=4, mode=Mode.RAW) for i, m0 in enumerate(range(0, 16, 4))]
    sram = bytearray(16384)
    sram[A:A + J * 64] = rng.integers(0, 256, J * 64, dtype=np.uint8).tobytes()
    sram[Wb:Wb + 16 * KB * 8] = rng.integers(0, 256, 16 * KB * 8, dtype=np.uint8).tobytes()
    for m in range(4):
        sram[P + 16 * m:P + 16 * m + 16] = ChannelParams(bias=m).pack()
    for i, d in enumerate(descs):
        sram[D + 64 * i:D + 64 * i + 64] = d.pack()
    li = asm.li("a0", D)
    body = (li if isinstance(li, list) else [li]) + sum(
        [[asm.mrun("a0"), asm.addi("a0", "a0", 64)] for _ in descs], []) + [asm.mwait(),
                                                                          asm.ecall()]
    prog = [asm.csrr("a1", 0xCC1), asm.bne("a1", "x0", 4 * (len(body) + 1))] + body + \
        [asm.ecall()]
    img = types.SimpleNamespace(entry=0, segments=[types.SimpleNamespace(
        addr=0, data=asm.program(prog))])
    _, (mem,) = run_program_io("model", cfg, img, 100_000,
                               preload=[(0, 0x1000, bytes(sram[0x1000:]))],
                               readback=[(0, Cb, J * 64)])
    want = bytearray(sram)
    for d in descs:
        run_descriptor(want, d)
    assert mem == bytes(want[Cb:Cb + J * 64])


@pytest.mark.parametrize("p", [0, 16, 64])
def test_graph_codelets_see_the_arrays_engine_size(tmp_path, p):
    """The graph compiler passes -DTSR_ENGINE_MACS=P of its array (tessera.h: TSR_ENGINE_LANES
    = P / 8), the way per-configuration values reach C (like TSR_XLATENCY)."""
    src = tmp_path / "lanes.c"
    src.write_text('#include <stdint.h>\n#include "tessera.h"\n#include "tsr_graph.h"\n'
                   "typedef struct { TSR_FIELD(int32_t, out); } f_t;\n"
                   "void lanes(const f_t *f, uint32_t part, uint32_t nparts) {\n"
                   "    if (part == 0) { f->out[0] = TSR_ENGINE_MACS; f->out[1] = TSR_ENGINE_LANES; }\n"
                   "}\n")
    g = Graph(_cfg("tiny", p))
    out = g.add_variable("out", (2,), "int32", 0)
    cd = g.add_codelet("lanes", src, [("out", "out", "int32")])
    cs = g.add_compute_set("cs")
    g.add_vertex(cs, cd, out=out)
    from tessera.toolchain.graph import Execute
    eng = Engine(compile_graph(g, Execute(cs)), backend="model")
    eng.run()
    assert eng.read_tensor("out").tolist() == [p, p // 8]


def test_block_sparse_commands_longest_first_two_contexts():
    """The block-sparse commands are independent, so the kernel orders a tile's table
    longest first (the first one is the runtime's engine start and covers the vertex
    dispatch) and issues them from the contexts issue_plan picks. By hand (§12: 8 + 2C +
    G·K1 + KB·C + (KB − 1)·J + J·OW + WRITE_DELAY steps, RAW: OW = ⌈C/4⌉ = 1 at C = 4 since
    the two-word writes of 2026-12-02; WRITE_DELAY = 10; one tile, J = 14 rows, K = 32,
    N = 32, blocks of 8): block columns 0, 2 and 3 store block row 0 only (KB = 1, G = 0):
    8 + 8 + 0 + 4 + 0 + 14 + 10 = 44 steps; block column 1 stores block rows 0, 1 and 3 (no
    progression: K_GATHER, K1 = 3, G = 1): 8 + 8 + 3 + 12 + 2·14 + 14 + 10 = 83 steps. Each
    column is 8 channels = 2 commands of C = 4; longest first (stable): channels 8, 12 (83
    steps), then 0, 4, 16, 20, 24, 28 (44 steps).
    issue_plan (T = 6; see test_issue_plan_by_hand for the rule): from context 0 alone (accepts
    ≡ 4 mod 6) at 4, 88, 172 (x + 84 ≡ 4: at once), then every 48 (x + 45 ≡ 1: + 3): 220,
    268, 316, 364, 412, end 412 + 44 − 4 = 452; from {0, 3} (≡ 4 or 1): 4, 88 (0), 172 (0),
    then x + 45 alternating 3, 0: 217 (3), 262 (0), 307 (3), 352 (0), 397 (3), end 437 + 7 =
    444; {0, 2, 4} (even cycles): 4, 88, 172, 218 (4), 264 (2), 310 (0), 356 (4), 402 (2), end
    442 + 14 = 456; all six: the contexts of {0, 3} (x + 45 is free for 3, then 0), end
    437 + 7 = 444, a tie that {0, 3} wins (first).
    So {0, 3}: contexts 0, 0, 0, 3, 0, 3, 0, 3 for channels 8, 12, 0, 4, 16, 20, 24, 28: the
    table is context 0's (channels 8, 12, 0, 16, 24) then context 3's (4, 20, 28); context 0's
    vertex runs its second to fifth descriptors (count 4), context 3's vertex its three."""
    from tessera.spec.engine import DESC_BYTES
    m, k, n, bs = 14, 32, 32, 8
    mask = np.zeros((k // bs, n // bs), bool)
    mask[0, [0, 2, 3]] = True
    mask[[0, 1, 3], 1] = True
    rng = np.random.default_rng(41)
    A = rng.integers(-128, 128, (m, k), dtype=np.int8)
    W = rng.integers(-128, 128, (k, n), dtype=np.int8)
    w = ref.BlockSparseMatrix.from_dense(W, bs, mask=mask)
    g = Graph(ArrayConfig(tiles=1, contexts=6, sram_bytes=64 * 1024, engine_macs=32))
    a = g.add_variable("a", (m, k), "int8", map_linearly(grain=k))
    c, prog = block_sparse_matmul(g, a, w)
    (got,), res, cg, ev = _run(g, prog, {"a": A}, [c])
    np.testing.assert_array_equal(got, ref.block_sparse_matmul(A, w))
    (table,) = _engine_tables(cg)
    cmds = table.engine_commands
    assert [cm.steps() for cm in cmds] == [83, 83, 44, 44, 44, 44, 44, 44]
    assert [(cm.fields["K1"], bool(cm.fields["flags"] & Flag.K_GATHER)) for cm in cmds] == \
        [(3, True)] * 2 + [(1, False)] * 6
    # output channel of each command: c_base offset / 4 bytes (RAW, row 0)
    assert [cm.fields["c_base"][1] // 4 for cm in cmds] == [8, 12, 0, 16, 24, 4, 20, 28]
    (cs,) = [x for x in g.compute_sets if x.engine_start]
    verts = sorted(cs.vertices, key=lambda v: v.context)
    assert [(v.context, v.fields["count"]) for v in verts] == [(0, 4), (3, 3)]
    # the control table's worklist: one entry on contexts 0 and 3, none elsewhere; EXEC
    # word 2 (the engine start) is the table's first descriptor
    ctx = sorted((e.context, e.codelet, e.part, e.nparts) for e in cg.entries.values())
    assert ctx == [(0, "tsk_engine", 0, 1), (3, "tsk_engine", 0, 1)]
    taddr = int(cg.tensors[table.name][1][0])
    words = np.frombuffer(bytes(cg.regions[0][:20]), "<u4")
    assert words[2] == 1 and words[4] == taddr       # op 0: EXEC, its engine start
    # the vertices' desc fields: context 0 from the second descriptor (4), context 3 the last 3
    assert [(int(v.fields["desc"].index.reshape(-1)[0]), v.fields["desc"].size)
            for v in verts] == \
        [(DESC_BYTES, 4 * DESC_BYTES), (5 * DESC_BYTES, 3 * DESC_BYTES)]
    run_engine_vertices(ev)                              # the descriptors, independently
    np.testing.assert_array_equal(ev.read_tensor(c.name), ref.block_sparse_matmul(A, w))


def test_issue_plan_by_hand():
    """issue_plan's rule (T = 6: context c's accepts only in cycles ≡ c + 4 mod 6; a command
    of s steps accepted at x is followed at the first such cycle ≥ x + s + 1 of a context in
    the set; context 0 takes the first command at x = 4; + EXTRA_CONTEXT_CYCLES = 7 per extra
    context).
    Four 128-step commands: {0}: 4, 136, 268, 400 (133 ≡ 1 → 136), end 400 + 128 − 4 = 524;
    {0, 3}: 4, 133 (context 3), 262 (0), 391 (3), end 515, + 7 = 522; {0, 2, 4}: 4, 134 (4),
    264 (2), 394 (0), end 518 + 14 = 532; all: 4, 133, 262, 391, 515 + 35 = 550. Best {0, 3}.
    Four 856-step commands (857 ≡ 5 mod 6): {0}: 4, 862, 1720, 2578, end 3430; {0, 3}: the
    first cycle ≥ x + 857 of context 0 or 3 is x + 858, context 0 again: the same plan with
    one context, a tie, so {0} (first); {0, 2, 4}: 4, 862 (0) ..., the same; all: 4, 861 (5),
    1718 (4), 2575 (3), end 3427 + 21 = 3448. So one context."""
    from tessera.toolchain.kernels.engine import EXTRA_CONTEXT_CYCLES, issue_plan
    assert EXTRA_CONTEXT_CYCLES == 7
    assert issue_plan([128] * 4, 6) == ([0, 3, 0, 3], 515)
    assert issue_plan([856] * 4, 6) == ([0, 0, 0, 0], 3430)
    assert issue_plan([128] * 4, 6, sets=[(0,)]) == ([0, 0, 0, 0], 524)
    assert issue_plan([128] * 4, 6, sets=[(0, 2, 4)]) == ([0, 4, 2, 0], 518)
    assert issue_plan([856] * 4, 6, sets=[tuple(range(6))]) == ([0, 5, 4, 3], 3427)
    assert issue_plan([50], 6) == ([0], 50)
