"""The ONNX importer end to end: models written by onnxruntime's quantizer (QDQ and
QOperator, int8 and uint8 activations, per-channel and per-tensor weights) equal onnxruntime's
CPU session (default options) element for element; the digits CNN; bad input gives one clear
error before anything runs; the ``tessera onnx`` CLI (keys, exit codes 0 / 2 / 3)."""

import json
import logging

import numpy as np
import pytest

from tessera.cli import main
from tessera.spec.config import preset
from tessera.toolchain.onnx import (InputError, ModelMemoryError, OnnxFileError, UnsupportedError,
                            compare_outputs, import_model, reference_outputs)


def _float_cnn(seed=0):
    """A random float CNN exercising stride 2, a grouped (depthwise) conv, padding and Gemm."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    w = {"w1": rng.normal(0, .4, (8, 1, 3, 3)), "b1": rng.normal(0, .1, 8),
         "w2": rng.normal(0, .4, (8, 1, 3, 3)), "b2": rng.normal(0, .1, 8),
         "w3": rng.normal(0, .2, (12, 8, 3, 3)), "b3": rng.normal(0, .1, 12),
         "w4": rng.normal(0, .2, (48, 10)), "b4": rng.normal(0, .1, 10)}
    init = [numpy_helper.from_array(v.astype(np.float32), k) for k, v in w.items()]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("MaxPool", ["r1"], ["p1"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1], group=8,
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3", "b3"], ["c3"], pads=[1, 1, 1, 1], strides=[2, 2],
                         kernel_shape=[3, 3]),
        helper.make_node("Relu", ["c3"], ["r3"]),
        helper.make_node("Flatten", ["r3"], ["f"], axis=1),
        helper.make_node("Gemm", ["f", "w4", "b4"], ["y"]),
    ]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                       ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


@pytest.fixture(scope="module")
def calib():
    return np.random.default_rng(1).uniform(0, 1, (64, 1, 8, 8)).astype(np.float32)


@pytest.mark.parametrize("fmt, act, per_channel", [
    ("QDQ", "int8", True), ("QOperator", "uint8", False), ("QDQ", "uint8", False),
    ("QOperator", "int8", True)])
def test_quantize_static_models_equal_onnxruntime(fmt, act, per_channel, calib, tmp_path):
    from tessera.toolchain.models.digits_cnn import quantize_onnx
    q = quantize_onnx(_float_cnn(), calib, quant_format=fmt, activation=act,
                      per_channel=per_channel, workdir=tmp_path)
    prog = import_model(q, preset("small"), samples_per_tile=1)
    x = np.random.default_rng(2).uniform(0, 1, (5, 1, 8, 8)).astype(np.float32)
    run = prog.run({"x": x})
    cmp = compare_outputs(run.outputs, reference_outputs(q, {"x": x}))
    assert cmp["reference_mismatches"] == 0 and cmp["reference_max_abs_diff"] == 0.0
    assert run.report["runs"] == 2 and run.outputs["y"].shape == (5, 10)
    ops = {tuple(l["onnx_ops"]) for l in run.report["layers"]}
    assert any("Conv" in o or "QLinearConv" in o for o in ops)


def test_digits_cnn_equals_onnxruntime():
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import load_digits_cnn, pixels_to_input
    cnn = load_digits_cnn()
    x = pixels_to_input(load_digits_split()[1][:8])
    prog = import_model(str(cnn.int8_path), preset("small"), samples_per_tile=2)
    run = prog.run({"x": x})
    ref = reference_outputs(str(cnn.int8_path), {"x": x})
    assert compare_outputs(run.outputs, ref)["reference_mismatches"] == 0
    rep = run.report
    assert rep["cycles"] > 0 and rep["layers"] and all(l["cycles"] > 0 for l in rep["layers"])
    assert sum(l["macs_per_sample"] for l in rep["layers"]) == 64 * 8 * 9 + 16 * 16 * 72 + 64 * 10
    assert rep["memory"][0]["free"] >= 0 and prog.compile_seconds < 10


# ---------------------------------------------------------------------------------------------
# bad input: one clear error, before anything runs
# ---------------------------------------------------------------------------------------------
def test_not_onnx_and_missing_file(tmp_path):
    p = tmp_path / "notes.onnx"
    p.write_text("this is not a model\n")
    with pytest.raises(OnnxFileError, match="not an ONNX model"):
        import_model(str(p))
    with pytest.raises(OnnxFileError, match="no such file"):
        import_model(str(tmp_path / "missing.onnx"))


def _one_node(op, inputs, outputs, attrs=None, inits=(), opset=17, name="the_node"):
    import onnx
    from onnx import helper
    n = helper.make_node(op, [i[0] for i in inputs if i[0]] , [o[0] for o in outputs], name=name,
                         **(attrs or {}))
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info(*i) for i in inputs
                                     if i[0] not in {t.name for t in inits}],
                          [helper.make_tensor_value_info(*o) for o in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def test_unsupported_operator_names_node_op_and_supported_set():
    from onnx import TensorProto
    m = _one_node("Softmax", [("x", TensorProto.FLOAT, [1, 10])], [("y", TensorProto.FLOAT, [1, 10])])
    with pytest.raises(UnsupportedError) as ei:
        import_model(m)
    msg = str(ei.value)
    assert "'the_node' (Softmax)" in msg and "not supported" in msg
    assert "QLinearConv" in msg and "QuantizeLinear" in msg      # the supported set
    assert ei.value.node == "the_node" and ei.value.op_type == "Softmax"


def test_unsupported_attribute_names_node():
    from onnx import TensorProto
    m = _one_node("MaxPool", [("x", TensorProto.INT8, [1, 2, 4, 4])],
                  [("y", TensorProto.INT8, [1, 2, 4, 4])],
                  {"kernel_shape": [2, 2], "pads": [0, 0, 1, 1], "storage_order": 1})
    with pytest.raises(UnsupportedError, match=r"'the_node' \(MaxPool\): storage_order=1"):
        import_model(m)


def test_old_opset_rejected():
    from onnx import TensorProto
    m = _one_node("Relu", [("x", TensorProto.INT8, [4])], [("y", TensorProto.INT8, [4])], opset=9)
    with pytest.raises(UnsupportedError, match="opset 9 is not supported"):
        import_model(m)


def test_model_too_big_names_tensor_tile_bytes():
    from onnx import TensorProto, numpy_helper
    b = numpy_helper.from_array(np.ones((1024, 64), np.int8), "big_weight")
    m = _one_node("MatMulInteger", [("a", TensorProto.INT8, [1, 1024]),
                                    ("big_weight", TensorProto.INT8, [1024, 64])],
                  [("y", TensorProto.INT32, [1, 64])], inits=[b])
    with pytest.raises(ModelMemoryError) as ei:
        import_model(m, preset("small"))
    e = ei.value
    assert e.tile == 0 and e.needed > e.free >= 0
    assert f"tile {e.tile}" in str(e) and str(e.needed) in str(e) and str(e.free) in str(e)
    assert e.tensor and e.tensor in str(e)


def test_input_errors_name_the_input():
    from onnx import TensorProto
    m = _one_node("Relu", [("x", TensorProto.INT8, ["N", 4])], [("y", TensorProto.INT8, ["N", 4])])
    prog = import_model(m, samples_per_tile=1)
    good = np.arange(8, dtype=np.int8).reshape(2, 4)
    assert np.array_equal(prog.run({"x": good}).outputs["y"], np.maximum(good, 0))
    with pytest.raises(InputError, match=r"missing input\(s\) \['x'\]"):
        prog.run({})
    with pytest.raises(InputError, match="input 'x' has dtype float32; the model declares int8"):
        prog.run({"x": good.astype(np.float32)})
    with pytest.raises(InputError, match=r"input 'x' has shape \[2, 5\]"):
        prog.run({"x": np.zeros((2, 5), np.int8)})
    with pytest.raises(InputError, match=r"unknown input\(s\) \['z'\]"):
        prog.run({"x": good, "z": good})


# ---------------------------------------------------------------------------------------------
# tessera onnx
# ---------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def qdq_file(tmp_path_factory, calib):
    from tessera.toolchain.models.digits_cnn import quantize_onnx
    d = tmp_path_factory.mktemp("onnx")
    p = d / "cnn_int8.onnx"
    p.write_bytes(quantize_onnx(_float_cnn(3), calib, workdir=d))
    x = np.random.default_rng(5).uniform(0, 1, (4, 1, 8, 8)).astype(np.float32)
    np.savez(d / "in.npz", x=x)
    return d, p, x


def test_cli_runs_and_reports(qdq_file, capsys):
    d, p, x = qdq_file
    code = main(["onnx", str(p), "--inputs", str(d / "in.npz"), "--out", str(d / "out.npz"),
                 "--reference", "--json", str(d / "r.json")])
    assert code == 0
    r = json.loads((d / "r.json").read_text())
    for k in ("cycles", "layers", "mac_utilization", "memory", "compile_seconds",
              "reference_mismatches", "reference_max_abs_diff"):
        assert k in r, k
    assert r["reference_mismatches"] == 0 and r["reference_max_abs_diff"] == 0.0
    assert all("cycles" in l for l in r["layers"]) and r["memory"][0]["free"] >= 0
    with np.load(d / "out.npz") as f:
        ref = reference_outputs(str(p), {"x": x})
        assert np.array_equal(f["y"], ref["y"])
    assert "onnxruntime: 0 element(s) differ" in capsys.readouterr().out
    # --dot4: the same outputs without the matrix engine (the cycles differ)
    code = main(["onnx", str(p), "--inputs", str(d / "in.npz"), "--out", str(d / "o4.npz"),
                 "--reference", "--dot4", "--json", str(d / "r4.json")])
    assert code == 0
    r4 = json.loads((d / "r4.json").read_text())
    assert r4["reference_mismatches"] == 0 and r4["cycles"] != r["cycles"]
    # utilisation against the tile's peak (issue #13: "mac_utilization ... against that peak"):
    # the default `small` preset's engine has P = 32 MACs per cycle (docs/architecture.md §12,
    # tessera/spec/config.py); --dot4 runs the dot4 kernels on the same array, whose peak is
    # still its engine's P (the dot4 peak of 4 MACs per cycle is the peak of a tile without one)
    assert r["peak_macs_per_cycle_per_tile"] == 32 and r4["peak_macs_per_cycle_per_tile"] == 32
    for rep in (r, r4):
        assert rep["mac_utilization"] == pytest.approx(
            rep["useful_macs"] / (rep["cycles"] * rep["peak_macs_per_cycle_per_tile"]
                                  * rep["config"]["tiles"]))
        assert 0 < rep["mac_utilization"] <= 1


def test_cli_bad_inputs_exit_2(qdq_file, capsys, tmp_path):
    d, p, x = qdq_file
    np.savez(tmp_path / "wrong.npz", x=x.astype(np.float64))
    assert main(["onnx", str(p), "--inputs", str(tmp_path / "wrong.npz"),
                 "--out", str(tmp_path / "o.npz")]) == 2
    assert "input 'x' has dtype float64" in capsys.readouterr().err
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"\x00\x01garbage")
    assert main(["onnx", str(bad), "--inputs", str(d / "in.npz"),
                 "--out", str(tmp_path / "o.npz")]) == 2
    assert "not an ONNX model" in capsys.readouterr().err
    assert main(["onnx", str(p), "--inputs", str(tmp_path / "none.npz"),
                 "--out", str(tmp_path / "o.npz")]) == 2


def test_cli_reference_mismatch_exit_3(qdq_file, monkeypatch, capsys):
    """With an oracle that disagrees in one element the CLI must say so and exit 3."""
    import tessera.toolchain.onnx as tonnx
    d, p, x = qdq_file
    real = tonnx.reference_outputs

    def off_by_one(model, inputs):
        r = real(model, inputs)
        r["y"] = r["y"].copy()
        r["y"].flat[3] += np.float32(0.5)
        return r
    monkeypatch.setattr(tonnx, "reference_outputs", off_by_one)
    code = main(["onnx", str(p), "--inputs", str(d / "in.npz"), "--out", str(d / "o3.npz"),
                 "--reference", "--json", str(d / "r3.json")])
    assert code == 3
    r = json.loads((d / "r3.json").read_text())
    assert r["reference_mismatches"] == 1 and r["reference_max_abs_diff"] == pytest.approx(0.5)


def test_block_sparse_cnn_detected_and_equal_to_onnxruntime():
    """The 90 % block-sparse CNN: the importer finds the zero blocks of conv2 by itself (JSON
    'sparse'), the block-sparse kernels give onnxruntime's outputs, and sparse='dense' (the
    --dense switch) gives the same outputs with the dense kernels."""
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import CnnConfig, load_digits_cnn, pixels_to_input
    cnn = load_digits_cnn(CnnConfig(sparsity=0.9))
    x = pixels_to_input(load_digits_split()[1][:8])
    ref = reference_outputs(str(cnn.int8_path), {"x": x})
    runs = {}
    for mode in ("auto", "dense"):
        prog = import_model(str(cnn.int8_path), preset("small"), samples_per_tile=2, sparse=mode)
        runs[mode] = prog.run({"x": x})
        assert compare_outputs(runs[mode].outputs, ref)["reference_mismatches"] == 0
    sp = [l for l in runs["auto"].report["layers"] if l.get("sparse")]
    assert [l["name"].split("+")[0] for l in sp] == ["conv2"]
    # matrix engine (the preset's engine_macs = 32, M = 4 lanes): blocks are 8 bytes of one
    # tap's 8 input channels x one command's 4 output channels; conv2 [16, 8, 3, 3] has
    # 9 taps x 16 / 4 groups = 36 of them. The stored ones are counted here from the int8
    # weights in the file (a block is stored when any of its 32 weights is nonzero).
    import onnx
    from onnx import numpy_helper
    (w2,) = [numpy_helper.to_array(t) for t in onnx.load(str(cnn.int8_path)).graph.initializer
             if tuple(t.dims) == (16, 8, 3, 3)]
    stored = int((w2.reshape(4, 4, 8, 3, 3) != 0).any(axis=(1, 2)).sum())
    s = sp[0]["sparse"]
    assert (s["kernel"], s["block_size"], s["block_channels"]) == ("engine_block_sparse", 8, 4)
    assert s["blocks_total"] == 36 and s["blocks_stored"] == stored and stored <= 0.25 * 36
    assert stored <= s["blocks_streamed"] < 36
    assert not any(l.get("sparse") for l in runs["dense"].report["layers"])
    mm = lambda r: next(l for l in r.report["layers"] if "conv2" in l["name"])["steps"]["mm"]
    assert mm(runs["auto"]) < 0.5 * mm(runs["dense"])
    # dot4 kernels (no engine): 4x4 blocks of the [72, 16] matrix, 18 x 4 = 72 of them; a
    # block (4 input channels of one tap x 4 output channels) is stored when nonzero
    stored4 = int((w2.reshape(4, 4, 2, 4, 3, 3) != 0).any(axis=(1, 3)).sum())
    for mode in ("auto", "dense"):
        prog = import_model(str(cnn.int8_path), preset("small").replace(engine_macs=0),
                            samples_per_tile=2, sparse=mode)
        runs[mode] = prog.run({"x": x})
        assert compare_outputs(runs[mode].outputs, ref)["reference_mismatches"] == 0
    (s,) = [l["sparse"] for l in runs["auto"].report["layers"] if l.get("sparse")]
    assert (s["kernel"], s["block_size"], s["blocks_total"]) == ("block_sparse", 4, 72)
    assert s["blocks_stored"] == stored4
    assert mm(runs["auto"]) < 0.5 * mm(runs["dense"])


def test_block_sparse_cnn_streams_the_cheapest_blocks():
    """The 75 % block-sparse CNN on the engine: per group of 4 output channels conv2 streams
    dense, the shortest progression of block addresses or (K_GATHER) exactly its stored
    blocks, whichever needs the fewest engine steps (docs/compiler.md, "Block sparsity");
    the outputs equal onnxruntime's. Expected choices from the file's int8 weights and §12's
    step count: conv2 is 3x3, C = 8 input channels (Cp = 8, one block per tap), on the 4x4
    output of pool1, so Wp = 6, J = 16 elements per command; a block's address is
    r·Wp + s; the choice-dependent steps are G·K1 + KB·C + (KB − 1)·J: dense KB = 9, a
    progression of L blocks KB = L, gather n blocks G·K1 = n, KB = n."""
    import math
    import onnx
    from onnx import numpy_helper
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import CnnConfig, load_digits_cnn, pixels_to_input
    cnn = load_digits_cnn(CnnConfig(sparsity=0.75))
    x = pixels_to_input(load_digits_split()[1][:8])
    ref = reference_outputs(str(cnn.int8_path), {"x": x})
    run = import_model(str(cnn.int8_path), preset("small"), samples_per_tile=2).run({"x": x})
    assert compare_outputs(run.outputs, ref)["reference_mismatches"] == 0
    (w2,) = [numpy_helper.to_array(t) for t in onnx.load(str(cnn.int8_path)).graph.initializer
             if tuple(t.dims) == (16, 8, 3, 3)]
    J, C, Wp = 16, 4, 6
    cost = lambda kb, g: g * kb + kb * C + (kb - 1) * J
    streamed, gather, stored = 0, False, 0
    for m0 in range(0, 16, 4):
        used = sorted(r * Wp + q for r in range(3) for q in range(3)
                      if np.any(w2[m0:m0 + 4, :, r, q] != 0))
        stored += len(used)
        d = 0
        for u in used[1:]:
            d = math.gcd(d, u - used[0])
        L = (used[-1] - used[0]) // (d or 1) + 1 if used else 1
        options = [(cost(9, 0), 9, False), (cost(L, 0), L, False)]
        if used:
            options.append((cost(len(used), 1), len(used), True))
        _, n, g = min(options, key=lambda o: o[0])
        streamed += n
        gather |= g
    (s,) = [l["sparse"] for l in run.report["layers"] if l.get("sparse")]
    assert (s["blocks_stored"], s["blocks_streamed"], s["gather"]) == (stored, streamed, gather)
    assert stored == 9 and gather        # 25 % of the 36 blocks kept; gathering pays here


def test_digits_cnn_engine_and_dot4_equal_onnxruntime():
    """The digits CNN with its convolutions and Gemm on the matrix engine (default when the
    array has one: the convolutions read a padded copy of their input, no im2col, and the
    engine's FLOAT32 output stage writes the int8 codes, no tso_rqf) and with engine='dot4'
    (im2col + dot4 kernels, RAW accumulators pooled then tso_rqf): both equal onnxruntime on
    every element."""
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import load_digits_cnn, pixels_to_input
    cnn = load_digits_cnn()
    x = pixels_to_input(load_digits_split()[1][:8])
    ref = reference_outputs(str(cnn.int8_path), {"x": x})
    steps = {}
    for engine in ("auto", "dot4"):
        prog = import_model(str(cnn.int8_path), preset("small"), samples_per_tile=2,
                            engine=engine)
        run = prog.run({"x": x})
        assert compare_outputs(run.outputs, ref)["reference_mismatches"] == 0
        steps[engine] = {l["name"]: l["steps"] for l in run.report["layers"]}
        assert ("tsk_engine" in prog.lowered.graph.codelets) == (engine == "auto")
        assert ("tso_rqf" in prog.lowered.graph.codelets) == (engine == "dot4")
    # engine: the input QuantizeLinear writes its codes straight into conv1's padded input and
    # pool1 (on conv1's int8 codes) straight into conv2's, so both convolutions are their
    # commands alone (no pad copy); pool2 writes p2 (NCHW, Flatten's input); the Gemm writes
    # its 10 codes per row straight into the output rows in narrow groups of 2 channels
    # (lower.narrow_width: channel 2p of row r at byte 10r + 2p, even, so a command's 2 bytes
    # never cross an 8-byte word, §12 fault 4; 5 commands instead of 3 (4 + 4 + 2) cost
    # (5 - 3)·(10 + KB·J) = 2·(10 + 8·2) = 52 extra steps for K = 64 (KB = 8) and J = 2 rows,
    # fewer than COPY_SET_CYCLES = 1400), so no "out" copy
    assert set(steps["auto"]) == {"x_QuantizeLinear", "conv1", "pool1", "conv2", "pool2", "fc",
                                  "logits_DequantizeLinear"}
    assert set(steps["auto"]["conv1"]) == set(steps["auto"]["conv2"]) == {"mm"}
    assert set(steps["auto"]["pool1"]) == set(steps["auto"]["pool2"]) == {"maxpool"}
    assert set(steps["auto"]["fc"]) == {"mm"}
    for name in ("conv1+pool1", "conv2+pool2"):
        assert set(steps["dot4"][name]) == {"im2col", "mm", "maxpool", "requant"}
        assert steps["auto"][name.split("+")[0]]["mm"] < steps["dot4"][name]["mm"]
    with pytest.raises(UnsupportedError, match="engine must be 'auto' or 'dot4'"):
        import_model(str(cnn.int8_path), preset("small"), engine="fast")


@pytest.mark.parametrize("M, width", [(10, 2), (12, 4)])
def test_classifier_conv_writes_its_codes_in_narrow_groups(M, width, calib):
    """A classifier convolution (8×8 valid → M channels on a 1 × 1 map, then Flatten) writes
    its M codes per image straight into the output in groups of ``width`` channels (4 if 4
    divides M, else 2; docs/compiler.md, "The engine's output stage requantizes"): no scratch,
    no "out" copy, and the codes equal onnxruntime's. Image n's channel group p starts at byte
    n·M + width·p, a multiple of width, so its width bytes stay in one 8-byte word."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    from tessera.toolchain.models.digits_cnn import quantize_onnx
    rng = np.random.default_rng(3)
    init = [numpy_helper.from_array(rng.normal(0, .4, (8, 1, 3, 3)).astype(np.float32), "w1"),
            numpy_helper.from_array(rng.normal(0, .1, 8).astype(np.float32), "b1"),
            numpy_helper.from_array(rng.normal(0, .1, (M, 8, 8, 8)).astype(np.float32), "w2"),
            numpy_helper.from_array(rng.normal(0, .1, M).astype(np.float32), "b2")]
    nodes = [helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1],
                              kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="cls", kernel_shape=[8, 8]),
             helper.make_node("Flatten", ["c2"], ["y"], axis=1)]
    g = helper.make_graph(nodes, "cls", [helper.make_tensor_value_info(
        "x", TensorProto.FLOAT, ["N", 1, 8, 8])], [helper.make_tensor_value_info(
            "y", TensorProto.FLOAT, ["N", M])], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    q = quantize_onnx(m, calib)
    x = calib[:12]
    prog = import_model(q, preset("small"), samples_per_tile=3)
    run = prog.run({"x": x})
    assert compare_outputs(run.outputs, reference_outputs(q, {"x": x}))["reference_mismatches"] == 0
    layer = next(l for l in run.report["layers"] if l["name"] == "cls")
    assert set(layer["steps"]) == {"mm"}


@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_global_average_pool_models_equal_onnxruntime(fmt, calib):
    """Conv -> Relu -> GlobalAveragePool -> Flatten -> MatMul, quantized by onnxruntime:
    QLinearGlobalAveragePool (QOperator), or the DQ -> GlobalAveragePool -> Q group onnxruntime
    fuses into it (QDQ)."""
    from onnx import TensorProto, helper, numpy_helper
    from tessera.toolchain.models.digits_cnn import quantize_onnx
    rng = np.random.default_rng(7)
    init = [numpy_helper.from_array(rng.normal(0, .4, (8, 1, 3, 3)).astype(np.float32), "w"),
            numpy_helper.from_array(rng.normal(0, .1, 8).astype(np.float32), "b"),
            numpy_helper.from_array(rng.normal(0, .3, (8, 10)).astype(np.float32), "w2")]
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["g"]),
             helper.make_node("Flatten", ["g"], ["f"]),
             helper.make_node("MatMul", ["f", "w2"], ["y"])]
    g = helper.make_graph(nodes, "gap", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                       ["N", 1, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    q = quantize_onnx(m, calib, quant_format=fmt, activation="uint8")
    prog = import_model(q, preset("small"), samples_per_tile=1)
    x = np.random.default_rng(8).uniform(0, 1, (4, 1, 8, 8)).astype(np.float32)
    run = prog.run({"x": x})
    assert compare_outputs(run.outputs, reference_outputs(q, {"x": x}))["reference_mismatches"] == 0
    assert any("GlobalAveragePool" in "/".join(l["onnx_ops"]) for l in run.report["layers"])


@pytest.mark.parametrize("K, rows, want", [
    # K = 32: 4 blocks of 8 rows; group 0 stores block rows 0 and 2. Choice-dependent steps
    # G·K1 + KB·C + (KB − 1)·J (§12) with J = 5 rows, C = 4 lanes: dense 4·4 + 3·5 = 31,
    # the progression 0, 2 (d = 2, L = 2) 2·4 + 1·5 = 13, K_GATHER 2 + 2·4 + 1·5 = 15: the
    # progression; streamed 2 + 1 (group 1's zero block) = 3 of 8
    (32, (0, 2), (2, 3, 8, False)),
    # K = 48: 6 blocks; block rows 0, 1, 5: the progression is all 6 (dense: 6·4 + 5·5 = 49),
    # K_GATHER 3 + 3·4 + 2·5 = 25: gather; streamed 3 + 1 = 4 of 12
    (48, (0, 1, 5), (3, 4, 12, True)),
])
def test_block_sparse_matmul_on_the_engine_equals_onnxruntime(K, rows, want):
    """MatMulInteger with a constant B with zero 8-row blocks: the engine streams only the
    stored ones (an arithmetic progression of block rows or, with K_GATHER, exactly them,
    whichever takes fewer engine steps), bit-exact with onnxruntime. B is [K, 8]: N = 8 is
    2 groups of M = 4 lanes (preset small: engine_macs 32 / 8); group 0 has nonzero weights
    in the block rows ``rows`` only, group 1 none (it streams 1 zero block, its outputs are
    the bias alone)."""
    from onnx import TensorProto, numpy_helper
    rng = np.random.default_rng(3)
    b = np.zeros((K, 8), np.int8)
    for r in rows:
        b[8 * r:8 * r + 8, 0:4] = rng.integers(-128, 128, (8, 4))
    m = _one_node("MatMulInteger", [("a", TensorProto.UINT8, [5, K]), ("b", TensorProto.INT8, [K, 8]),
                                    ("az", TensorProto.UINT8, [])],
                  [("y", TensorProto.INT32, [5, 8])],
                  inits=[numpy_helper.from_array(b, "b"),
                         numpy_helper.from_array(np.array(131, np.uint8), "az")], opset=10)
    m.graph.node[0].input[:] = ["a", "b", "az"]
    feed = {"a": rng.integers(0, 256, (5, K)).astype(np.uint8)}
    ref = reference_outputs(m, feed)
    for engine in ("auto", "dot4"):
        run = import_model(m, preset("small"), batch_mode="single", engine=engine).run(feed)
        assert np.array_equal(run.outputs["y"], ref["y"]), engine
    run = import_model(m, preset("small"), batch_mode="single").run(feed)
    (s,) = [l["sparse"] for l in run.report["layers"] if l.get("sparse")]
    assert s["kernel"] == "engine_block_sparse" and (s["block_size"], s["block_channels"]) == (8, 4)
    assert (s["blocks_stored"], s["blocks_streamed"], s["blocks_total"], s["gather"]) == want


@pytest.mark.parametrize("act", [("Clip", -20, 50), ("Relu", None, None), ("Clip", 60, 10)])
def test_clamp_after_engine_conv_folds_into_its_saturation(act):
    """QLinearConv -> Relu / Clip on its int8 codes: the engine's FLOAT32 output stage clamps
    to [max(qmin, lo), min(qmax, hi)] (docs/compiler.md, "ReLU folding"), so no tso_clamp
    runs, and the outputs equal onnxruntime's. Relu on int8 codes keeps codes >= 0 (lo = 0,
    hi = 127); Clip(-20, 50) gives lo = -20, hi = 50. Clip(60, 10) has lo > hi (every output
    is 10 in onnxruntime: min(max(v, 60), 10)); the engine cannot clamp that (qmin > qmax is an
    engine fault, architecture §12), so it stays a tso_clamp."""
    from onnx import TensorProto, helper, numpy_helper
    op, lo, hi = act
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.integers(-60, 60, (8, 3, 3, 3)).astype(np.int8), "w"),
             numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             numpy_helper.from_array(np.array(3, np.int8), "xz"),
             numpy_helper.from_array(np.full(8, 0.01, np.float32), "ws"),
             numpy_helper.from_array(np.zeros(8, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
             numpy_helper.from_array(np.array(-7, np.int8), "yz"),
             numpy_helper.from_array(rng.integers(-500, 500, 8).astype(np.int32), "b")]
    if op == "Clip":
        inits += [numpy_helper.from_array(np.array(lo, np.int8), "lo"),
                  numpy_helper.from_array(np.array(hi, np.int8), "hi")]
    nodes = [helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                              ["c"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3]),
             helper.make_node(op, ["c", "lo", "hi"] if op == "Clip" else ["c"], ["y"], name="act")]
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.INT8,
                                                                     ["N", 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, ["N", 8, 6, 6])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    x = np.random.default_rng(1).integers(-128, 128, (4, 3, 6, 6)).astype(np.int8)
    ref = reference_outputs(m, {"x": x})["y"]
    prog = import_model(m, preset("small"), samples_per_tile=1)
    run = prog.run({"x": x})
    assert np.array_equal(run.outputs["y"], ref)
    folded = op == "Relu" or lo <= hi
    assert ("tso_clamp" in prog.lowered.graph.codelets) == (not folded)
    names = [l["name"] for l in run.report["layers"]]
    assert names == (["conv+act"] if folded else ["conv", "act"])
    if op == "Relu":
        assert ref.min() == 0          # the clamp did something
    elif folded:
        assert (ref.min(), ref.max()) == (-20, 50)
    else:
        assert np.all(ref == 10)


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_maxpool_2x2_stride_2_on_codes_equals_onnxruntime(dtype):
    """MaxPool 2x2 / stride 2 without padding on 8-bit codes (tso_maxpool's full-window fast
    path; 5 x 7 inputs leave the last row and column out, floor mode) equals onnxruntime's
    int8 / uint8 MaxPool, codes from the whole range including both extremes."""
    from onnx import TensorProto
    tt = TensorProto.INT8 if dtype == "int8" else TensorProto.UINT8
    m = _one_node("MaxPool", [("x", tt, ["N", 3, 5, 7])], [("y", tt, ["N", 3, 2, 3])],
                  {"kernel_shape": [2, 2], "strides": [2, 2]})
    lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
    x = np.random.default_rng(2).integers(lo, hi, (4, 3, 5, 7)).astype(dtype)
    x[0, 0, :2, :2] = lo
    x[1, 2, 2:4, 4:6] = hi - 1
    ref = reference_outputs(m, {"x": x})["y"]
    run = import_model(m, preset("small"), samples_per_tile=1).run({"x": x})
    assert np.array_equal(run.outputs["y"], ref)
    assert ref[0, 0, 0, 0] == lo and ref[1, 2, 1, 2] == hi - 1


@pytest.mark.parametrize("M, group", [(8, 2), (12, 2), (16, 2)])
def test_grouped_conv_on_the_engine_equals_onnxruntime(M, group):
    """A grouped QLinearConv (im2col + engine): with M / group = 4 or 8 output channels per
    group the engine's FLOAT32 stage writes the codes (a group's bytes start at g·Mg of an
    8-aligned pixel and stay inside 8-byte words, §12 fault 4); with 6 they would cross a
    word (group 1's first 4 channels at bytes 6..9), so that layer keeps RAW + tso_rqf. All
    equal onnxruntime."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(M)
    inits = [numpy_helper.from_array(rng.integers(-60, 60, (M, 4 // group, 3, 3)).astype(np.int8), "w"),
             numpy_helper.from_array(np.array(0.02, np.float32), "xs"),
             numpy_helper.from_array(np.array(3, np.int8), "xz"),
             numpy_helper.from_array(np.full(M, 0.01, np.float32), "ws"),
             numpy_helper.from_array(np.zeros(M, np.int8), "wz"),
             numpy_helper.from_array(np.array(0.05, np.float32), "ys"),
             numpy_helper.from_array(np.array(-7, np.int8), "yz"),
             numpy_helper.from_array(rng.integers(-500, 500, M).astype(np.int32), "b")]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz", "b"],
                            ["y"], name="conv", pads=[1, 1, 1, 1], kernel_shape=[3, 3],
                            group=group)
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.INT8,
                                                                      ["N", 4, 5, 5])],
                          [helper.make_tensor_value_info("y", TensorProto.INT8, ["N", M, 5, 5])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    x = np.random.default_rng(1).integers(-128, 128, (4, 4, 5, 5)).astype(np.int8)
    prog = import_model(m, preset("small"), samples_per_tile=1)
    run = prog.run({"x": x})
    assert np.array_equal(run.outputs["y"], reference_outputs(m, {"x": x})["y"])
    assert ("tso_rqf" in prog.lowered.graph.codelets) == (M // group == 6)


def test_engine_descriptor_table_that_does_not_fit_is_a_model_memory_error(calib):
    """The 8x8 network (digits_cnn.ARCH_8X8, untrained) fits 1 image per tile with dense
    weights (34 KiB); at 3 per tile the tile runs out while conv3's engine descriptor table is
    placed (64 bytes per command: 14 channel groups x 3 images = 2688 bytes), which the
    lowering reported as a bare GraphError before: now a ModelMemoryError naming the tile and
    the table; the importer's own choice
    (samples_per_tile=None) backs off to what fits and equals onnxruntime."""
    from tessera.toolchain.models.convnet import ConvNet, convnet_onnx, parse_arch
    from tessera.toolchain.models.digits_cnn import ARCH_8X8, quantize_onnx
    net = ConvNet.init(parse_arch(ARCH_8X8), np.random.default_rng(0))
    q = quantize_onnx(convnet_onnx(net), calib)
    with pytest.raises(ModelMemoryError, match="does not fit tile 0: the engine descriptor "
                       "table 'op3.mm.desc0'"):
        import_model(q, preset("small"), samples_per_tile=3)
    prog = import_model(q, preset("small"), batch_hint=16)
    x = calib[:prog.samples_per_run]
    run = prog.run({"x": x})
    assert compare_outputs(run.outputs, reference_outputs(q, {"x": x}))["reference_mismatches"] == 0
