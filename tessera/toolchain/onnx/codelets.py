"""The importer's codelets (C sources in ``tessera/toolchain/onnx/codelets/``) and their fields.

Tensor fields are declared without a dtype: the importer places all activations of a tile in
one byte arena and passes views of it (see :mod:`tessera.toolchain.onnx.lower`). The dense matmul and
block-sparse matmul inner loops are the kernel library's generated codelets
(:mod:`tessera.toolchain.kernels.matmul`, :mod:`tessera.toolchain.kernels.block_sparse`) registered with the
same fields minus the dtype checks.
"""

from __future__ import annotations

from pathlib import Path

from tessera.toolchain.graph.codelet import Codelet, Field

__all__ = ["codelet", "matmul_codelet", "bsmm_codelet", "SOURCE_DIR", "SINGLE"]

SOURCE_DIR = Path(__file__).resolve().parent / "codelets"

_S = "scalar"
_FIELDS = {
    "tso_rqf": (SOURCE_DIR / "tso_rqf.c", [("acc", "in"), ("out", "out"), ("params", "in")] +
                [(n, _S) for n in ("rows", "P", "M", "os_s", "os_p", "os_m", "zp", "ylo", "yhi")]),
    "tso_quant": (SOURCE_DIR / "tso_quant.c", [("x", "in"), ("y", "out"), ("tab", "in")] +
                  [(n, _S) for n in ("i0", "i1", "inner", "C", "c0", "in0", "qmin", "y0", "yw",
                                     "wl0", "hl0", "bl0", "W", "H", "Cq", "dh", "db", "da")]),
    "tso_dequant": (SOURCE_DIR / "tso_dequant.c", [("x", "in"), ("y", "out"), ("params", "in")] +
                    [(n, _S) for n in ("i0", "i1", "inner", "C", "c0", "in0", "kind")]),
    "tso_dequant_tab": (SOURCE_DIR / "tso_dequant.c", [("x", "in"), ("y", "out"), ("tab", "in")] +
                        [(n, _S) for n in ("i0", "i1", "inner", "C", "c0", "in0")]),
    "tso_im2col": (SOURCE_DIR / "tso_im2col.c", [("x", "in"), ("p", "out")] +
                   [(n, _S) for n in ("S", "x_stride", "c0", "cg", "xc", "xh", "xw", "H", "W",
                                      "kh", "kw", "sh", "sw", "dh", "dw", "pt", "pl", "OH", "OW",
                                      "Kp", "padv", "xorv", "order")]),
    "tso_pack": (SOURCE_DIR / "tso_pack.c", [("src", "in"), ("dst", "out")] +
                 [(n, _S) for n in ("nmat", "ms", "rows", "cols", "rs", "cs", "Kp", "xorv")]),
    "tso_rowsum": (SOURCE_DIR / "tso_rowsum.c", [("p", "in"), ("s", "out"), ("rows", _S), ("Kp", _S)]),
    "tso_copy": (SOURCE_DIR / "tso_copy.c", [("src", "in"), ("dst", "out")] +
                 [(n, _S) for n in ("esz", "n0", "n1", "n2", "n3", "s0", "s1", "s2", "s3",
                                    "d0", "d1", "d2", "d3")]),
    "tso_maxpool": (SOURCE_DIR / "tso_maxpool.c", [("x", "in"), ("y", "out")] +
                    [(n, _S) for n in ("S", "C", "H", "W", "OH", "OW", "kh", "kw", "sh", "sw",
                                       "dh", "dw", "pt", "pl", "xs", "xc", "xh", "xw", "ys", "yc",
                                       "yh", "yw", "kind", "lowest")]),
    "tso_clamp": (SOURCE_DIR / "tso_clamp.c", [("x", "in"), ("y", "out")] + [(n, _S) for n in ("n", "kind", "lo", "hi")]),
    "tso_binop": (SOURCE_DIR / "tso_binop.c", [("a", "in"), ("b", "in"), ("y", "out")] +
                  [(n, _S) for n in ("n", "bn", "op")]),
    "tso_zpfix": (SOURCE_DIR / "tso_zpfix.c", [("acc", "inout"), ("rsum", "in"), ("csum", "in"), ("zw", "in")] +
                  [(n, _S) for n in ("rows", "cols", "use_r", "use_c", "za")]),
    "tso_qlbin": (SOURCE_DIR / "tso_qlbin.c", [("x", "in"), ("u", "in"), ("y", "out"), ("tab", "in"),
                                               ("fx", "in")] +
                  [(n, _S) for n in ("n", "xrep", "xper", "urep", "uper", "op", "is_signed", "r",
                                     "zc", "xorv", "fast", "zx", "zu", "lo", "hi")]),
    "tso_qlavgpool": (SOURCE_DIR / "tso_qlavgpool.c", [("x", "in"), ("y", "out"), ("dtab", "in")] +
                      [(n, _S) for n in ("S", "H", "W", "OH", "OW", "kh", "kw", "sh", "sw", "pt",
                                         "pl", "xs", "xh", "xw", "ys_", "yh", "yw", "cip", "ysc",
                                         "yz", "xorv", "lo", "hi")]),
    "tso_qlsoftmax": (SOURCE_DIR / "tso_qlsoftmax.c", [("x", "in"), ("y", "out"), ("tab", "in")] +
                      [(n, _S) for n in ("rows", "D", "inner", "is_signed", "ysc", "yz", "hi")]),
    "tso_planesum": (SOURCE_DIR / "tso_planesum.c", [("x", "in"), ("s", "out")] +
                     [(n, _S) for n in ("planes", "hw", "is_signed", "bias")]),
}


#: Codelets whose vertices cover an element range given in their fields (one vertex per
#: context, pinned: ``lower.add_chunked_vertices``) instead of dividing their work by
#: ``part`` / ``nparts``: their per-part set-up would be divisions, and the multi-cycle
#: divider costs each context several issue slots (docs/compiler.md, "ONNX importer").
SINGLE = frozenset({"tso_quant", "tso_dequant", "tso_dequant_tab"})


def codelet(graph, name: str) -> Codelet:
    """Register importer codelet ``name`` in ``graph`` once and return it."""
    if name in graph.codelets:
        return graph.codelets[name]
    src, fields = _FIELDS[name]
    c = Codelet(name, src, tuple(Field(*f) for f in fields), single=name in SINGLE)
    graph.codelets[name] = c
    return c


def matmul_codelet(graph, k: int) -> Codelet:
    """The kernel library's dense matmul codelet for depth ``k`` (a multiple of 4)."""
    from tessera.toolchain.kernels.matmul import matmul_codelet as lib
    from tessera.toolchain.graph.graph import Graph
    name = f"tsk_mm_k{k}"
    if name in graph.codelets:
        return graph.codelets[name]
    probe = Graph(graph.config)
    src = lib(probe, k).source
    c = Codelet(name, src, tuple(Field(n, kind) for n, kind in (
        ("a", "in"), ("bt", "in"), ("c", "out"), ("init", "in"), ("rows", _S), ("cols", _S))))
    graph.codelets[name] = c
    return c


def bsmm_codelet(graph, k: int, bs: int) -> Codelet:
    """The importer's block-sparse matmul codelet for depth ``k`` and block size ``bs``
    (``codelets/tso_bsmm.c.in``: the kernel library's inner loop, groups instead of a plan)."""
    from tessera.toolchain.kernels.block_sparse import _asm_loop
    from tessera.toolchain.kernels.matmul import _generated_source
    name = f"tso_bsmm_k{k}_b{bs}"
    if name in graph.codelets:
        return graph.codelets[name]
    text = ((SOURCE_DIR / "tso_bsmm.c.in").read_text().replace("@NAME@", name)
            .replace("@KS@", str(k)).replace("@BS@", str(bs)).replace("@LOOP@", _asm_loop(k, bs)))
    src = _generated_source(name, text)
    c = Codelet(name, src, tuple(Field(n, kind) for n, kind in (
        ("a", "in"), ("blk", "in"), ("rowoff", "in"), ("groups", "in"), ("c", "out"),
        ("init", "in"), ("rows", _S), ("cols", _S), ("ngroups", _S))))
    graph.codelets[name] = c
    return c
