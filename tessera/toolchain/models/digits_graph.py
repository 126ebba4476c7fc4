"""The int8 digits MLP (:mod:`tessera.toolchain.models.digits`) mapped onto the tiles of an array.

Mapping (data parallel, weights sharded and all-gathered):

- **images**: the batch ``x`` int8 ``[B, 64]`` is split by whole images over the tiles
  (``map_linearly(grain=64)``: ``ceil``/``floor`` of ``B / N`` images per tile). Each tile
  computes the two layers for its own images; the hidden activations and the logits stay on
  the tile of their image (no activation traffic).
- **weights**: each layer's weight matrix lives once in the array, stored output-major
  (``QuantizedLayer.packed_weight()``, ``[N_out, K]``, the layout ``dot4`` wants) and sharded
  by whole output rows over the tiles (``map_linearly``). At the start of every run one
  exchange phase per layer all-gathers it into a replica on every computing tile
  (:func:`tessera.toolchain.kernels.matmul` with ``b_layout="nk"``: each word multicast once).
  This trades exchange cycles for SRAM (a tile holds a 1/N shard at rest) and is what makes
  the exchange share of the demo non-zero.
- **layers**: :func:`tessera.toolchain.kernels.matmul_requantize`. With a matrix engine
  (``config.engine_macs > 0``, docs/architecture.md §12): one engine pass per layer, the
  weights stationary in the lanes, the images streamed, the folded bias
  (``QuantizedLayer.bias_folded``) as the accumulators' start and the per-channel
  requantization + ReLU in the engine's output stage (int8 → int8, the logits padded to 16
  bytes per image). Without one: register-blocked ``dot4`` matmul, then the ``tsr_requant``
  codelet (per-channel multiplier/shift, fused ReLU on layer 1). Bit-exact with
  ``QuantizedMLP.forward_int8`` (which uses only ``tessera.golden_model.kernels``).
- **profile**: an int32 buffer ``digits.profile`` ``[N, 1 + 2·R]`` (row t on tile t) given to
  ``compile_graph(profile=...)``; the runtime records the cycle CSR at every superstep
  boundary (decoded by :mod:`tessera.toolchain.profile`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tessera.spec.config import ArrayConfig

__all__ = ["DigitsGraph", "build_digits_graph", "max_batch", "fit_batch", "PROFILE_RECORDS"]

#: Records per tile in the profile buffer (a run of the digits program writes about 12).
PROFILE_RECORDS = 32


@dataclass
class DigitsGraph:
    """A compiled digits network for a fixed batch size.

    Members
    -------
    compiled : tessera.toolchain.graph.CompiledGraph
    batch : int
        Images per run (``x`` is int8 ``[batch, 64]``).
    input_name, logits_name, profile_name : str
        Variable names for ``Engine.write_tensor`` / ``read_tensor``.
    macs_per_image : int
        Useful multiply-accumulates per image (``64·hidden + hidden·10``).
    n_out : int
        Logits per image (the logits variable may be wider: engine rows are padded to 8 bytes).
    uses_engine : bool
        Whether the layers run on the matrix engine.
    """

    compiled: object
    batch: int
    input_name: str
    logits_name: str
    profile_name: str
    macs_per_image: int
    n_out: int = 10
    uses_engine: bool = False

    def engine(self, backend: str = "model"):
        """A new :class:`tessera.toolchain.graph.Engine` on ``backend`` for this program."""
        from tessera.toolchain.graph import Engine
        return Engine(self.compiled, backend=backend)

    def run_batch(self, engine, images: np.ndarray, max_cycles: int = 50_000_000):
        """Write ``images`` (int8 ``[batch, 64]``), run once, return ``(logits, RunResult)``.

        Parameters
        ----------
        engine : tessera.toolchain.graph.Engine
            From :meth:`engine`.
        images : ndarray of int8, shape [batch, 64]
            Quantized inputs (the digits codes equal the pixels 0..16).
        max_cycles : int

        Returns
        -------
        logits : ndarray of int8, shape [batch, 10]
        result : tessera.spec.result.RunResult

        Raises
        ------
        ValueError
            Wrong shape or dtype.
        tessera.toolchain.graph.EngineError
            The run faulted, timed out or exited non-zero.
        """
        images = np.asarray(images)
        if images.dtype != np.int8 or images.shape != (self.batch, 64):
            raise ValueError(f"DigitsGraph.run_batch: images must be int8 [{self.batch}, 64], "
                             f"got {images.dtype.name} {images.shape}")
        engine.write_tensor(self.input_name, images)
        result = engine.run(max_cycles)
        return engine.read_tensor(self.logits_name)[:, :self.n_out], result


def _check_config(config) -> ArrayConfig:
    if not isinstance(config, ArrayConfig):
        raise TypeError(f"build_digits_graph: config must be a tessera.spec.config.ArrayConfig, "
                        f"not {config!r}")
    return config


def max_batch(config: ArrayConfig, hidden: int = 32) -> int:
    """A batch size that fits every tile's SRAM with room to spare (estimate).

    Per image a tile stores the input (64 B), the layer-1 accumulators and output
    (5·hidden B) and the layer-2 ones (50 B); the fixed part (code, weight replicas,
    stacks, control) is budgeted at 20 KiB + ``contexts`` KiB. The result is capped at 64
    images per tile (longer runs only make the RTL progress bar coarser).

    Returns
    -------
    int
        Images per run, a multiple of ``config.tiles``, at least ``config.tiles``.
    """
    config = _check_config(config)
    per_image = 64 + 5 * hidden + 50 + 8
    fixed = 20 * 1024 + config.contexts * 1024
    per_tile = max(1, min(64, (config.sram_bytes - fixed) // per_image))
    return per_tile * config.tiles


def fit_batch(qmodel, config: ArrayConfig, cap_per_tile: int | None = None) -> int:
    """The largest batch (a multiple of the tile count, ≤ ``cap_per_tile`` per tile) that fits.

    ``cap_per_tile`` defaults to 64 for the dot4 layers and to the engine's accumulator depth
    (256: one command streams all of a tile's images) with a matrix engine.

    Compiles the network once with one image per tile, then adds images while the per-image
    bytes (input, int32 accumulators and int8 outputs of both layers, 4-byte aligned) fit the
    fullest tile's free SRAM.

    Returns
    -------
    int

    Raises
    ------
    tessera.toolchain.graph.GraphMemoryError
        Not even one image per tile fits.
    """
    config = _check_config(config)
    l1, l2 = qmodel.layers
    k1, h = l1.weight.shape
    if cap_per_tile is None:
        from tessera.spec.engine import ACC_DEPTH
        cap_per_tile = ACC_DEPTH if config.engine_macs > 0 and k1 % 8 == 0 else 64
    n = l2.weight.shape[1]
    r4 = lambda x: -(-x // 4) * 4
    r8 = lambda x: -(-x // 8) * 8
    if config.engine_macs > 0 and k1 % 8 == 0 and h % 8 == 0:
        per_image = r8(k1) + r8(h) + r8(n)          # engine: int8 in, int8 out, no int32
    else:
        per_image = r4(k1) + 4 * h + r4(h) + 4 * n + r4(n)
    one = build_digits_graph(qmodel, config, config.tiles)
    free = min(m["free"] for m in one.compiled.memory)
    per_tile = 1 + max(0, free - 64) // per_image      # 64 B slack for alignment
    return min(per_tile, cap_per_tile) * config.tiles


def build_digits_graph(qmodel, config: ArrayConfig, batch: int, *,
                       profile_records: int = PROFILE_RECORDS) -> DigitsGraph:
    """Map the quantized digits MLP onto ``config`` for batches of ``batch`` images and compile.

    Parameters
    ----------
    qmodel : tessera.toolchain.models.digits.QuantizedMLP
        Two layers, ``64 → hidden`` (ReLU) and ``hidden → 10``.
    config : ArrayConfig
    batch : int
        Images per run, ≥ 1.
    profile_records : int
        Capacity of the per-tile superstep profile buffer (records).

    Returns
    -------
    DigitsGraph

    Raises
    ------
    TypeError, ValueError
        Bad argument types or values (named in the message).
    tessera.toolchain.graph.GraphMemoryError
        The batch does not fit a tile's SRAM (the message names the tile and the largest items).
    """
    from tessera.toolchain.graph import Graph, Sequence, compile_graph, map_linearly
    from tessera.toolchain.kernels.matmul import matmul_requantize

    config = _check_config(config)
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ValueError(f"build_digits_graph: batch must be a positive int, not {batch!r}")
    if not isinstance(profile_records, int) or profile_records < 1:
        raise ValueError(f"build_digits_graph: profile_records must be a positive int, "
                         f"not {profile_records!r}")
    layers = getattr(qmodel, "layers", None)
    if layers is None or len(layers) != 2:
        raise TypeError(f"build_digits_graph: qmodel must be a two-layer QuantizedMLP, "
                        f"not {qmodel!r}")
    l1, l2 = layers
    k1, hidden = l1.weight.shape
    k2, n_out = l2.weight.shape
    if k1 % 4 or k2 % 4 or k2 != hidden:
        raise ValueError(f"build_digits_graph: layer sizes {k1}->{hidden}->{n_out} must chain "
                         f"and have inputs that are multiples of 4")
    N = config.tiles
    g = Graph(config)
    x = g.add_variable("digits.x", (batch, k1), "int8", map_linearly(grain=k1))
    w1 = g.add_constant("digits.w1", l1.packed_weight(), map_linearly(grain=k1))
    w2 = g.add_constant("digits.w2", l2.packed_weight(), map_linearly(grain=k2))
    h, p1 = matmul_requantize(g, x, w1, l1.multiplier, l1.shift, l1.output_zero_point,
                              relu=l1.relu, bias=l1.bias_folded, b_layout="nk", name="fc1")
    y, p2 = matmul_requantize(g, h, w2, l2.multiplier, l2.shift, l2.output_zero_point,
                              relu=l2.relu, bias=l2.bias_folded, b_layout="nk", name="fc2")
    width = 1 + 2 * profile_records
    prof = g.add_variable("digits.profile", (N, width), "int32",
                          [(t, t * width, (t + 1) * width) for t in range(N)])
    compiled = compile_graph(g, Sequence(p1, p2), profile=prof)
    return DigitsGraph(compiled, batch, x.name, y.name, prof.name,
                       macs_per_image=k1 * hidden + k2 * n_out, n_out=n_out,
                       uses_engine=any(getattr(v, "engine_commands", None) is not None
                                  for v in g.variables.values()))
