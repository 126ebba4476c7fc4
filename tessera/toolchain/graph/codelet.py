"""Codelets: C functions run by vertices (docs/compiler.md, "Codelets and vertices").

A codelet is a C function ``void name(const fields_t *f, uint32_t part, uint32_t nparts)``
compiled into the graph's SPMD binary. Its fields are declared here, in the same order as
the C struct: a tensor field occupies two words (element pointer, element count; the C
side uses ``TSR_FIELD(type, name)`` from ``tsr_graph.h``), a scalar field one word.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import GraphError

__all__ = ["Field", "Codelet", "CODELET_DIR", "BUILTIN"]

#: Directory of the C runtime and built-in codelets (``tessera/toolchain/codelets``).
CODELET_DIR = Path(__file__).resolve().parent.parent / "codelets"

_KINDS = ("in", "out", "inout", "scalar")


@dataclass(frozen=True)
class Field:
    """One vertex field.

    Parameters
    ----------
    name : str
    kind : str
        ``"in"``, ``"out"``, ``"inout"`` (tensor: pointer + count words) or ``"scalar"``
        (one 32-bit word).
    dtype : str or None
        Required element type of a tensor field (``"int8"``, ``"uint8"``, ``"int32"``), or
        None for any.
    """
    name: str
    kind: str
    dtype: str | None = None

    def __post_init__(self):
        if self.kind not in _KINDS:
            raise GraphError(f"Field {self.name!r}: kind must be one of {_KINDS}, not {self.kind!r}")

    @property
    def words(self) -> int:
        return 1 if self.kind == "scalar" else 2


@dataclass(frozen=True)
class Codelet:
    """A C codelet: its function name, source file and fields.

    Parameters
    ----------
    name : str
        The C function's symbol.
    source : str or Path
        The C file defining it (compiled with ``tessera.h`` and ``tsr_graph.h`` on the path).
    fields : tuple of Field
        In the order of the C struct.
    single : bool
        The codelet does all its work as part 0 of 1: a vertex of it is never split over
        contexts (docs/compiler.md, "Execution model"; the matrix-engine codelet, whose
        other parts would have nothing to do but loads and stores that take engine cycles).
    """
    name: str
    source: Path
    fields: tuple
    single: bool = False

    def bind(self, values: dict, where: str) -> dict:
        """Check ``values`` (field name -> Tensor or int) against the declaration.

        Returns the values in field order. Raises GraphError for a missing, unknown or
        wrongly typed field.
        """
        from .tensor import Tensor, Variable
        names = [f.name for f in self.fields]
        unknown = set(values) - set(names)
        if unknown:
            raise GraphError(f"{where}: codelet {self.name!r} has no field(s) {sorted(unknown)}; "
                             f"its fields are {names}")
        out = {}
        for f in self.fields:
            if f.name not in values:
                raise GraphError(f"{where}: field {f.name!r} of codelet {self.name!r} not bound")
            v = values[f.name]
            if f.kind == "scalar":
                if not isinstance(v, (int, np.integer)) or isinstance(v, bool) \
                        or not -2**31 <= int(v) < 2**32:
                    raise GraphError(f"{where}: scalar field {f.name!r} needs a 32-bit int, "
                                     f"not {v!r}")
                out[f.name] = int(v) & 0xFFFFFFFF
            else:
                if isinstance(v, Variable):
                    v = v.tensor()
                if not isinstance(v, Tensor):
                    raise GraphError(f"{where}: tensor field {f.name!r} needs a Tensor, not {v!r}")
                if f.dtype is not None and v.dtype.name != f.dtype:
                    raise GraphError(f"{where}: field {f.name!r} needs {f.dtype} data, but "
                                     f"{v.variable.name!r} is {v.dtype.name}")
                out[f.name] = v
        return out


def _builtin(name, source, *fields):
    return Codelet(name, CODELET_DIR / source, tuple(Field(*f) for f in fields))


#: Codelets shipped with the compiler, by function name.
BUILTIN = {c.name: c for c in (
    _builtin("tsr_copy", "memcpy.c", ("dst", "out"), ("src", "in"), ("nbytes", "scalar")),
    _builtin("tsr_transpose8", "transpose.c", ("dst", "out"), ("src", "in"),
             ("rows", "scalar"), ("cols", "scalar"), ("dst_stride", "scalar")),
    _builtin("tsr_matmul8", "matmul.c", ("a", "in", "int8"), ("bt", "in", "int8"),
             ("c", "out", "int32"), ("rows", "scalar"), ("cols", "scalar"),
             ("depth", "scalar"), ("bt_stride", "scalar")),
)}
