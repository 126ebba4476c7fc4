import numpy as np
from tessera.spec.config import preset
from tessera.toolchain.graph import (Copy, Engine, Execute, Graph, Sequence, compile_graph,
                                     map_linearly, map_to_tile)

g = Graph(preset("small"))                                        # 4 tiles x 6 contexts
x = g.add_variable("x", (4, 64), "int32", map_linearly(grain=64))  # one row per tile
y = g.add_variable("y", (4, 64), "int32", map_linearly(grain=64))
scale_add = g.add_codelet("scale_add", "examples/scale_add.c",     # fields in struct order
                          [("src", "in", "int32"), ("dst", "out", "int32"),
                           ("scale", "scalar"), ("offset", "scalar")])
cs = g.add_compute_set("scale")
for t in range(4):                     # one vertex per tile, on that tile's row
    g.add_vertex(cs, scale_add, src=x[t], dst=y[t], scale=3, offset=-t)
y0 = g.add_variable("y_on_0", (4, 64), "int32", map_to_tile(0))
prog = Sequence(Execute(cs), Copy(y, y0))   # compute, then gather all rows on tile 0
eng = Engine(compile_graph(g, prog), backend="model")
X = np.arange(256, dtype=np.int32).reshape(4, 64)
eng.write_tensor("x", X)
result = eng.run()
want = X * 3 - np.arange(4, dtype=np.int32)[:, None]
assert (eng.read_tensor("y") == want).all() and (eng.read_tensor("y_on_0") == want).all()
print(f"{result.cycles} cycles, {len(eng.compiled.exchanges)} exchange phase(s)")
