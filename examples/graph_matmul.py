import numpy as np
from tessera.spec.config import preset
from tessera.toolchain.graph import Graph, Engine, compile_graph, map_linearly, map_to_tile, matmul

g = Graph(preset("small"))                                    # 4 tiles x 6 contexts, 64 KiB
a = g.add_variable("a", (8, 16), "int8", map_linearly(grain=16))  # 2 rows of A per tile
b = g.add_variable("b", (16, 4), "int8", map_to_tile(0))
c, prog = matmul(g, a, b)                                     # C int32 [8, 4], rows like A
compiled = compile_graph(g, prog)
print(compiled.memory_report())                              # bytes per category per tile
rng = np.random.default_rng(0)
A = rng.integers(-128, 128, (8, 16), dtype=np.int8)           # the values of a and b
B = rng.integers(-128, 128, (16, 4), dtype=np.int8)
eng = Engine(compiled, backend="model")
eng.write_tensor("a", A); eng.write_tensor("b", B)
result = eng.run()                                            # tessera.spec.result.RunResult
C = eng.read_tensor(c.name)                                   # == A.astype(int64) @ B, wrapped to int32
assert (C == (A.astype(np.int64) @ B).astype(np.int32)).all()
