"""Elementwise requantize (+ bias, + ReLU) on tiles: int32 accumulators -> int8.

Bit-exact with :func:`tessera.golden_model.kernels.requantize` (TFLite ``MultiplyByQuantizedMultiplier``,
double rounding: SRDHM rounds half toward +inf, RDBPOT half away from zero). The codelet is
``tessera/toolchain/codelets/requantize.c`` (``tsr_requant``).
"""

from __future__ import annotations

import numpy as np

from tessera.golden_model.kernels.requantize import MAX_SHIFT, MIN_SHIFT
from tessera.toolchain.graph.graph import Graph
from tessera.toolchain.graph.program import Execute, Program

from ._common import KernelError, check_var, codelet, tile_pieces, unique_name

__all__ = ["requantize", "requant_params"]

_FIELDS = (("acc", "in", "int32"), ("out", "out", "int8"), ("params", "in", "int32"),
           ("channels", "scalar"), ("c0", "scalar"), ("zp", "scalar"), ("relu", "scalar"))


def _int_param(where, name, value, channels, lo, hi):
    arr = np.asarray(value)
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise KernelError(f"{where}: {name} must be integer-valued, got {arr.dtype.name}")
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != channels):
        raise KernelError(f"{where}: {name} must be a scalar or have shape [C] = [{channels}] "
                          f"(the last axis of acc), got shape {arr.shape}")
    arr = arr.astype(np.int64)
    if arr.size and (arr.min() < lo or arr.max() > hi):
        raise KernelError(f"{where}: {name} must be in {lo}..{hi}, got [{arr.min()}, {arr.max()}]")
    return arr


def requant_params(multiplier, shift, bias, channels: int, where: str = "requantize") -> np.ndarray:
    """Per-channel parameter table int32 [P, 3] = (bias, multiplier, shift), P = 1 (all
    scalars) or ``channels``. Raises KernelError on a bad value or length."""
    m = _int_param(where, "multiplier", multiplier, channels, -2**31, 2**31 - 1)
    s = _int_param(where, "shift", shift, channels, MIN_SHIFT, MAX_SHIFT)
    b = _int_param(where, "bias", 0 if bias is None else bias, channels, -2**31, 2**31 - 1)
    per_channel = any(x.ndim == 1 for x in (m, s, b))
    p = channels if per_channel else 1
    table = np.stack([np.broadcast_to(b, (p,)), np.broadcast_to(m, (p,)),
                      np.broadcast_to(s, (p,))], axis=1)
    return table.astype(np.int32)


def requantize(graph: Graph, acc, out, multiplier, shift, out_zero_point: int,
               relu: bool = False, bias=None, name: str = "requant") -> Program:
    """Build ``out = requantize(acc, multiplier, shift, out_zero_point, relu=relu, bias=bias)``.

    Per element, with ``c`` the index along the last axis (per-channel) or a scalar::

        x = wrap32(acc + bias[c]); y = MultiplyByQuantizedMultiplier(x, multiplier[c], shift[c])
        out = clamp(y + out_zero_point, out_zero_point if relu else -128, 127)

    Parameters
    ----------
    graph : Graph
    acc : Variable, int32, any shape [..., C]
        Accumulators (e.g. the output of :func:`tessera.toolchain.kernels.matmul`).
    out : Variable, int8, same shape as ``acc`` and mapped alike (each element on the tile of
        the matching ``acc`` element).
    multiplier : int or array_like [C] of int32
        Quantized multipliers (``tessera.golden_model.kernels.quantize_multiplier``).
    shift : int or array_like [C], values in -31..30
    out_zero_point : int in -128..127
    relu : bool
        Fused ReLU (clamp below at the zero point).
    bias : None, int or array_like [C] of int32
        Added (wrapping) before scaling.
    name : str
        Prefix of the compute set and the constant parameter table (``<name>.params``, int32
        [tiles, P, 3], replicated on each tile holding ``acc``).

    Returns
    -------
    Program
        ``Execute`` of the compute set ``<name>`` (one ``tsr_requant`` vertex per tile piece,
        split over all contexts).

    Raises
    ------
    KernelError (a GraphError / ValueError)
        Wrong dtypes or shapes, ``out`` mapped differently from ``acc``, parameters out of
        range or of the wrong length.
    """
    where = f"requantize({name!r})"
    acc = check_var(where, "acc", acc, "int32")
    out = check_var(where, "out", out, "int8")
    if acc.shape != out.shape:
        raise KernelError(f"{where}: acc has shape {acc.shape} but out has shape {out.shape}")
    if isinstance(out_zero_point, bool) or not isinstance(out_zero_point, (int, np.integer)) \
            or not -128 <= out_zero_point <= 127:
        raise KernelError(f"{where}: out_zero_point must be an int in -128..127, "
                          f"not {out_zero_point!r}")
    if not isinstance(relu, (bool, np.bool_)):
        raise KernelError(f"{where}: relu must be a bool, not {relu!r}")
    channels = acc.shape[-1]
    table = requant_params(multiplier, shift, bias, channels, where)
    name = unique_name(graph, name)
    cd = codelet(graph, "tsr_requant", "requantize.c", _FIELDS)
    pieces = tile_pieces(where, acc, out)
    tiles = sorted({t for t, _, _ in pieces})
    p = table.shape[0]
    params = graph.add_constant(f"{name}.params", np.broadcast_to(table, (len(tiles), p, 3)),
                                [(t, i * p * 3, (i + 1) * p * 3) for i, t in enumerate(tiles)],
                                dtype="int32")
    cs = graph.add_compute_set(name)
    af, of = acc.tensor().flatten(), out.tensor().flatten()
    for t, a, b in pieces:
        graph.add_vertex(cs, cd, acc=af[a:b], out=of[a:b], params=params[tiles.index(t)],
                         channels=p, c0=a % p, zp=int(out_zero_point), relu=int(bool(relu)))
    return Execute(cs)
