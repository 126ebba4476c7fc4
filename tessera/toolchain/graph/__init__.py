"""Tessera graph compiler and host API, in the spirit of Poplar (docs/compiler.md).

Build a :class:`Graph` (variables mapped to tiles, compute sets of C-codelet vertices),
describe a :class:`Program` (``Sequence``, ``Execute``, ``Copy``, ``Repeat``), compile it
with :func:`compile_graph` into per-tile images, and run it with an :class:`Engine`::

    g = Graph(preset("small"))
    a = g.add_variable("a", (8, 16), "int8", map_linearly(grain=16))
    b = g.add_variable("b", (16, 4), "int8", map_to_tile(0))
    c, prog = matmul(g, a, b)
    eng = Engine(compile_graph(g, prog), backend="model")
    eng.write_tensor("a", A); eng.write_tensor("b", B)
    eng.run()
    C = eng.read_tensor(c.name)
"""

from .codelet import Codelet, Field
from .compile import CompiledGraph, compile_graph
from .engine import Engine
from .errors import EngineError, GraphError, GraphMemoryError
from .checked import TensorBoundsError
from .graph import ComputeSet, Graph, Vertex
from .matmul import matmul
from .program import Copy, Execute, Program, Repeat, Sequence
from .tensor import Tensor, Variable, map_linearly, map_to_tile

__all__ = ["Graph", "ComputeSet", "Vertex", "Variable", "Tensor", "map_linearly", "map_to_tile",
           "Codelet", "Field", "Program", "Sequence", "Execute", "Copy", "Repeat",
           "compile_graph", "CompiledGraph", "Engine", "matmul",
           "GraphError", "GraphMemoryError", "EngineError", "TensorBoundsError"]
