"""ONNX's own backend node tests (``onnx.backend.test.case.node``) on Tessera.

The generators ship in the ``onnx`` wheel: each case is a one-node model with inputs and the
expected outputs computed by numpy in the generator (an oracle independent of Tessera and of
onnxruntime). Tessera compiles scales, zero points, weights and shapes into the program, so the
inputs that are not data (everything except :data:`DATA_INPUTS` of the op) are bound as
constants (``import_model(..., constants=...)``); the model runs in single-sample mode (the
shapes as declared, on tile 0).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["node_cases", "run_node_case", "DATA_INPUTS", "NODE_TEST_OPS"]

#: Operator types whose node tests are run (the importer's operators that have node tests).
NODE_TEST_OPS = ("QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul",
                 "ConvInteger", "MatMulInteger", "Conv", "MatMul", "Gemm", "Relu", "Clip",
                 "MaxPool", "AveragePool", "GlobalAveragePool", "Add", "Mul", "Reshape",
                 "Flatten", "Transpose", "Concat", "Identity", "Constant", "Softmax")

#: Inputs that stay run-time data, by op type (default: input 0); "all" = every input.
DATA_INPUTS = {"QLinearMatMul": (0, 3), "MatMulInteger": (0, 1), "Add": (0, 1), "Mul": (0, 1),
               "Concat": "all"}

_CACHE = {}


def node_cases(ops=NODE_TEST_OPS) -> list:
    """The single-node test cases of ``ops``, sorted by name."""
    key = tuple(ops)
    if key not in _CACHE:
        from onnx.backend.test.case.node import collect_testcases
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            cases = collect_testcases()
        _CACHE[key] = sorted((t for t in cases if t.kind == "node" and len(t.model.graph.node) == 1
                              and t.model.graph.node[0].op_type in ops), key=lambda t: t.name)
    return _CACHE[key]


def split_inputs(tc):
    """``(feed, constants)`` of a node test case."""
    m = tc.model
    ins = tc.data_sets[0][0]
    names = [i.name for i in m.graph.input]
    data = DATA_INPUTS.get(m.graph.node[0].op_type, (0,))
    if data == "all":
        data = range(len(names))
    feed = {names[i]: np.asarray(ins[i]) for i in data if i < len(names)}
    consts = {n: np.asarray(a) for i, (n, a) in enumerate(zip(names, ins)) if i not in data}
    return feed, consts


def run_node_case(tc, config=None, backend="model"):
    """Import and run one case; returns ``(outputs, expected, report)`` (outputs by name).

    Raises whatever the importer raises (e.g. UnsupportedError) before running.
    """
    from . import import_model
    feed, consts = split_inputs(tc)
    prog = import_model(tc.model, config, constants=consts, batch_mode="single")
    run = prog.run(feed, backend=backend)
    expected = {o.name: np.asarray(e) for o, e in zip(tc.model.graph.output, tc.data_sets[0][1])}
    return run.outputs, expected, run.report
