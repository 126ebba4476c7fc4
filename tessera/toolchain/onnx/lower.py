"""The importer's operations → a Tessera graph (docs/compiler.md, "ONNX importer").

Mapping (data parallel, like the digits demo): a run processes ``S`` samples on each tile used
(all tiles in batched mode, tile 0 in single-sample mode). Every operation is one or more
compute sets with one vertex per tile (per group / matrix) covering that tile's ``S`` samples;
the runtime splits each vertex over the tile's contexts. Weights and parameter tables are
constants replicated on every tile, so nothing crosses tiles at run time. Activations live in
one byte *arena* per tile: a buffer per tensor, ``S ×`` the tensor's per-sample bytes, placed
by a first-fit allocator over the tensors' live ranges (reshapes are aliases); model inputs and
outputs are their own variables (``in:<name>``, ``out:<name>``) so the host can write and read
them.

Arithmetic (all bit-exact with ``tessera.golden_model.kernels`` and onnxruntime's CPU provider):

* 8-bit operands of ``dot4`` are int8: uint8 data are XORed with 0x80 (``u - 128``) when they
  are gathered into patches/rows, uint8 weights on the host; the zero points move by 128 too.
* ``Σ (x - zx)(w - zw) = Σ x·w - zw·Σx - zx·Σw + K·zx·zw``: the last two terms (and the bias)
  are the matmul's initial accumulators; ``zw·Σx`` is applied by ``tso_zpfix`` from the row sums
  of the patches when a weight zero point is not 0.
* requantization (onnxruntime's float32 rule, docs/architecture.md §11 rule 2): on the matrix
  engine the commands' ``FLOAT32`` output stage (§12 mode 2), elsewhere ``tso_rqf``.
* matrix engine (``config.engine_macs > 0``, unless ``engine="dot4"``): the same dot products
  in engine commands (docs/architecture.md §12, the initial accumulators as the channel
  biases); 8-bit outputs without weight zero points in ``FLOAT32`` mode (the codes, with a
  following Relu/Clip folded into the clamp), else ``RAW`` int32 + ``tso_rqf``; convolutions
  with one group, no dilation and weight zero points 0 stream their input from a padded NHWC
  copy (no im2col), uint8 with ``A_UNSIGNED`` (no XOR), which the producer of the input (a
  ``FLOAT32`` convolution, a MaxPool, the input QuantizeLinear) writes directly when it can;
  weights with zero 8-byte blocks stream only their stored blocks (``K_GATHER`` or an
  arithmetic progression, whichever takes fewer engine steps).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from tessera.golden_model.kernels import dequantize_linear, qrange, quantize_linear
from tessera.golden_model.kernels._checks import wrap_int32
from tessera.spec.engine import ACC_DEPTH, DESC_BYTES, DESC_WORDS, WRITE_DELAY
from tessera.toolchain.graph import Execute, Graph, Sequence

from .codelets import bsmm_codelet, codelet, matmul_codelet
from .errors import UnsupportedError
from .ir import ELEM_BYTES, IRGraph, Op

__all__ = ["lower", "Lowered", "Layer", "quant_table", "quant_params", "rqf_params",
           "context_chunks", "quant_fields", "chunk_fields", "add_chunked_vertices",
           "PROFILE_SLACK", "QUANT_WORDS"]

#: Extra profile records beyond two per compute set.
PROFILE_SLACK = 8
#: Estimated cycles of one small ``tso_copy`` compute set (dispatch, the parts' set-up, the
#: tile barrier; measured ~1400-1550 for the digits CNN's logits, docs/compiler.md): the
#: narrow channel groups of :meth:`_Lowerer.narrow_width` must cost fewer extra engine steps.
COPY_SET_CYCLES = 1400
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def _a4(n: int) -> int:
    return -(-int(n) // 4) * 4


def _up(n: int, q: int) -> int:
    return -(-int(n) // q) * q


# ---------------------------------------------------------------------------------------------
# host-side parameter tables
# ---------------------------------------------------------------------------------------------
def _key_to_float(keys: np.ndarray) -> np.ndarray:
    k = keys.astype(np.int64)
    bits = np.where(k >= 0, k, k ^ 0x7FFFFFFF).astype(np.int64)
    return (bits & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


def quant_table(scale, zero_point: int, dtype: str) -> np.ndarray:
    """QuantizeLinear thresholds for ``tso_quant``: int32 [256].

    Entry ``k`` (1..255) is the ordered key (float bits, negatives ``^ 0x7fffffff``) of the
    smallest float32 ``x`` with ``quantize_linear(x) >= qmin + k``, found by bisection over the
    keys with the reference :func:`tessera.golden_model.kernels.quantize_linear` (monotone in ``x``).
    Entry 0 is INT32_MIN.
    """
    qmin, _ = qrange(dtype)
    s = np.float32(scale)
    lo_key = int(np.int32(np.uint32(0xFF800000).view(np.int32)) ^ 0x7FFFFFFF)   # -inf
    hi_key = 0x7F800000                                                           # +inf
    target = qmin + np.arange(1, 256, dtype=np.int64)
    lo = np.full(255, lo_key, dtype=np.int64)     # f(lo) may be < target
    hi = np.full(255, hi_key, dtype=np.int64)     # f(hi) = qmax >= target
    q = lambda keys: quantize_linear(_key_to_float(keys), s, int(zero_point), dtype=dtype).astype(np.int64)
    ok_lo = q(lo) >= target
    while True:
        active = hi - lo > 1
        if not active.any():
            break
        mid = (lo + hi) // 2
        fm = q(mid) >= target
        hi = np.where(active & fm, mid, hi)
        lo = np.where(active & ~fm, mid, lo)
    res = np.where(ok_lo, lo, hi)
    return np.concatenate([[_INT32_MIN], res]).astype(np.int32)


#: Words per channel of ``tso_quant``'s table: 256 thresholds (entry 0 = INT32_MIN),
#: INT32_MAX (the walk's upper sentinel), R, r + 126, zp - qmin.
QUANT_WORDS = 260


def quant_params(scale, zero_point: int, dtype: str) -> np.ndarray:
    """``tso_quant``'s table of one channel: int32 [QUANT_WORDS] — :func:`quant_table`'s 256
    thresholds (they decide every code; entry 0 is INT32_MIN, the search's lower sentinel),
    INT32_MAX (its upper sentinel: no key of a non-NaN float reaches it), then the start
    estimate of the search: ``R = floor(2^r / scale)`` with ``r`` the exponent that puts R in
    [2^31, 2^32) (stored as u32), ``r + 126`` and ``zp - qmin`` (see tso_quant.c)."""
    from fractions import Fraction
    qmin, _ = qrange(dtype)
    s = Fraction(float(np.float32(scale)))
    r = 0
    while Fraction(2) ** r / s >= 2 ** 32:
        r -= 1
    while Fraction(2) ** r / s < 2 ** 31:
        r += 1
    R = int(Fraction(2) ** r / s)
    tail = np.array([_INT32_MAX, R - (1 << 32) if R >= 1 << 31 else R, r + 126,
                     int(zero_point) - qmin], np.int64)
    return np.concatenate([quant_table(scale, zero_point, dtype), tail]).astype(np.int32)


def context_chunks(n: int, contexts: int, handicap: int = 1) -> list:
    """Split elements ``0 .. n-1`` into one contiguous chunk per context.

    The last context also runs the runtime's profile marks (docs/compiler.md, "Execution
    model"), about ``handicap`` elements' worth of issue slots per compute set: it gets
    ``handicap`` elements fewer than the largest chunk (none if that leaves it nothing), and
    the other contexts share the rest evenly (the first ones one element more). Empty chunks
    are left out.

    Returns
    -------
    list of (int, int, int)
        ``(context, i0, i1)``: elements ``i0 .. i1-1`` on ``context``, in element order.

    Examples
    --------
    64 pixels on 6 contexts: 11, 11, 11, 11, 10, 10; 10 logits with ``handicap=2``: 2, 2,
    2, 2, 2, 0.
    """
    n, contexts = int(n), int(contexts)
    if contexts == 1:
        return [(0, 0, n)] if n else []
    m = -(-(n + handicap) // contexts)
    last = min(n, max(0, m - handicap))
    base, extra = divmod(n - last, contexts - 1)
    sizes = [base + (1 if k < extra else 0) for k in range(contexts - 1)] + [last]
    out, i = [], 0
    for c, k in enumerate(sizes):
        if k:
            out.append((c, i, i + k))
        i += k
    return out


#: The last context's handicap (:func:`context_chunks`) in ``tso_dequant_tab`` elements
#: (about 8 instructions each, against the 18 of a profile mark) and in ``tso_quant``
#: elements (about 27 each, against the 30 of the PROF op before the first compute set).
DEQUANT_HANDICAP = 2
QUANT_HANDICAP = 1


def quant_fields(i0: int, i1: int, *, inner: int, C: int, W: int, H: int, Cq: int, ys: int,
                 yc: int, yh: int, yw: int) -> dict:
    """The scalar fields of a ``tso_quant`` vertex for elements ``i0 .. i1-1`` (tso_quant.c):
    the start of its channel block and of its output position, computed here so that the
    codelet divides nothing.

    Element ``i`` has channel ``(i // inner) % C`` and goes to byte ``a·ys + b·yc + h·yh +
    w·yw`` of the output, ``i = ((a·Cq + b)·H + h)·W + w`` (all counts and strides in elements
    and bytes of the vertex's views)."""
    w, q = i0 % W, i0 // W
    h, q = q % H, q // H
    b, a = q % Cq, q // Cq
    return dict(i0=i0, i1=i1, inner=inner, C=C, c0=(i0 // inner) % C, in0=i0 % inner,
                y0=a * ys + b * yc + h * yh + w * yw, yw=yw, wl0=W - w, hl0=H - h, bl0=Cq - b,
                W=W, H=H, Cq=Cq, dh=yh - W * yw, db=yc - H * yh, da=ys - Cq * yc)


def chunk_fields(i0: int, i1: int, *, inner: int, C: int) -> dict:
    """The range fields of a ``tso_dequant`` / ``tso_dequant_tab`` vertex for elements
    ``i0 .. i1-1`` (channel of element ``i``: ``(i // inner) % C``)."""
    return dict(i0=i0, i1=i1, inner=inner, C=C, c0=(i0 // inner) % C, in0=i0 % inner)


def add_chunked_vertices(graph, compute_set, codelet_, tile: int, n: int, fields_of,
                         handicap: int = 1, **tensors) -> list:
    """One vertex of ``codelet_`` (a ``single`` codelet) per context on ``tile``, each
    pinned to its context and given elements ``i0 .. i1-1`` of :func:`context_chunks`.

    Parameters
    ----------
    fields_of : callable
        ``fields_of(i0, i1)`` -> dict of the vertex's scalar fields.
    handicap : int
        Context 0's handicap in elements (:func:`context_chunks`).
    **tensors
        The tensor fields (the same views for every chunk).

    Returns
    -------
    list of Vertex
    """
    out = []
    for c, i0, i1 in context_chunks(n, graph.config.contexts, handicap):
        v = graph.add_vertex(compute_set, codelet_, tile=tile, **tensors, **fields_of(i0, i1))
        v.context = c
        out.append(v)
    return out


def rqf_params(multiplier) -> np.ndarray:
    """Per-channel parameter words for ``tso_rqf``: int32 [C, 4] (see tso_float.c)."""
    m = np.asarray(multiplier, dtype=np.float32).reshape(-1)
    bits = m.view(np.uint32).astype(np.int64)
    exp = (bits >> 23) & 0xFF
    if np.any(exp == 0) or np.any(exp == 0xFF) or np.any(bits >> 31):
        raise ValueError(f"rqf_params: multipliers must be positive normal float32, got {m}")
    mant24 = (bits & 0x7FFFFF) | 0x800000
    e = exp - 150
    k = np.minimum(8, 47 + e)
    r = k - e - 32
    fast = (k >= 0) & (r >= 0) & (r <= 15)
    k = np.where(fast, k, 0)
    r = np.where(fast, r, 255)
    mant = mant24 << k
    w3 = (k << 16) | (e & 0xFFFF)
    out = np.stack([np.zeros_like(mant), mant, r, w3], axis=1)
    return ((out + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)


def _as_int8(a: np.ndarray) -> np.ndarray:
    """int8 view of 8-bit data for dot4: uint8 u -> u - 128."""
    a = np.asarray(a)
    if a.dtype == np.uint8:
        return (a.astype(np.int16) - 128).astype(np.int8)
    return a.astype(np.int8)


def _zp8(zp, dtype) -> np.ndarray:
    z = np.asarray(zp, dtype=np.int64)
    return z - 128 if np.dtype(dtype) == np.uint8 else z


# ---------------------------------------------------------------------------------------------
@dataclass
class Layer:
    """One imported operation in the report: its compute sets and useful MACs per sample."""
    index: int
    label: str
    onnx_ops: tuple
    kind: str
    compute_sets: list = field(default_factory=list)
    macs: int = 0
    sparse: dict | None = None


@dataclass
class Lowered:
    """A graph ready to compile, with what the runtime needs to feed and read it."""
    graph: Graph
    program: object
    tiles: list
    samples: int
    inputs: dict          # model input -> (variable name, per-sample shape, dtype)
    outputs: dict
    layers: list
    arena_bytes: int      # per tile
    arena_peak: tuple     # (per-sample bytes, op label, largest live tensor, its bytes)
    profile: object
    padded_bytes: int = 0  # per tile per sample: the padded inputs of engine convolutions


class _Lowerer:
    def __init__(self, ir: IRGraph, config, samples: int, tiles, sparse_mode="auto",
                 block_size=None, engine="auto"):
        self.ir, self.cfg, self.S = ir, config, samples
        if engine not in ("auto", "dot4"):
            raise UnsupportedError(f"engine must be 'auto' or 'dot4', not {engine!r}")
        #: matmuls on the matrix engine (docs/architecture.md §12) when the array has one
        self.engine = engine == "auto" and config.engine_macs > 0
        #: buffer alignment: the engine reads and writes aligned 8-byte words
        self.align = 8 if self.engine else 4
        self.tiles = list(tiles)
        self.nt = len(self.tiles)
        self.g = Graph(config)
        self.sparse_mode = sparse_mode
        self.block_size = block_size
        self.steps = []           # Execute programs in order
        self.layers = []
        self.consts = 0
        self.padded_bytes = 0     # per sample: padded engine-convolution inputs (op<i>.xpad)
        self._xpads = {}

    # -- naming / constants ------------------------------------------------------------
    def const(self, layer: Layer, what: str, arr, dtype, tensor: str | None = None) -> list:
        """A constant replicated on every tile used: returns per-tile views.

        Raises ModelMemoryError (naming ``tensor``, the model's initializer, when given) if it
        cannot fit a tile's SRAM next to what is already placed there."""
        from tessera.toolchain.graph.errors import GraphError
        from .errors import ModelMemoryError
        arr = np.asarray(arr)
        flat = arr.reshape(-1)
        if flat.size == 0:
            flat = np.zeros(1, dtype=arr.dtype)
        n = flat.size
        name = f"op{layer.index}.{what}"
        try:
            v = self.g.add_constant(name, np.broadcast_to(flat, (self.nt, n)),
                                    [(t, i * n, (i + 1) * n) for i, t in enumerate(self.tiles)],
                                    dtype=dtype)
        except GraphError as e:
            if "out of memory" not in str(e):
                raise
            tile = self.tiles[0]
            need = n * np.dtype(dtype).itemsize
            placed = self.g._tile_bytes.get(tile, 0)
            free = max(0, self.cfg.sram_bytes - placed)
            label = tensor or f"{what} of node {layer.label!r}"
            raise ModelMemoryError(
                f"the model does not fit tile {tile}: tensor {label!r} (node {layer.label!r}, "
                f"{'/'.join(layer.onnx_ops)}) needs {need} bytes on every tile used but only "
                f"{free} of the tile's {self.cfg.sram_bytes} bytes are free for it",
                label, tile, need, free) from None
        return [v[i] for i in range(self.nt)]

    def cs(self, layer: Layer, what: str):
        c = self.g.add_compute_set(f"op{layer.index}.{what}")
        layer.compute_sets.append(c.name)
        self.steps.append(Execute(c))
        return c

    def vertex(self, cset, name, i, **fields):
        self.g.add_vertex(cset, codelet(self.g, name) if not hasattr(name, "fields") else name,
                          tile=self.tiles[i], **fields)

    # -- buffers -------------------------------------------------------------------------
    def view(self, i: int, name: str, offset: int = 0, nbytes: int | None = None):
        """Tile i's bytes of tensor ``name`` (all S samples), from byte ``offset``."""
        S = self.S
        name = self.root(name)
        if name in self.io_in or name in self.io_out:
            var = self.io_in.get(name) or self.io_out.get(name)
            esz = var.dtype.itemsize
            per = var.shape[1]
            flat = var[i * S:(i + 1) * S].flatten()
            assert offset % esz == 0
            n = (S * per * esz - offset) if nbytes is None else nbytes
            return flat[offset // esz: (offset + n) // esz]
        off = self.offset[name] * S + offset
        total = self.bufsize[name] * S
        n = (total - offset) if nbytes is None else nbytes
        return self.arena[i, off: off + n]

    def root(self, name):
        while name in self.alias_of:
            name = self.alias_of[name]
        return name

    # -- allocation ----------------------------------------------------------------------
    def plan(self):
        ir = self.ir
        ops = list(ir.ops)
        self.values = dict(ir.values)
        self.outputs = list(ir.outputs)
        # graph outputs must be their own buffers: copy an alias or an input
        produced = {op.output: op for op in ops}
        from .ir import Value
        for j, o in enumerate(list(self.outputs)):
            op = produced.get(o)
            if o in ir.inputs or (op is not None and op.kind == "alias") or \
                    self.outputs.count(o) > 1:
                new = f"{o}__out{j}"
                v = self.values[o]
                self.values[new] = Value(new, v.shape, v.dtype)
                ops.append(Op("copy", f"{o} (output copy)", ("Identity",), [o], new,
                              {"mode": "flat"}))
                self.outputs[j] = new
                self.output_names[new] = o
        ops = self._fold_clamps(ops)
        produced = {op.output: op for op in ops}
        self.ops = ops
        #: ops whose engine commands requantize in their output stage (FLOAT32 mode)
        self.f32 = {i for i, op in enumerate(ops) if self._f32_ok(op)}
        self.alias_of = {op.output: op.inputs[0] for op in ops if op.kind == "alias"}
        # NHWC for 4-D tensors passed only between convolutions and pools (word copies in
        # im2col, contiguous stores in the requantization); everything else is NCHW
        cons = {}
        for op in ops:
            for k, x in enumerate(op.inputs):
                cons.setdefault(x, []).append((op, k))
        self.nhwc = set()
        for op in ops:
            v = self.values[op.output]
            if op.kind in ("conv", "maxpool") and len(v.shape) == 4 and \
                    op.output not in self.outputs and \
                    (op.kind != "conv" or op.attrs["out"][0] == "rq"):
                c = cons.get(op.output, [])
                if c and all(o.kind in ("conv", "maxpool") and k == 0 for o, k in c):
                    self.nhwc.add(op.output)
        # Conv -> MaxPool with RAW accumulators (tso_rqf path): pool the int32 accumulators,
        # then requantize 4x fewer values (the requantization is monotone non-decreasing per
        # channel, so max and requantize commute; a window without a real tap gives INT32_MIN,
        # which saturates to qmin like the code pool's lowest value when every multiplier is
        # >= 2^-23). A FLOAT32-mode convolution writes its codes and the MaxPool runs on them.
        self.pool_of, self.pooled_by, self.virtual = {}, {}, set()
        index = {id(op): i for i, op in enumerate(ops)}
        for i, op in enumerate(ops):
            if op.kind != "conv" or op.attrs["out"][0] != "rq" or op.output in self.outputs \
                    or i in self.f32:
                continue
            c = cons.get(op.output, [])
            if len(c) == 1 and c[0][0].kind == "maxpool" and c[0][1] == 0 and \
                    len(self.values[op.output].shape) == 4 and \
                    (np.all(op.attrs["out"][1] >= np.float32(2.0 ** -23))
                     or not _has_empty_window(c[0][0].attrs["geom"])):
                j = index[id(c[0][0])]
                self.pool_of[i], self.pooled_by[j] = j, i
                self.virtual.add(op.output)
        io = set(ir.inputs) | set(self.outputs)
        # convolutions the engine runs straight from a padded copy of their input (no im2col)
        self.direct = {i for i, op in enumerate(ops) if op.kind == "conv" and self._direct_ok(op)}
        # tensors whose producer writes them straight into the padded input of the direct
        # convolution that reads them (a FLOAT32 convolution's output stage or a MaxPool):
        # no buffer of their own and no pad copy
        self.pad_into = {}
        for i in sorted(self.direct):
            x = ops[i].inputs[0]
            p = produced.get(x)
            c = cons.get(x, [])
            if p is None or x in io or x in self.alias_of or len(c) != 1 or \
                    not self._covers_input(ops[i]):
                continue
            j = index[id(p)]
            if (p.kind == "conv" and j in self.f32 and j in self.direct and
                    j not in self.pool_of) or (p.kind == "maxpool" and j not in self.pooled_by) \
                    or (p.kind == "quant" and len(self.values[x].shape) == 4):
                self.pad_into[x] = i
                self.virtual.add(x)
        # temporaries per op (per-sample bytes)
        self.temps = {}
        for idx, op in enumerate(ops):
            self._plan_idx = idx
            self.temps[idx] = getattr(self, f"temps_{op.kind}")(op)
        # live ranges of arena buffers (per-sample bytes)
        first, last, size = {}, {}, {}
        for idx, op in enumerate(ops):
            if op.kind != "alias":
                r = self.root(op.output)
                if r not in io and r not in self.virtual:
                    first.setdefault(r, idx)
                    size[r] = _up(self.values[r].nbytes, self.align)
            for x in op.inputs + ([op.output] if op.kind == "alias" else []):
                r = self.root(x)
                if r not in io and r not in self.virtual:
                    last[r] = max(last.get(r, idx), idx)
            for tname, nb in self.temps[idx].items():
                key = (idx, tname)
                first[key], last[key], size[key] = idx, idx, _up(nb, self.align)
        for r in size:
            last.setdefault(r, first[r])
        order = sorted(size, key=lambda k: (first[k], -size[k]))
        placed = []          # (offset, end, last, key)
        self.offset, self.bufsize = {}, {}
        self.peak, self.peak_at = 0, (0, None, 0)
        for k in order:
            live = sorted(p for p in placed if p[2] >= first[k])
            off = 0
            for a, b, _, _ in live:
                if off + size[k] <= a:
                    break
                off = max(off, b)
            placed = live + [(off, off + size[k], last[k], k)]
            self.offset[k], self.bufsize[k] = off, size[k]
            if off + size[k] > self.peak:
                self.peak = off + size[k]
                big = max(placed, key=lambda p: p[1] - p[0])
                self.peak_at = (first[k], big[3], big[1] - big[0])

    def _f32_ok(self, op) -> bool:
        """Whether the engine requantizes ``op`` in its output stage (§12 ``FLOAT32`` mode,
        onnxruntime's float32 rule = ``tso_rqf``'s): an engine convolution or constant-weight
        matmul with 8-bit output and no weight zero point (whose row-sum correction
        ``tso_zpfix`` must run on the int32 accumulators before the requantization)."""
        if op.kind not in ("conv", "matmul") or op.attrs["out"][0] != "rq" or \
                not self.on_engine(op):
            return False
        if op.kind == "conv":
            # a group's channels start at g·Mg of an 8-aligned pixel: its commands' bytes
            # stay inside 8-byte words when Mg is a multiple of 8 or divides 8
            mg = op.attrs["geom"]["M"] // op.attrs["group"]
            return (not np.any(_zp8(op.attrs["w_zp"], op.attrs["w"].dtype) != 0)
                    and (op.attrs["group"] == 1 or mg % 8 == 0 or 8 % mg == 0))
        return not np.any(_zp8(op.attrs["b_zp"], op.attrs["b_dtype"]) != 0)

    def _fold_clamps(self, ops):
        """Relu / Clip on the codes of a ``FLOAT32``-mode convolution or matmul (its only
        consumer, not a graph output) becomes the engine's clamp: ``qmin``/``qmax`` narrowed
        to the clamp's bounds (``min(max(min(max(v, qmin), qmax), lo), hi)`` = ``min(max(v,
        lo), hi)`` for ``qmin <= lo <= hi <= qmax``); the producer writes the clamp's output
        and the clamp goes. Bounds with ``lo > hi`` stay a clamp (the engine refuses
        ``qmin > qmax``)."""
        while True:
            cons = {}
            for op in ops:
                for x in op.inputs:
                    cons.setdefault(x, []).append(op)
            prod = {op.output: k for k, op in enumerate(ops)}
            for k, op in enumerate(ops):
                if op.kind != "clamp" or self.values[op.inputs[0]].dtype not in ("int8", "uint8"):
                    continue
                lo, hi = int(op.attrs["lo"]), int(op.attrs["hi"])
                j = prod.get(op.inputs[0])
                if j is None or lo > hi or len(cons[op.inputs[0]]) != 1 or \
                        op.inputs[0] in self.outputs or not self._f32_ok(ops[j]):
                    continue
                p = ops[j]
                qmin, qmax = p.attrs.get("clip", qrange(p.attrs["out"][3]))
                if max(qmin, lo) > min(qmax, hi):
                    continue
                attrs = dict(p.attrs, clip=(max(qmin, lo), min(qmax, hi)))
                ops = list(ops)
                ops[j] = Op(p.kind, f"{p.label}+{op.label}", tuple(p.onnx_ops) + tuple(op.onnx_ops),
                            list(p.inputs), op.output, attrs)
                del ops[k]
                break
            else:
                return ops

    def _covers_input(self, op) -> bool:
        """Whether a direct convolution's padded input holds every element of its input (so
        the producer can write the whole input into it)."""
        gm = op.attrs["geom"]
        Hp = (gm["OH"] - 1) * gm["sh"] + gm["kh"]
        Wp = (gm["OW"] - 1) * gm["sw"] + gm["kw"]
        return gm["pt"] + gm["H"] <= Hp and gm["pl"] + gm["W"] <= Wp

    # -- temps per kind ------------------------------------------------------------------
    def temps_alias(self, op):
        return {}

    temps_quant = temps_dequant = temps_maxpool = temps_clamp = temps_binop = temps_copy = temps_alias
    temps_qlbin = temps_qlavgpool = temps_qlsoftmax = temps_alias

    def temps_gap(self, op):
        return {"sum": 4 * op.attrs["planes"]}

    def _conv_dims(self, op):
        gm = op.attrs["geom"]
        K = gm["cg"] * gm["kh"] * gm["kw"]
        Mg = gm["M"] // op.attrs["group"]
        return gm, K, _up(K, 8 if self.on_engine(op) else 4), gm["OH"] * gm["OW"], Mg

    def _direct_ok(self, op) -> bool:
        """A convolution the engine reads from its padded input (:meth:`_conv_direct`): on the
        engine, one group, no dilation, a 4-D input, weight zero points 0 (there are no patch
        row sums to correct them with) and output rows that fit the accumulators."""
        a, gm = op.attrs, op.attrs["geom"]
        return (self.on_engine(op) and a["group"] == 1 and gm["dh"] == 1 and gm["dw"] == 1
                and len(self.values[op.inputs[0]].shape) == 4 and gm["OW"] <= 256
                and not np.any(_zp8(a["w_zp"], a["w"].dtype) != 0))

    def f32_target(self, idx) -> str:
        """Where the ``FLOAT32`` output stage of op ``idx`` writes its codes: ``"pad"`` (the
        padded input of the direct convolution that reads them), ``"direct"`` (its output
        buffer: channels contiguous and 8-channel words, NHWC with M % 8 == 0 or matmul rows
        with N % 8 == 0) or ``"temp"`` (a scratch buffer with the channels padded to 8, then
        ``tso_copy`` into the output's layout)."""
        op = self.ops[idx]
        y = op.output
        if y in self.pad_into:
            return "pad"
        if op.kind == "conv":
            ok = self.root(y) in self.nhwc and op.attrs["geom"]["M"] % 8 == 0
        else:
            ok = op.attrs["N"] % 8 == 0
        return "direct" if ok or self.narrow_width(idx) else "temp"

    def narrow_width(self, idx) -> int:
        """Channels per command (2 or 4; 0 = not used) when the ``FLOAT32`` output of op
        ``idx`` goes straight into its output buffer in *narrow* channel groups instead of a
        scratch + ``tso_copy``: its ``M`` channels are contiguous per element (matmul rows,
        NHWC, or a 1 × 1 output map), ``M % 8 != 0``, and groups of ``g`` channels (the
        largest of 4, 2 dividing ``M``, at most the engine's lanes) start at multiples of
        ``g`` of an 8-aligned buffer, so a command's ``g`` bytes never cross an 8-byte word
        (docs/architecture.md §12 fault 4). Used when the extra commands' engine steps
        (per element block about ``DESC_WORDS + WRITE_DELAY + KB·J`` each, the dominant
        terms of §12's step count, :func:`tessera.spec.engine.command_steps`) are fewer
        than :data:`COPY_SET_CYCLES`."""
        op = self.ops[idx]
        if idx not in self.f32 or op.output in self.pad_into:
            return 0
        if op.kind == "conv":
            gm, K, Kp, P, Mg = self._conv_dims(op)
            M = gm["M"]
            if op.attrs["group"] != 1 or not (self.root(op.output) in self.nhwc or P == 1):
                return 0
            imgs = self.S * self.values[op.inputs[0]].shape[0]
            if idx in self.direct:
                KB = gm["kh"] * gm["kw"] * _up(gm["C"], 8) // 8
                rows = max(1, min(gm["OH"], ACC_DEPTH // gm["OW"]))
                J, jobs = rows * gm["OW"], imgs * -(-gm["OH"] // rows)
            else:
                KB, E = Kp // 8, imgs * P
                J, jobs = min(E, ACC_DEPTH), -(-E // ACC_DEPTH)
        else:
            a, K, Kp, M, rows, L = self._mm_dims(op)
            KB, E = Kp // 8, self.S * rows
            J, jobs = min(E, ACC_DEPTH), -(-E // ACC_DEPTH)
        lanes = self.cfg.engine_lanes
        g = 4 if M % 4 == 0 else 2
        g = min(g, lanes)
        if M % 8 == 0 or M % g or g < 2:
            return 0
        wide = len(self._lane_groups(M, True))
        extra = (M // g - wide) * jobs * (DESC_WORDS + WRITE_DELAY + KB * J)
        return g if extra < COPY_SET_CYCLES else 0

    def temps_conv(self, op):
        gm, K, Kp, P, Mg = self._conv_dims(op)
        G = op.attrs["group"]
        nimg = self.values[op.inputs[0]].shape[0]
        t = {}
        f32 = self._plan_idx in self.f32
        if f32 and self.f32_target(self._plan_idx) == "temp":
            t["q"] = nimg * P * _up(gm["M"], 8)
        for g in range(G):
            if self._plan_idx not in self.direct:
                t[f"p{g}"] = nimg * P * Kp
            if not f32:
                t[f"acc{g}"] = 4 * nimg * P * Mg
        if np.any(_zp8(op.attrs["w_zp"], op.attrs["w"].dtype) != 0):
            for g in range(G):
                t[f"rs{g}"] = 4 * nimg * P
        j = self.pool_of.get(self._plan_idx)
        if j is not None:
            pg = self.ops[j].attrs["geom"]
            for g in range(G):
                t[f"pa{g}"] = 4 * nimg * pg["OH"] * pg["OW"] * Mg
        return t

    def _mm_dims(self, op):
        a = self.values[op.inputs[0]]
        K, N = op.attrs["K"], op.attrs["N"]
        rows = int(np.prod(a.shape[:-1]))             # per sample
        L = int(np.prod(a.shape[:-2])) if len(a.shape) > 2 else 1
        return a, K, _up(K, 8 if self.on_engine(op) else 4), N, rows, L

    def on_engine(self, op) -> bool:
        """Whether the matmul of a conv / constant-weight matmul runs on the matrix engine:
        the array has one (and ``engine="auto"``) and the int32 rows of its ``RAW`` output are
        whole 8-byte words (an even number of output channels per group); otherwise ``dot4``."""
        if not self.engine:
            return False
        if op.kind == "conv":
            return (op.attrs["geom"]["M"] // op.attrs["group"]) % 2 == 0
        if op.kind == "matmul":
            return op.attrs["b"] is not None and op.attrs["N"] % 2 == 0
        return False

    def temps_matmul(self, op):
        a, K, Kp, N, rows, L = self._mm_dims(op)
        t = {}
        if K != Kp or op.attrs["a_dtype"] == "uint8":
            t["a"] = rows * Kp
        if op.attrs["b"] is None:
            t["bt"] = L * N * Kp
            if op.attrs["a_zp"] - (128 if op.attrs["a_dtype"] == "uint8" else 0) != 0:
                t["cs"] = 4 * L * N
        if self._plan_idx in self.f32:
            if self.f32_target(self._plan_idx) == "temp":
                t["q"] = rows * _up(N, 8)
        elif op.attrs["out"][0] == "rq":
            t["acc"] = 4 * rows * N
        if np.any(_zp8(op.attrs["b_zp"], op.attrs["b_dtype"]) != 0):
            t["rs"] = 4 * rows
        return t

    def tview(self, idx, i, tname, offset=0, nbytes=None):
        key = (idx, tname)
        off = self.offset[key] * self.S + offset
        n = self.bufsize[key] * self.S - offset if nbytes is None else nbytes
        return self.arena[i, off: off + n]

    # -- emit ------------------------------------------------------------------------------
    def run(self):
        ir, S = self.ir, self.S
        self.output_names = {}
        self.plan()
        arena_bytes = max(4, self.peak * S)
        self.arena = self._fit(
            lambda: self.g.add_variable("arena", (self.nt, arena_bytes), "int8",
                                        [(t, i * arena_bytes, (i + 1) * arena_bytes)
                                         for i, t in enumerate(self.tiles)]),
            f"activation arena (largest live tensor {self.peak_at[1]!r})", arena_bytes)
        self.arena.align = max(self.arena.align, self.align)
        self.io_in, self.io_out = {}, {}
        io_info_in, io_info_out = {}, {}
        for kind, names, store, info in (("in", ir.inputs, self.io_in, io_info_in),
                                         ("out", self.outputs, self.io_out, io_info_out)):
            for n in names:
                v = self.values[n]
                dt = {"float32": "int32"}.get(v.dtype, v.dtype)
                per = v.size
                var = self._io_variable(f"{kind}.{len(store)}", self.output_names.get(n, n),
                                        kind, (self.nt * S, per), dt)
                store[n] = var
                info[self.output_names.get(n, n)] = (var.name, v.shape, v.dtype)
        for idx, op in enumerate(self.ops):
            layer = Layer(idx, op.label, op.onnx_ops, op.kind)
            self.layers.append(layer)
            self.cur = idx
            getattr(self, f"emit_{op.kind}")(op, layer)
        nsets = len(self.g.compute_sets)
        width = 1 + 2 * (2 * nsets + PROFILE_SLACK)
        N = self.cfg.tiles
        prof = self._fit(lambda: self.g.add_variable(
            "profile", (N, width), "int32", [(t, t * width, (t + 1) * width) for t in range(N)]),
            "superstep profile records", 4 * width)
        peak_label = self.ops[self.peak_at[0]].label if self.peak_at[1] is not None else ""
        big = self.peak_at[1]
        big_name = big if isinstance(big, str) else (
            f"scratch {big[1]!r} of {self.ops[big[0]].label}" if big else "")
        return Lowered(self.g, Sequence(*self.steps), self.tiles, S, io_info_in, io_info_out,
                       [l for l in self.layers if l.compute_sets], arena_bytes,
                       (self.peak, peak_label, big_name, self.peak_at[2]), prof,
                       self.padded_bytes)

    def _fit(self, make, what, need):
        """Run ``make`` (an add_variable); ModelMemoryError naming ``what`` if it does not fit."""
        from tessera.toolchain.graph.errors import GraphError
        from .errors import ModelMemoryError
        try:
            return make()
        except GraphError as e:
            if "out of memory" not in str(e):
                raise
            tile = self.tiles[0]
            free = max(0, self.cfg.sram_bytes - self.g._tile_bytes.get(tile, 0))
            raise ModelMemoryError(
                f"the model does not fit tile {tile}: the {what} needs {need} bytes but only "
                f"{free} of the tile's {self.cfg.sram_bytes} bytes are free for it", what, tile,
                need, free) from None

    def _io_variable(self, var_name, tensor, kind, shape, dt):
        """A model input/output buffer; ModelMemoryError naming the tensor if it does not fit."""
        from tessera.toolchain.graph.errors import GraphError
        from .errors import ModelMemoryError
        per = shape[1]
        try:
            v = self.g.add_variable(var_name, shape, dt,
                                    [(t, i * self.S * per, (i + 1) * self.S * per)
                                     for i, t in enumerate(self.tiles)])
            v.align = max(v.align, self.align)
            return v
        except GraphError as e:
            if "out of memory" not in str(e):
                raise
            tile = self.tiles[0]
            need = self.S * per * np.dtype(dt).itemsize
            free = max(0, self.cfg.sram_bytes - self.g._tile_bytes.get(tile, 0))
            raise ModelMemoryError(
                f"the model does not fit tile {tile}: graph {kind}put {tensor!r} needs {need} "
                f"bytes ({self.S} sample(s)) but only {free} of the tile's {self.cfg.sram_bytes} "
                "bytes are free for it (after the activation arena and earlier inputs/outputs)",
                tensor, tile, need, free) from None

    # quantize / dequantize
    def emit_quant(self, op, layer):
        a = op.attrs
        x, y = op.inputs[0], op.output
        v = self.values[x]
        dt = self.values[y].dtype
        C = a["channels"]
        scales = np.broadcast_to(a["scale"], (C,))
        zps = np.broadcast_to(a["zero_point"], (C,))
        tab = np.concatenate([quant_params(s, int(z), dt) for s, z in zip(scales, zps)])
        tv = self.const(layer, "tab", tab, "int32")
        if y in self.pad_into:
            # straight into the padded NHWC input of the convolution that reads the codes
            xpad, xg = self._xpad(self.pad_into[y])
            _, Cq, H, W = self.values[y].shape
            yview = lambda i: xpad[i][xg["base"]:]
            m = dict(W=W, H=H, Cq=Cq, ys=xg["img"], yc=1, yh=xg["row"], yw=xg["px"])
        else:
            yview = lambda i: self.view(i, y)
            m = dict(W=v.size, H=1, Cq=1, ys=v.size, yc=0, yh=0, yw=1)
        cset = self.cs(layer, "quant")
        qmin = qrange(dt)[0]
        for i in range(self.nt):
            add_chunked_vertices(
                self.g, cset, codelet(self.g, "tso_quant"), self.tiles[i], self.S * v.size,
                lambda i0, i1: dict(quant_fields(i0, i1, inner=a["inner"], C=C, **m), qmin=qmin),
                handicap=QUANT_HANDICAP, x=self.view(i, x), y=yview(i), tab=tv[i])

    def emit_dequant(self, op, layer):
        a = op.attrs
        x, y = op.inputs[0], op.output
        v = self.values[x]
        C = a["channels"]
        scales = np.broadcast_to(a["scale"], (C,)).astype(np.float32)
        zps = np.broadcast_to(a["zero_point"], (C,)).astype(np.int64)
        kind = {"int8": 0, "uint8": 1, "int32": 2}[v.dtype]
        if kind < 2 and C <= 4:
            # 8-bit input: the 256 results per channel, from the reference rule
            codes = np.arange(256, dtype=np.uint8).view(v.dtype)
            tab = np.stack([dequantize_linear(codes, sc, int(z)) for sc, z in zip(scales, zps)])
            tv = self.const(layer, "tab", tab.view(np.int32), "int32")
            cset = self.cs(layer, "dequant")
            for i in range(self.nt):
                add_chunked_vertices(
                    self.g, cset, codelet(self.g, "tso_dequant_tab"), self.tiles[i],
                    self.S * v.size, lambda i0, i1: chunk_fields(i0, i1, inner=a["inner"], C=C),
                    handicap=DEQUANT_HANDICAP, x=self.view(i, x), y=self.view(i, y), tab=tv[i])
            return
        params = np.stack([zps, scales.view(np.int32).astype(np.int64)], axis=1)
        pv = self.const(layer, "params", params, "int32")
        cset = self.cs(layer, "dequant")
        for i in range(self.nt):
            add_chunked_vertices(
                self.g, cset, codelet(self.g, "tso_dequant"), self.tiles[i], self.S * v.size,
                lambda i0, i1: dict(chunk_fields(i0, i1, inner=a["inner"], C=C), kind=kind),
                x=self.view(i, x), y=self.view(i, y), params=pv[i])

    # conv
    def _rq_vertices(self, layer, cset, i, acc, out_view, out, P, M, os_s, os_p, os_m, pv, *,
                     nrows):
        """tso_rqf over ``nrows`` rows of ``acc`` (not derived from the view's size: buffers
        are rounded up to the alignment), ``P`` rows per output block of ``os_s`` bytes."""
        _, mult, zp, dt = out
        qmin, qmax = qrange(dt)
        if os_s == P * os_p:
            P = os_s = nrows           # the blocks are contiguous: one block (fewer calls)
        self.vertex(cset, "tso_rqf", i, acc=acc, out=out_view, params=pv, rows=nrows, P=P,
                    M=M, os_s=os_s, os_p=os_p, os_m=os_m, zp=zp, ylo=qmin - zp, yhi=qmax - zp)

    def _layout_strides(self, name, shape4):
        """Element strides (c, h, w) and per-image stride of a 4-D tensor in its layout."""
        n, c, h, w = shape4
        if name in self.nhwc:
            return (1, w * c, c), c * h * w
        return (h * w, w, 1), c * h * w

    def emit_conv(self, op, layer):
        """A convolution: engine from the padded input (:meth:`_conv_direct`) or im2col +
        matmul (:meth:`_conv_im2col`), then pooling / requantization (:meth:`_conv_output`)."""
        a = op.attrs
        idx = self.cur
        gm, K, Kp, P, Mg = self._conv_dims(op)
        M = gm["M"]
        nimg = self.values[op.inputs[0]].shape[0]
        imgs = self.S * nimg
        xdt = a["x_dtype"]
        xorv = 0x80 if xdt == "uint8" else 0
        zx = int(_zp8(a["x_zp"], xdt))
        w8 = _as_int8(a["w"])                                # [M, cg, kh, kw]
        zw = _zp8(a["w_zp"], a["w"].dtype)                  # [M]
        bias = a["bias"] if a["bias"] is not None else np.zeros(M, np.int64)
        layer.macs = nimg * P * M * K
        if idx in self.direct:
            self._conv_direct(op, layer, idx, imgs, w8, bias)
        else:
            self._conv_im2col(op, layer, idx, imgs, w8, zw, bias, xorv, zx)
        if idx not in self.f32:
            self._conv_output(op, layer, idx, imgs)

    def _xpad(self, idx):
        """The padded NHWC input ``op<idx>.xpad`` of direct convolution ``idx`` (created on
        first use: by the convolution, or earlier by the producer that writes into it): per
        image ``Hp × Wp × Cp`` bytes, a constant whose padding taps hold the input zero point.
        Returns ``(per-tile views, geometry)``; geometry ``base`` is the byte offset of input
        element (0, 0) in an image, ``img``/``row``/``px`` the image, row and pixel strides."""
        if idx in self._xpads:
            return self._xpads[idx]
        from tessera.toolchain.kernels.engine import require_align
        op = self.ops[idx]
        a, gm = op.attrs, op.attrs["geom"]
        nimg = self.values[op.inputs[0]].shape[0]
        unsigned = a["x_dtype"] == "uint8"
        C = gm["C"]
        Cp = _up(C, 8)
        Hp = (gm["OH"] - 1) * gm["sh"] + gm["kh"]
        Wp = (gm["OW"] - 1) * gm["sw"] + gm["kw"]
        pad = np.zeros((Hp, Wp, Cp), np.uint8 if unsigned else np.int8)
        pad[..., :C] = int(a["x_zp"])
        xpad = self.const(Layer(idx, op.label, op.onnx_ops, op.kind), "xpad",
                          np.broadcast_to(pad, (self.S * nimg,) + pad.shape),
                          "uint8" if unsigned else "int8")
        require_align(xpad[0])
        self.padded_bytes += _up(nimg * Hp * Wp * Cp, 8)
        geo = dict(Cp=Cp, Hp=Hp, Wp=Wp, img=Hp * Wp * Cp, row=Wp * Cp, px=Cp,
                   base=(gm["pt"] * Wp + gm["pl"]) * Cp)
        self._xpads[idx] = (xpad, geo)
        return self._xpads[idx]

    def _lane_groups(self, M, byte_out, width=0):
        """Output channel groups ``(m0, nc)`` of one command each: ``engine_lanes`` channels,
        and in a byte output mode never across an 8-channel boundary (the C bytes of an
        element must stay in one 8-byte word, §12 fault 4, given 8-aligned pixel strides);
        in ``RAW`` mode ``m0`` stays even (the int32 rows are whole 8-byte words). ``width``
        > 0: groups of exactly ``width`` channels (:meth:`narrow_width`)."""
        if width:
            return [(m0, width) for m0 in range(0, M, width)]
        lanes = self.cfg.engine_lanes
        out, m0 = [], 0
        while m0 < M:
            nc = min(lanes, M - m0)
            if byte_out:
                nc = min(nc, 8 - m0 % 8)
            out.append((m0, nc))
            m0 += nc
        return out

    def _stream_choice(self, used, KB, J, C):
        """How a command streams its K blocks when only the blocks ``used`` (sorted block
        addresses) hold a nonzero weight: ``("dense",)``, ``("prog", b0, d, L)`` (the
        shortest arithmetic progression holding them, zero weights in its gaps) or
        ``("gather", n)`` (``K_GATHER``: exactly the n used blocks, one gather step each),
        whichever has the fewest engine steps ``G·K1 + KB·C + (KB − 1)·J`` (§12; the other
        terms of :func:`tessera.spec.engine.command_steps`, ``8 + 2C + J·OW + WRITE_DELAY``,
        do not depend on the choice). A group without a used block streams one zero
        block (its outputs are the bias alone)."""
        from tessera.toolchain.kernels.block_sparse import progression_cover
        cost = lambda kb, g: g * kb + kb * C + (kb - 1) * J
        best = (cost(KB, 0), ("dense",))
        if self.sparse_mode != "auto":
            return best[1]
        if not len(used):
            return ("prog", 0, 1, 1)
        b0, d, L = progression_cover(used)
        for c, choice in ((cost(L, 0), ("prog", b0, d, L)),
                          (cost(len(used), 1), ("gather", len(used)))):
            if c < best[0]:
                best = (c, choice)
        return best[1]

    def _gather_table(self, layer, tables):
        """The ``K_GATHER`` tables of a layer's commands as one constant (8 bytes per entry:
        the u32 byte offset, then an ignored word); returns (per-tile views, offsets)."""
        from tessera.toolchain.kernels.engine import require_align
        offs, rows, n = [], [], 0
        for t in tables:
            offs.append(8 * n)
            rows.extend([int(v), 0] for v in t)
            n += len(t)
        gv = self.const(layer, "gather", np.array(rows, np.int64).astype(np.int32).reshape(-1),
                        "int32")
        require_align(gv[0])
        return gv, offs

    def _f32_fields(self, op):
        """``FLOAT32`` output fields of op: (multipliers float32 [M], descriptor fields)."""
        from tessera.spec.engine import Flag, Mode
        _, mult, zp, dt = op.attrs["out"]
        qmin, qmax = op.attrs.get("clip", qrange(dt))
        return mult, dict(mode=Mode.FLOAT32, zp=int(zp), qmin=int(qmin), qmax=int(qmax),
                          flags=int(Flag.OUT_UNSIGNED) if dt == "uint8" else 0)

    def _out_target(self, idx, i, P, OW, M):
        """Tile i's ``FLOAT32`` output of conv/matmul ``idx`` (see :meth:`f32_target`):
        ``(view, base, image stride, row stride, pixel stride)`` in bytes."""
        kind = self.f32_target(idx)
        y = self.ops[idx].output
        if kind == "pad":
            xv, g = self._xpad(self.pad_into[y])
            return xv[i], g["base"], g["img"], g["row"], g["px"]
        if kind == "direct":
            return self.view(i, y), 0, P * M, OW * M, M
        Mp = _up(M, 8)
        return self.tview(idx, i, "q"), 0, P * Mp, OW * Mp, Mp

    def _copy_out(self, layer, idx, imgs, P, OH, OW, M):
        """``temp`` target: the codes [image, pixel, Mp] -> the output in its layout."""
        y = self.ops[idx].output
        Mp = _up(M, 8)
        if self.ops[idx].kind == "conv":
            (yc, yh, yw), ys = self._layout_strides(self.root(y), (imgs // self.S, M, OH, OW))
        else:
            yc, yh, yw, ys = 1, 0, M, P * M
        cset = self.cs(layer, "out")
        for i in range(self.nt):
            self._copy(cset, i, self.tview(idx, i, "q"), self.view(i, y), 1,
                       [imgs, OH, OW, M] if M >= OW else [imgs, OH, M, OW],
                       [P * Mp, OW * Mp, Mp, 1] if M >= OW else [P * Mp, OW * Mp, 1, Mp],
                       [ys, yh, yw, yc] if M >= OW else [ys, yh, yc, yw])

    def _conv_direct(self, op, layer, idx, imgs, w8, bias):
        """Engine convolution from a padded NHWC copy of the input (docs/compiler.md, "ONNX
        importer"): ``op<i>.xpad`` (:meth:`_xpad`), filled by the ``pad`` step's ``tso_copy``
        of the interior, or written directly by the input's producer (``pad_into``); 8-bit
        data as they are (uint8 with the engine's ``A_UNSIGNED``). Per image, group of output
        rows (J ≤ 256) and group of ≤ M channels one command: dense, k0 over the ``kw·Cp/8``
        blocks of a kernel row and k1 over the ``kh`` rows; a group whose nonzero 8-byte
        weight blocks (block address ``(r·Wp + s)·Cp/8 + c``) are few streams only those
        (:meth:`_stream_choice`: ``K_GATHER`` or an arithmetic progression). Accumulators start
        at ``bias - zx·Σw``; ``FLOAT32`` output (the codes, :meth:`_out_target`) or ``RAW``
        int32 into the ``acc`` rows of the im2col path."""
        from tessera.spec.engine import ACC_DEPTH, Flag, Mode
        from tessera.toolchain.kernels.engine import Command, add_engine_vertex, require_align
        a = op.attrs
        gm = a["geom"]
        x = op.inputs[0]
        C, H, W, M = gm["C"], gm["H"], gm["W"], gm["M"]
        kh, kw, sh, sw, OH, OW = gm["kh"], gm["kw"], gm["sh"], gm["sw"], gm["OH"], gm["OW"]
        pt, pl = gm["pt"], gm["pl"]
        nimg = self.values[x].shape[0]
        unsigned = a["x_dtype"] == "uint8"
        zx = int(a["x_zp"])                             # as stored (uint8 read unsigned)
        xpad, xg = self._xpad(idx)
        Cp, Hp, Wp, img = xg["Cp"], xg["Hp"], xg["Wp"], xg["img"]
        CB = Cp // 8
        K = kh * kw * Cp
        KB = kh * kw * CB
        f32 = idx in self.f32
        wt = np.zeros((M, kh, kw, Cp), np.int8)
        wt[..., :C] = w8.transpose(0, 2, 3, 1)
        init = wrap32(bias - zx * w8.astype(np.int64).reshape(M, -1).sum(axis=1))
        P = OH * OW
        rows = max(1, min(OH, ACC_DEPTH // OW))
        # weights per channel group: dense, or only the blocks with a nonzero weight
        nzb = (wt.reshape(M, kh, kw, CB, 8) != 0).any(axis=4)          # [M, kh, kw, CB]
        groups, chunks, tables, off, stored, streamed = [], [], [], 0, 0, 0
        for m0, nc in self._lane_groups(M, f32, self.narrow_width(idx)):
            r, q, c = np.nonzero(nzb[m0:m0 + nc].any(axis=0))
            addrs = (r * Wp + q) * CB + c                              # in 8-byte blocks
            stored += len(addrs)
            ch = self._stream_choice(addrs, KB, rows * OW, nc)
            if ch[0] == "dense":
                blk, L = wt[m0:m0 + nc].reshape(nc, K), KB
                geo = dict(a_off=0, K0=kw * CB, K1=kh, ak_s1=Wp * Cp, w_sm=K, table=None)
            else:
                seq = addrs if ch[0] == "gather" else ch[1] + ch[2] * np.arange(ch[3])
                L = len(seq)
                blk = np.zeros((nc, L, 8), np.int8)
                for l, b in enumerate(seq):
                    rr, rem = divmod(int(b), Wp * CB)
                    qq, cc = divmod(rem, CB)
                    if rr < kh and qq < kw:
                        blk[:, l] = wt[m0:m0 + nc, rr, qq, 8 * cc:8 * cc + 8]
                if ch[0] == "gather":
                    geo = dict(a_off=0, K0=1, K1=L, ak_s1=None, w_sm=8 * L, table=len(tables))
                    tables.append(8 * np.asarray(seq, np.int64))
                else:
                    geo = dict(a_off=8 * ch[1], K0=1, K1=L, ak_s1=8 * ch[2], w_sm=8 * L,
                               table=None)
            streamed += L
            groups.append((m0, nc, off, geo))
            chunks.append(blk.reshape(-1))
            off += blk.size
        total = len(groups) * KB
        if streamed < total:
            layer.sparse = self._engine_sparse_record(stored, streamed, total, bool(tables))
        wv = self.const(layer, "w", np.concatenate(chunks), "int8", a.get("w_name"))
        require_align(wv[0])
        if tables:
            gv, goffs = self._gather_table(layer, tables)
        if f32:
            mult, ofields = self._f32_fields(op)
            pv = self._engine_params(layer, "ep", init, mult)
        else:
            pv = self._engine_params(layer, "ep", init)
            ofields = dict(mode=Mode.RAW, flags=0)
        aflags = int(Flag.A_UNSIGNED) if unsigned else 0
        if x not in self.pad_into:
            self._pad_copy(layer, x, xpad, xg, nimg, C, H, W)
        c2 = self.cs(layer, "mm")
        for i in range(self.nt):
            if f32:
                tv, tb, tis, trs, tps = self._out_target(idx, i, P, OW, M)
            else:
                tv, tb, tis, trs, tps = self.tview(idx, i, "acc0"), 0, 4 * P * M, 4 * OW * M, 4 * M
            cmds = []
            for n in range(imgs):
                for r0 in range(0, OH, rows):
                    nr = min(rows, OH - r0)
                    for m0, nc, woff, geo in groups:
                        gth = geo["table"] is not None
                        cmds.append(Command(
                            a_base=(xpad[i], n * img + r0 * sh * Wp * Cp + geo["a_off"]),
                            a_s0=sw * Cp, a_s1=sh * Wp * Cp,
                            ak_s1=(gv[i], goffs[geo["table"]]) if gth else geo["ak_s1"],
                            w_base=(wv[i], woff), w_sm=geo["w_sm"],
                            c_base=(tv, tb + n * tis + r0 * trs + (m0 if f32 else 4 * m0)),
                            c_s0=tps, c_s1=trs, p_base=(pv[i], 16 * m0), J0=OW, J1=nr,
                            K0=geo["K0"], K1=geo["K1"], C=nc,
                            **dict(ofields, flags=ofields["flags"] | aflags
                                   | (int(Flag.K_GATHER) if gth else 0))))
            dname = f"op{layer.index}.mm.desc{self.tiles[i]}"
            self._fit(lambda: add_engine_vertex(self.g, c2, self.tiles[i], cmds, dname),
                      f"engine descriptor table {dname!r} of node {op.label!r}",
                      DESC_BYTES * len(cmds))
        if f32 and self.f32_target(idx) == "temp":
            self._copy_out(layer, idx, imgs, P, OH, OW, M)

    def _engine_sparse_record(self, stored, streamed, total, gather):
        """The layer report's ``sparse`` record of an engine layer that skips blocks: 8-byte
        blocks of ``engine_lanes`` channels; ``stored`` / ``streamed`` / ``total`` blocks and
        whether a K_GATHER table streams them (architecture §12)."""
        return {"kernel": "engine_block_sparse", "block_size": 8,
                "block_channels": self.cfg.engine_lanes, "blocks_stored": int(stored),
                "blocks_streamed": int(streamed), "blocks_total": int(total),
                "density": float(stored / total), "gather": gather}

    def _pad_copy(self, layer, x, xpad, xg, nimg, C, H, W):
        """The ``pad`` step: the input (in its layout) -> the interior of ``xpad``."""
        Cp, Hp, Wp, img = xg["Cp"], xg["Hp"], xg["Wp"], xg["img"]
        pt_pl = xg["base"]
        (xc, xh, xw), xs = self._layout_strides(self.root(x), (nimg, C, H, W))
        pt = pt_pl // (Wp * Cp)
        pl = (pt_pl - pt * Wp * Cp) // Cp
        hh, ww = min(H, Hp - pt), min(W, Wp - pl)
        dims, src, dst, esz = [self.S * nimg, hh, ww, C], [xs, xh, xw, xc], [img, Wp * Cp, Cp, 1], 1
        if xc == 1 and C % 4 == 0 and all(v % 4 == 0 for v in (xs, xh, xw)):
            # whole words of channels (NHWC, C a multiple of 4): word copies
            dims[3], esz = C // 4, 4
            src, dst = [v // 4 for v in src[:3]] + [1], [v // 4 for v in dst[:3]] + [1]
        elif C < ww:
            # the longer axis innermost (the copy loops over the outer three)
            dims, src, dst = ([dims[0], hh, C, ww], [xs, xh, xc, xw], [img, Wp * Cp, 1, Cp])
        c1 = self.cs(layer, "pad")
        for i in range(self.nt):
            self.vertex(c1, "tso_copy", i, src=self.view(i, x), dst=xpad[i][pt_pl:], esz=esz,
                        n0=dims[0], n1=dims[1], n2=dims[2], n3=dims[3], s0=src[0], s1=src[1],
                        s2=src[2], s3=src[3], d0=dst[0], d1=dst[1], d2=dst[2], d3=dst[3])

    def _conv_im2col(self, op, layer, idx, imgs, w8, zw, bias, xorv, zx):
        """im2col patches, then the matmul (engine or ``dot4``) and the zero-point fix."""
        a = op.attrs
        gm, K, Kp, P, Mg = self._conv_dims(op)
        G, M, cg = a["group"], gm["M"], gm["cg"]
        x = op.inputs[0]
        nimg = self.values[x].shape[0]
        rows = imgs * P
        use_rs = bool(np.any(zw != 0))
        (xc, xh, xw), xs = self._layout_strides(self.root(x), (nimg, gm["C"], gm["H"], gm["W"]))
        order = 1 if (self.root(x) in self.nhwc and gm["C"] > 1) else 0
        wk = (w8.transpose(0, 2, 3, 1) if order == 1 else w8).reshape(M, K)   # patch order
        init = wrap32(bias - zx * wk.astype(np.int64).sum(axis=1) + K * zx * zw)
        bts, inits, zws = [], [], []
        eng = self.on_engine(op)
        f32 = idx in self.f32
        if f32:
            mult, ofields = self._f32_fields(op)
        for g in range(G):
            bt = np.zeros((Mg, Kp), np.int8)
            bt[:, :K] = wk[g * Mg:(g + 1) * Mg]
            bts.append(bt)
            ig = init[g * Mg:(g + 1) * Mg]
            inits.append(self._engine_params(layer, f"ep{g}", ig,
                                             mult[g * Mg:(g + 1) * Mg] if f32 else None)
                         if eng else self.const(layer, f"init{g}", ig, "int32"))
            if use_rs:
                zws.append(self.const(layer, f"zw{g}", zw[g * Mg:(g + 1) * Mg], "int32"))
        c1 = self.cs(layer, "im2col")
        for i in range(self.nt):
            for g in range(G):
                self.vertex(c1, "tso_im2col", i, x=self.view(i, x), p=self.tview(idx, i, f"p{g}"),
                            S=imgs, x_stride=xs, c0=g * cg, cg=cg, xc=xc, xh=xh, xw=xw,
                            H=gm["H"], W=gm["W"], kh=gm["kh"], kw=gm["kw"], sh=gm["sh"],
                            sw=gm["sw"], dh=gm["dh"], dw=gm["dw"], pt=gm["pt"], pl=gm["pl"],
                            OH=gm["OH"], OW=gm["OW"], Kp=Kp, padv=(zx & 0xFF), xorv=xorv,
                            order=order)
        if use_rs:
            cr = self.cs(layer, "rowsum")
            for i in range(self.nt):
                for g in range(G):
                    self.vertex(cr, "tso_rowsum", i, p=self.tview(idx, i, f"p{g}"),
                                s=self.tview(idx, i, f"rs{g}"), rows=rows, Kp=Kp)
        if eng:
            # byte output: a group's channels start at g·Mg of the 8-aligned pixel; with
            # Mg % 8 == 0 or 8 % Mg == 0 (_f32_ok) groups capped at 8-channel words stay in
            # their words
            mms = [self._engine_weights(layer, f"w{g}", bts[g], a.get("w_name"),
                                        J=min(rows, 256), byte_out=f32,
                                        width=self.narrow_width(idx)) for g in range(G)]
        else:
            mms = [self._matmul_weights(layer, f"w{g}", bts[g], a.get("w_name"))
                   for g in range(G)]
        c2 = self.cs(layer, "mm")
        for i in range(self.nt):
            for g in range(G):
                if eng and f32:
                    tv, tb, _, _, tps = self._out_target(idx, i, P, gm["OW"], M)
                    self._engine_mm(layer, c2, i, self.tview(idx, i, f"p{g}"), mms[g],
                                    tv[tb + g * Mg:], inits[g], rows, Mg, Kp, f"mm{g}",
                                    out=(tps, ofields))
                elif eng:
                    self._engine_mm(layer, c2, i, self.tview(idx, i, f"p{g}"), mms[g],
                                    self.tview(idx, i, f"acc{g}"), inits[g], rows, Mg, Kp,
                                    f"mm{g}")
                else:
                    self._mm_vertex(c2, i, self.tview(idx, i, f"p{g}"), mms[g],
                                    self.tview(idx, i, f"acc{g}"), inits[g][i], rows, Mg, Kp)
        if use_rs:
            cz = self.cs(layer, "zpfix")
            for i in range(self.nt):
                for g in range(G):
                    self.vertex(cz, "tso_zpfix", i, acc=self.tview(idx, i, f"acc{g}"),
                                rsum=self.tview(idx, i, f"rs{g}"), csum=zws[g][i], zw=zws[g][i],
                                rows=rows, cols=Mg, use_r=1, use_c=0, za=0)
        if f32 and self.f32_target(idx) == "temp":
            self._copy_out(layer, idx, imgs, P, gm["OH"], gm["OW"], M)

    def _conv_output(self, op, layer, idx, imgs):
        """The accumulators ``acc<g>`` -> the output: optional fused max pool (on the int32
        accumulators), then the requantization (or the int32 store)."""
        a = op.attrs
        gm, K, Kp, P, Mg = self._conv_dims(op)
        G, M = a["group"], gm["M"]
        y = op.output
        out = a["out"]
        j = self.pool_of.get(idx)
        if j is not None:
            # max pool the accumulators (NHWC words), requantize the pooled values into the
            # pool's output
            pop = self.ops[j]
            pg = pop.attrs["geom"]
            layer.label = f"{layer.label}+{pop.label}"
            layer.onnx_ops = tuple(layer.onnx_ops) + tuple(pop.onnx_ops)
            P2 = pg["OH"] * pg["OW"]
            cp = self.cs(layer, "maxpool")
            for i in range(self.nt):
                for g in range(G):
                    self.vertex(cp, "tso_maxpool", i, x=self.tview(idx, i, f"acc{g}"),
                                y=self.tview(idx, i, f"pa{g}"), S=imgs, C=Mg, H=gm["OH"],
                                W=gm["OW"], OH=pg["OH"], OW=pg["OW"], kh=pg["kh"], kw=pg["kw"],
                                sh=pg["sh"], sw=pg["sw"], dh=pg["dh"], dw=pg["dw"], pt=pg["pt"],
                                pl=pg["pl"], xs=P * Mg, xc=1, xh=gm["OW"] * Mg, xw=Mg,
                                ys=P2 * Mg, yc=1, yh=pg["OW"] * Mg, yw=Mg, kind=3,
                                lowest=_INT32_MIN)
            y = pop.output
            P = P2
        c3 = self.cs(layer, "requant" if out[0] == "rq" else "store")
        if out[0] == "rq":
            pvs = [self.const(layer, f"rq{g}", rqf_params(out[1][g * Mg:(g + 1) * Mg]), "int32")
                   for g in range(G)]
        y_nhwc = self.root(y) in self.nhwc
        for i in range(self.nt):
            for g in range(G):
                acc = self.tview(idx, i, f"pa{g}" if j is not None else f"acc{g}")
                if out[0] == "rq":
                    if y_nhwc:
                        self._rq_vertices(layer, c3, i, acc, self.view(i, y, g * Mg), out, P,
                                          Mg, M * P, M, 1, pvs[g][i], nrows=imgs * P)
                    else:
                        self._rq_vertices(layer, c3, i, acc, self.view(i, y, g * Mg * P), out,
                                          P, Mg, M * P, 1, P, pvs[g][i], nrows=imgs * P)
                else:
                    self.vertex(c3, "tso_copy", i, src=acc, dst=self.view(i, y, 4 * g * Mg * P),
                                esz=4, n0=imgs, n1=Mg, n2=1, n3=P, s0=P * Mg, s1=1, s2=0,
                                s3=Mg, d0=M * P, d1=P, d2=0, d3=1)

    def _matmul_weights(self, layer, what, bt, tensor=None):
        """Constant weights B^T [N, Kp] (int8) for the matmul vertices: dense per-tile views,
        or the block-sparse form when the weights have enough zero blocks (see
        :func:`choose_blocks`; ``sparse_mode="dense"`` turns the detection off)."""
        if self.sparse_mode == "auto":
            choice = choose_blocks(bt.T, self.block_size)
            if choice is not None:
                from tessera.toolchain.kernels.block_sparse import pack_blocks
                bs, w = choice
                blk, rowoff, colptr = pack_blocks(w)
                nz = max(w.nnzb, 1)
                if w.nnzb == 0:
                    blk, rowoff = np.zeros((1, bs, bs), np.int8), np.zeros(1, np.int32)
                groups = []
                for j in range(len(colptr) - 1):
                    z0, z1 = int(colptr[j]), int(colptr[j + 1])
                    for g in range(bs // 4):
                        col0 = j * bs + 4 * g
                        groups.append((-1 if z1 == z0 else 0, 4 * col0, 4 * col0,
                                       z0 * bs * bs + 4 * g * bs, 4 * z0, 4 * z1))
                kb, nb = w.grid
                layer.sparse = {"kernel": "block_sparse", "block_size": bs,
                                "blocks_stored": int(w.nnzb), "blocks_total": int(kb * nb),
                                "density": float(w.nnzb / (kb * nb))}
                return ("sparse", {
                    "bs": bs, "ngroups": len(groups),
                    "blk": self.const(layer, f"{what}.blk", blk.reshape(nz, bs * bs), "int8",
                                      tensor),
                    "rowoff": self.const(layer, f"{what}.rowoff", rowoff, "int32"),
                    "groups": self.const(layer, f"{what}.groups", np.array(groups), "int32")})
        return ("dense", self.const(layer, what, bt, "int8", tensor))

    # -- matrix engine (docs/architecture.md §12) ---------------------------------------
    def _engine_params(self, layer, what, init, mult=None):
        """The engine's channel parameter records, per-tile views, 8-byte aligned: bias = the
        initial accumulators; ``RAW`` mode (``mult`` None) ignores the multiplier and shift,
        ``FLOAT32`` mode gets the float32 multipliers ``mult`` [C] (§12)."""
        from tessera.toolchain.kernels.engine import (float32_param_table, param_table,
                                                      require_align)
        if mult is None:
            tab = param_table(init)
        else:
            tab = float32_param_table(init, np.asarray(mult, np.float32), len(init),
                                      f"node {layer.label!r}")
        v = self.const(layer, what, tab, "int32")
        require_align(v[0])
        return v

    def _engine_weights(self, layer, what, bt, tensor=None, J=ACC_DEPTH, byte_out=False,
                        width=0):
        """Constant weights B^T int8 [N, Kp] (Kp a multiple of 8) as the engine's stationary
        operand, per command *group* of channels (:meth:`_lane_groups`; ``width``: narrow
        groups, :meth:`narrow_width`).

        A group streams the 8-byte K blocks (rows 8b..8b+7 of B) chosen by
        :meth:`_stream_choice` for commands of ``J`` rows: all Kp / 8 (dense), the shortest
        arithmetic progression ``b0, b0 + d, ..`` holding every block with a nonzero weight,
        or (``K_GATHER``) exactly those blocks; ``layer.sparse`` reports a layer that streams
        fewer blocks than dense. Returns ``(per-tile views of the packed bytes, gather
        tables or None, [(m0, nc, b0, d, L, byte offset, table)])``: group bytes
        channel-major, ``8·L`` bytes per channel; ``table`` indexes the gather tables."""
        from tessera.toolchain.kernels.engine import require_align
        N, Kp = bt.shape
        KB = Kp // 8
        nzb = (bt.reshape(N, KB, 8) != 0).any(axis=2)                  # [N, KB]
        chunks, groups, tables, off, stored, streamed = [], [], [], 0, 0, 0
        for m0, nc in self._lane_groups(N, byte_out, width):
            used = np.nonzero(nzb[m0:m0 + nc].any(axis=0))[0]
            stored += len(used)
            ch = self._stream_choice(used, KB, J, nc)
            w3 = bt[m0:m0 + nc].reshape(nc, KB, 8)
            table = None
            if ch[0] == "dense":
                b0, d, L = 0, 1, KB
                blk = w3
            elif ch[0] == "prog":
                b0, d, L = ch[1:]
                blk = w3[:, b0:b0 + (L - 1) * d + 1:d]
            else:
                b0, d, L = 0, 1, len(used)
                blk = w3[:, used]
                table = len(tables)
                tables.append(8 * used.astype(np.int64))
            streamed += L
            chunks.append(blk.reshape(-1))
            groups.append((m0, nc, b0, d, L, off, table))
            off += blk.size
        total = len(groups) * KB
        if streamed < total:
            layer.sparse = self._engine_sparse_record(stored, streamed, total, bool(tables))
        v = self.const(layer, what, np.concatenate(chunks), "int8", tensor)
        require_align(v[0])
        gt = self._gather_table(layer, tables) if tables else None
        return v, gt, groups

    def _engine_mm(self, layer, cset, i, a, wts, c, pv, rows, N, Kp, tag, out=None):
        """Engine commands on tile ``i`` for ``c[r, :] = rule(bias + a[r, :Kp] · B)``, ``rows``
        rows of ``Kp`` bytes at ``a``: per group of ≤ ACC_DEPTH rows and per weight group
        (:meth:`_engine_weights`) one command streaming the group's blocks (k1 over the
        progression, stride 8·d, or the gather table). ``out`` None: ``RAW`` int32, ``c``
        rows of ``4·N`` bytes; else ``(row stride in bytes, descriptor fields)`` of a byte
        output mode (``FLOAT32``)."""
        from tessera.spec.engine import ACC_DEPTH, Flag, Mode
        from tessera.toolchain.kernels.engine import Command, add_engine_vertex
        wv, gt, groups = wts
        cmds = []
        for r0 in range(0, rows, ACC_DEPTH):
            nr = min(ACC_DEPTH, rows - r0)
            for m0, nc, b0, d, L, woff, table in groups:
                if out is None:
                    o = dict(c_base=(c, 4 * (r0 * N + m0)), c_s0=4 * N, mode=Mode.RAW, flags=0)
                else:
                    rs, f = out
                    o = dict(f, c_base=(c, r0 * rs + m0), c_s0=rs)
                if table is not None:
                    o["flags"] |= int(Flag.K_GATHER)
                cmds.append(Command(
                    a_base=(a, r0 * Kp + 8 * b0), a_s0=Kp, a_s1=0,
                    ak_s1=(gt[0][i], gt[1][table]) if table is not None else 8 * d,
                    w_base=(wv[i], woff), w_sm=8 * L, c_s1=0, p_base=(pv[i], 16 * m0),
                    J0=nr, J1=1, K0=1, K1=L, C=nc, **o))
        dname = f"op{layer.index}.{tag}.desc{self.tiles[i]}"
        self._fit(lambda: add_engine_vertex(self.g, cset, self.tiles[i], cmds, dname),
                  f"engine descriptor table {dname!r} of node {layer.label!r}",
                  DESC_BYTES * len(cmds))

    def _mm_vertex(self, cset, i, a, w, c, init, rows, cols, Kp):
        kind, data = w
        if kind == "dense":
            self.vertex(cset, matmul_codelet(self.g, Kp), i, a=a, bt=data[i], c=c, init=init,
                        rows=rows, cols=cols)
        else:
            self.vertex(cset, bsmm_codelet(self.g, Kp, data["bs"]), i, a=a, blk=data["blk"][i],
                        rowoff=data["rowoff"][i], groups=data["groups"][i], c=c, init=init,
                        rows=rows, cols=cols, ngroups=data["ngroups"])

    # matmul
    def emit_matmul(self, op, layer):
        a = op.attrs
        idx = self.cur
        av, K, Kp, N, rows, L = self._mm_dims(op)
        x, y = op.inputs[0], op.output
        adt = a["a_dtype"]
        za = int(_zp8(a["a_zp"], adt))
        zb = _zp8(a["b_zp"], a["b_dtype"])
        bias = a["bias"] if a["bias"] is not None else np.zeros(N, np.int64)
        layer.macs = rows * N * K
        S = self.S
        tm = self.temps[idx]
        use_rs = "rs" in tm
        # A operand rows [S*rows, Kp]
        if "a" in tm:
            cp = self.cs(layer, "pack")
            for i in range(self.nt):
                self.vertex(cp, "tso_pack", i, src=self.view(i, x), dst=self.tview(idx, i, "a"),
                            nmat=1, ms=0, rows=S * rows, cols=K, rs=K, cs=1, Kp=Kp,
                            xorv=0x80 if adt == "uint8" else 0)
            aview = lambda i, off=0, nb=None: self.tview(idx, i, "a", off, nb)
        else:
            aview = lambda i, off=0, nb=None: self.view(i, x, off, nb)
        if use_rs:
            cr = self.cs(layer, "rowsum")
            for i in range(self.nt):
                self.vertex(cr, "tso_rowsum", i, p=aview(i), s=self.tview(idx, i, "rs"),
                            rows=S * rows, Kp=Kp)
        accv = (lambda i, off=0, nb=None: self.tview(idx, i, "acc", off, nb)) if "acc" in tm \
            else (lambda i, off=0, nb=None: self.view(i, y, off, nb))
        out = a["out"]
        f32 = idx in self.f32
        if a["b"] is not None:
            b8 = _as_int8(a["b"]).astype(np.int64)          # [K, N]
            bt = np.zeros((N, Kp), np.int8)
            bt[:, :K] = b8.T
            init = wrap32(bias - za * b8.sum(axis=0) + K * za * zb)
            eng = self.on_engine(op)
            if eng:
                wts = self._engine_weights(layer, "bt", bt, a.get("b_name"),
                                           J=min(S * rows, 256), byte_out=f32,
                                           width=self.narrow_width(idx))
                if f32:
                    mult, ofields = self._f32_fields(op)
                pv = self._engine_params(layer, "ep", init, mult if f32 else None)
            else:
                wts = self._matmul_weights(layer, "bt", bt, a.get("b_name"))
                iv = self.const(layer, "init", init, "int32")
            c2 = self.cs(layer, "mm")
            for i in range(self.nt):
                if eng and f32:
                    tv, tb, _, _, tps = self._out_target(idx, i, rows, 1, N)
                    self._engine_mm(layer, c2, i, aview(i), wts, tv[tb:], pv, S * rows, N, Kp,
                                    "mm", out=(tps, ofields))
                elif eng:
                    self._engine_mm(layer, c2, i, aview(i), wts, accv(i), pv, S * rows, N, Kp,
                                    "mm")
                else:
                    self._mm_vertex(c2, i, aview(i), wts, accv(i), iv[i], S * rows, N, Kp)
            if use_rs:
                zwv = self.const(layer, "zw", zb, "int32")
                cz = self.cs(layer, "zpfix")
                for i in range(self.nt):
                    self.vertex(cz, "tso_zpfix", i, acc=accv(i), rsum=self.tview(idx, i, "rs"),
                                csum=zwv[i], zw=zwv[i], rows=S * rows, cols=N, use_r=1,
                                use_c=0, za=0)
        else:
            bname = op.inputs[1]
            bdt = a["b_dtype"]
            mr = rows // L
            cpb = self.cs(layer, "packb")
            for i in range(self.nt):
                self.vertex(cpb, "tso_pack", i, src=self.view(i, bname),
                            dst=self.tview(idx, i, "bt"), nmat=S * L, ms=K * N, rows=N, cols=K,
                            rs=1, cs=N, Kp=Kp, xorv=0x80 if bdt == "uint8" else 0)
            use_cs = "cs" in tm
            if use_cs:
                ccs = self.cs(layer, "colsum")
                for i in range(self.nt):
                    self.vertex(ccs, "tso_rowsum", i, p=self.tview(idx, i, "bt"),
                                s=self.tview(idx, i, "cs"), rows=S * L * N, Kp=Kp)
            init = wrap32(bias + K * za * zb)
            iv = self.const(layer, "init", init, "int32")
            zwv = self.const(layer, "zw", zb, "int32")
            c2 = self.cs(layer, "mm")
            cd = matmul_codelet(self.g, Kp)
            for i in range(self.nt):
                for j in range(S * L):
                    self.vertex(c2, cd, i, a=aview(i, j * mr * Kp, mr * Kp),
                                bt=self.tview(idx, i, "bt", j * N * Kp, N * Kp),
                                c=accv(i, 4 * j * mr * N, 4 * mr * N), init=iv[i], rows=mr, cols=N)
            if use_rs or use_cs:
                cz = self.cs(layer, "zpfix")
                for i in range(self.nt):
                    for j in range(S * L):
                        self.vertex(cz, "tso_zpfix", i, acc=accv(i, 4 * j * mr * N, 4 * mr * N),
                                    rsum=self.tview(idx, i, "rs", 4 * j * mr, 4 * mr) if use_rs
                                    else zwv[i],
                                    csum=self.tview(idx, i, "cs", 4 * j * N, 4 * N) if use_cs
                                    else zwv[i],
                                    zw=zwv[i], rows=mr, cols=N, use_r=int(use_rs),
                                    use_c=int(use_cs), za=za)
        if f32:
            if self.f32_target(idx) == "temp":
                self._copy_out(layer, idx, S * rows, 1, 1, 1, N)
        elif out[0] == "rq":
            pv = self.const(layer, "rq", rqf_params(out[1]), "int32")
            c3 = self.cs(layer, "requant")
            for i in range(self.nt):
                self._rq_vertices(layer, c3, i, accv(i), self.view(i, y), out, rows, N,
                                  rows * N, N, 1, pv[i], nrows=S * rows)

    # gap
    def emit_gap(self, op, layer):
        a = op.attrs
        idx = self.cur
        x, y = op.inputs[0], op.output
        xv = self.values[x]
        planes, hw = a["planes"], a["hw"]
        c1 = self.cs(layer, "sum")
        for i in range(self.nt):
            self.vertex(c1, "tso_planesum", i, x=self.view(i, x), s=self.tview(idx, i, "sum"),
                        planes=self.S * planes, hw=hw, is_signed=int(xv.dtype == "int8"),
                        bias=a["bias"])
        pv = self.const(layer, "rq", rqf_params(a["out"][1]), "int32")
        c2 = self.cs(layer, "requant")
        for i in range(self.nt):
            self._rq_vertices(layer, c2, i, self.tview(idx, i, "sum"), self.view(i, y),
                              a["out"], planes, 1, planes, 1, 1, pv[i], nrows=self.S * planes)

    # pooling / element-wise / copies
    def emit_maxpool(self, op, layer):
        if self.cur in self.pooled_by:
            return                       # done on the accumulators by the convolution
        gm = op.attrs["geom"]
        x, y = op.inputs[0], op.output
        xv, yv = self.values[x], self.values[y]
        dt = xv.dtype
        kind = {"int8": 0, "uint8": 1, "float32": 2}[dt]
        lowest = {0: -128, 1: 0, 2: int(np.uint32(0xFF800000).view(np.int32)) ^ 0x7FFFFFFF}[kind]
        C = gm["planes"] // xv.shape[0]
        nimg = xv.shape[0]
        (xc, xh, xw), xs = self._layout_strides(self.root(x), (nimg, C, gm["H"], gm["W"]))
        (yc, yh, yw), ys = self._layout_strides(self.root(y), (nimg, C, gm["OH"], gm["OW"]))
        if y in self.pad_into:
            # straight into the padded input of the convolution that reads the result
            xpad, xg = self._xpad(self.pad_into[y])
            yview = lambda i: xpad[i][xg["base"]:]
            (yc, yh, yw), ys = (1, xg["row"], xg["px"]), xg["img"]
        else:
            yview = lambda i: self.view(i, y)
        cset = self.cs(layer, "maxpool")
        for i in range(self.nt):
            self.vertex(cset, "tso_maxpool", i, x=self.view(i, x), y=yview(i),
                        S=self.S * nimg, C=C, H=gm["H"], W=gm["W"], OH=gm["OH"], OW=gm["OW"],
                        kh=gm["kh"], kw=gm["kw"], sh=gm["sh"], sw=gm["sw"], dh=gm["dh"],
                        dw=gm["dw"], pt=gm["pt"], pl=gm["pl"], xs=xs, xc=xc, xh=xh, xw=xw,
                        ys=ys, yc=yc, yh=yh, yw=yw, kind=kind, lowest=lowest)

    def emit_clamp(self, op, layer):
        x, y = op.inputs[0], op.output
        v = self.values[x]
        kind = {"int8": 0, "uint8": 1, "float32": 2}[v.dtype]
        cset = self.cs(layer, "clamp")
        for i in range(self.nt):
            self.vertex(cset, "tso_clamp", i, x=self.view(i, x), y=self.view(i, y),
                        n=self.S * v.size, kind=kind, lo=op.attrs["lo"], hi=op.attrs["hi"])

    def emit_binop(self, op, layer):
        v = self.values[op.inputs[0]]
        a = op.attrs
        if a["b"] is not None:
            b = a["b"]
            bv = self.const(layer, "b", b.view(np.int32) if a["op"] >= 2 else b,
                            "int32" if a["op"] >= 2 else "uint8")
            bn = v.size
        else:
            bn = self.S * v.size if a["bn"] == v.size else a["bn"]
        cset = self.cs(layer, "binop")
        for i in range(self.nt):
            b = bv[i] if a["b"] is not None else self.view(i, op.inputs[1])
            self.vertex(cset, "tso_binop", i, a=self.view(i, op.inputs[0]), b=b,
                        y=self.view(i, op.output), n=self.S * v.size, bn=bn, op=a["op"])

    def emit_qlbin(self, op, layer):
        """com.microsoft QLinearAdd / QLinearMul (``tso_qlbin``)."""
        a = op.attrs
        yv = self.values[op.output]
        n = self.S * yv.size
        tab = a["tab"] if a["tab"] is not None else np.zeros(1, np.int32)
        tv = self.const(layer, "tab", tab, "int32")
        fx = a.get("fx")
        fv = self.const(layer, "fx", fx if fx is not None else np.zeros(4, np.int32), "int32")
        opnds = []
        for key in ("x", "u"):
            o = a[key]
            if o[0] == "const":
                cv = self.const(layer, key, o[1], "uint8")
                opnds.append((lambda i, cv=cv: cv[i], 1, yv.size))
            else:
                _, name, rep, per = o
                size = self.values[name].size
                opnds.append((lambda i, name=name: self.view(i, name), rep,
                              per if per is not None else self.S * size))
        cset = self.cs(layer, "qlinear_add" if a["op"] == 0 else "qlinear_mul")
        (xv, xrep, xper), (uv, urep, uper) = opnds
        for i in range(self.nt):
            self.vertex(cset, "tso_qlbin", i, x=xv(i), u=uv(i), y=self.view(i, op.output),
                        tab=tv[i], fx=fv[i], fast=int(fx is not None), n=n, xrep=xrep,
                        xper=xper, urep=urep, uper=uper,
                        op=a["op"], is_signed=a["is_signed"], r=a["r"], zc=a["zc"], zx=a["zx"],
                        zu=a["zu"], lo=a["lo"], hi=a["hi"], xorv=a["xorv"])

    def emit_qlsoftmax(self, op, layer):
        """com.microsoft QLinearSoftmax (``tso_qlsoftmax``)."""
        a = op.attrs
        tv = self.const(layer, "tab", a["tab"], "int32")
        cset = self.cs(layer, "softmax")
        for i in range(self.nt):
            self.vertex(cset, "tso_qlsoftmax", i, x=self.view(i, op.inputs[0]),
                        y=self.view(i, op.output), tab=tv[i], rows=self.S * a["rows"], D=a["D"],
                        inner=a["inner"], is_signed=a["is_signed"], ysc=a["ysc"], yz=a["yz"],
                        hi=a["hi"])

    def emit_qlavgpool(self, op, layer):
        """com.microsoft QLinearAveragePool (``tso_qlavgpool``), NCHW."""
        a = op.attrs
        gm = a["geom"]
        tv = self.const(layer, "dtab", a["dtab"], "int32")
        cset = self.cs(layer, "avgpool")
        hw, ohw = gm["H"] * gm["W"], gm["OH"] * gm["OW"]
        for i in range(self.nt):
            self.vertex(cset, "tso_qlavgpool", i, x=self.view(i, op.inputs[0]),
                        y=self.view(i, op.output), dtab=tv[i], S=self.S * gm["planes"],
                        H=gm["H"], W=gm["W"], OH=gm["OH"], OW=gm["OW"], kh=gm["kh"],
                        kw=gm["kw"], sh=gm["sh"], sw=gm["sw"], pt=gm["pt"], pl=gm["pl"],
                        xs=hw, xh=gm["W"], xw=1, ys_=ohw, yh=gm["OW"], yw=1, cip=a["cip"],
                        ysc=a["ysc"], yz=a["yz"], lo=a["lo"], hi=a["hi"], xorv=a["xorv"])

    def _copy(self, cset, i, src, dst, esz, dims, sstr, dstr):
        dims, sstr, dstr = list(dims), list(sstr), list(dstr)
        while len(dims) < 4:
            dims.insert(0, 1)
            sstr.insert(0, 0)
            dstr.insert(0, 0)
        self.vertex(cset, "tso_copy", i, src=src, dst=dst, esz=esz,
                    n0=dims[0], n1=dims[1], n2=dims[2], n3=dims[3], s0=sstr[0], s1=sstr[1],
                    s2=sstr[2], s3=sstr[3], d0=dstr[0], d1=dstr[1], d2=dstr[2], d3=dstr[3])

    @staticmethod
    def _strides(shape):
        st, acc = [], 1
        for d in reversed(shape):
            st.insert(0, acc)
            acc *= d
        return st

    def emit_copy(self, op, layer):
        a = op.attrs
        y = op.output
        yv = self.values[y]
        esz = ELEM_BYTES[yv.dtype]
        S = self.S
        cset = self.cs(layer, a["mode"])
        if a["mode"] == "flat":
            for i in range(self.nt):
                self._copy(cset, i, self.view(i, op.inputs[0]), self.view(i, y), esz,
                           [S * yv.size], [1], [1])
            return
        if a["mode"] == "transpose":
            ins = list(a["in_shape"])
            perm = a["perm"]
            ist = self._strides(ins)
            dims = [yv.shape[j] for j in range(len(perm))]
            sstr = [ist[p] for p in perm]
            dstr = self._strides(dims)
            per_in, per_out = int(np.prod(ins)), yv.size
            # fold the S samples into axis 0 (its size is 1 per sample in batched mode)
            if S > 1:
                dims = [S] + dims[1:] if dims[0] == 1 else dims
                sstr = [per_in] + sstr[1:]
                dstr = [per_out] + dstr[1:]
            for i in range(self.nt):
                self._copy(cset, i, self.view(i, op.inputs[0]), self.view(i, y), esz, dims,
                           sstr, dstr)
            return
        # concat
        axis = a["axis"]
        ost = self._strides(yv.shape)
        off = 0
        for name, shp in zip(op.inputs, a["in_shapes"]):
            shp = list(shp)
            ist = self._strides(shp)
            dims, sstr, dstr = list(shp), list(ist), list(ost)
            if S > 1:
                dims[0] = S
                sstr[0] = int(np.prod(shp))
                dstr[0] = yv.size
            for i in range(self.nt):
                self._copy(cset, i, self.view(i, name), self.view(i, y, esz * off * ost[axis]),
                           esz, dims, sstr, dstr)
            off += shp[axis]

    def emit_alias(self, op, layer):
        pass


def _has_empty_window(gm) -> bool:
    """Does some pooling window of ``gm`` lie entirely in the padding?"""
    for n, k, st, d, p0, o in ((gm["H"], gm["kh"], gm["sh"], gm["dh"], gm["pt"], gm["OH"]),
                               (gm["W"], gm["kw"], gm["sw"], gm["dw"], gm["pl"], gm["OW"])):
        for i in range(o):
            if not any(0 <= i * st - p0 + j * d < n for j in range(k)):
                return True
    return False


#: Use the block-sparse kernel when at most this fraction of the weight area is stored.
SPARSE_MAX_DENSITY = 0.75


def choose_blocks(w, block_size=None):
    """Block structure of constant weights ``w`` (int8 [K, N], K padded to a multiple of 4).

    Tries block sizes 16, 8, 4 (or only ``block_size``) that divide K and N (K ≤ the
    kernel's 668), keeps the blocks with a nonzero element (lossless) and picks the size that
    stores the fewest weights (ties: the larger block). Returns ``(bs, BlockSparseMatrix)``
    when the stored fraction is at most :data:`SPARSE_MAX_DENSITY`, else None (dense)."""
    from tessera.golden_model.kernels import BlockSparseMatrix
    from tessera.toolchain.kernels.block_sparse import MAX_K
    w = np.ascontiguousarray(w, dtype=np.int8)
    k, n = w.shape
    best = None
    for bs in ((block_size,) if block_size else (16, 8, 4)):
        if k % bs or n % bs or k > MAX_K:
            continue
        m = BlockSparseMatrix.from_dense(w, bs)
        stored = m.nnzb * bs * bs
        if best is None or stored < best[0]:
            best = (stored, bs, m)
    if best is None or best[0] > SPARSE_MAX_DENSITY * k * n:
        return None
    return best[1], best[2]


def wrap32(x) -> np.ndarray:
    return wrap_int32(np.asarray(x, dtype=np.int64)).astype(np.int64)


def lower(ir: IRGraph, config, samples: int, *, sparse_mode="auto", block_size=None,
          engine="auto") -> Lowered:
    """Build the graph for ``samples`` samples per tile (see the module docstring).

    Parameters
    ----------
    ir : IRGraph
    config : tessera.spec.config.ArrayConfig
    samples : int
        Samples per tile per run (1 in single-sample mode).
    sparse_mode : {"auto", "dense"}
        ``auto`` uses the block-sparse kernels for constant weights with zero blocks.
    block_size : int or None
        Force a block size for the detection (4, 8 or 16; the ``dot4`` kernels only).
    engine : {"auto", "dot4"}
        ``auto``: the matmuls of convolutions and constant-weight matmuls run on the matrix
        engine when ``config.engine_macs > 0`` (``FLOAT32`` output stage for 8-bit outputs
        without weight zero points, else ``RAW`` int32 + ``tso_rqf``); ``dot4`` forces the
        ``dot4`` kernels (for comparison).

    Returns
    -------
    Lowered
    """
    tiles = list(range(config.tiles)) if ir.batched else [0]
    return _Lowerer(ir, config, samples, tiles, sparse_mode, block_size, engine).run()
