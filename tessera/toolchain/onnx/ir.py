"""The importer's intermediate form: the integer operations Tessera runs (docs/compiler.md,
"ONNX importer").

After :mod:`tessera.toolchain.onnx.convert` every ONNX node (or fused DequantizeLinear → op →
QuantizeLinear group) is one :class:`Op` on :class:`Value` tensors. Shapes are per-sample
shapes: in batched mode axis 0 (the batch) is 1 and the samples of a run are spread over the
tiles; in single-sample mode the shapes are the model's own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["Value", "Op", "IRGraph", "ELEM_BYTES"]

#: Bytes per element on the tiles (float32 is carried as its bit pattern).
ELEM_BYTES = {"int8": 1, "uint8": 1, "int32": 4, "float32": 4}


@dataclass
class Value:
    """A tensor: ``shape`` (per sample), ``dtype`` name, and ``const`` for constants."""
    name: str
    shape: tuple
    dtype: str
    const: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * ELEM_BYTES[self.dtype]


@dataclass
class Op:
    """One operation of the imported model.

    Attributes
    ----------
    kind : str
        ``quant``, ``dequant``, ``conv``, ``matmul``, ``maxpool``, ``clamp``, ``binop``,
        ``copy``, ``alias``, ``gap``.
    label : str
        The ONNX node name(s) it comes from (for reports and errors).
    onnx_ops : tuple of str
        The ONNX op types it replaces (e.g. ``("DequantizeLinear", "Conv", "QuantizeLinear")``).
    inputs : list of str
        Activation inputs (value names); constants live in ``attrs``.
    output : str
    attrs : dict
        Kind-specific parameters (see :mod:`tessera.toolchain.onnx.lower`).
    """
    kind: str
    label: str
    onnx_ops: tuple
    inputs: list
    output: str
    attrs: dict = field(default_factory=dict)


@dataclass
class IRGraph:
    """Values, ops in execution order, graph inputs/outputs and the batching mode."""
    values: dict
    ops: list
    inputs: list
    outputs: list
    batched: bool
    #: model input name -> declared shape (None for symbolic dims), for input checks
    declared: dict = field(default_factory=dict)
