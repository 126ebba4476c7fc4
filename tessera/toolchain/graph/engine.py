"""Host API: load a compiled graph, move tensors, run (docs/compiler.md, "Host API").

The engine keeps each tile's data region (control tables, tensors, records, exchange
programs) on the host between runs. :meth:`Engine.run` loads the SPMD binary and every
region through the backend registry (:mod:`tessera.backends`), runs, and reads the
regions back, so tensors keep their values from run to run.
"""

from __future__ import annotations

import numpy as np

from tessera.spec.result import RunResult, RunStatus

from .compile import CompiledGraph
from .errors import EngineError, GraphError

__all__ = ["Engine", "DEFAULT_MAX_CYCLES"]

DEFAULT_MAX_CYCLES = 10_000_000


class Engine:
    """Runs a :class:`CompiledGraph` on a backend.

    Parameters
    ----------
    compiled : CompiledGraph
        From :func:`tessera.toolchain.graph.compile_graph`.
    backend : str
        ``"model"`` (golden model) or ``"rtl"`` (Verilator, when ``tb`` registers it).

    Raises
    ------
    NotImplementedError
        The backend is not available in this installation (e.g. ``rtl`` before the
        testbench registers it); the message says which and why.
    GraphError
        ``compiled`` is not a CompiledGraph.
    """

    def __init__(self, compiled: CompiledGraph, backend: str = "model"):
        from tessera import backends
        if not isinstance(compiled, CompiledGraph):
            raise GraphError(f"Engine needs a CompiledGraph, not {compiled!r}")
        try:
            backends.get(backend)
        except backends.BackendError as e:
            raise NotImplementedError(f"Engine: {e}") from None
        self.compiled = compiled
        self.backend = backend
        self._regions = [bytearray(r) for r in compiled.regions]
        self.last_result: RunResult | None = None

    def _var(self, name):
        try:
            return self.compiled.tensors[name]
        except (KeyError, TypeError):
            raise GraphError(f"unknown tensor {name!r}; the graph has "
                             f"{', '.join(sorted(self.compiled.tensors)) or 'no variables'}") from None

    def write_tensor(self, name: str, data) -> None:
        """Set variable ``name`` to ``data`` (used by the next run).

        Parameters
        ----------
        name : str
        data : array_like of int
            Exactly the variable's shape; values must fit its dtype (no silent wrap).

        Raises
        ------
        GraphError
            Unknown name, wrong shape, non-integer data, or values out of range.
        """
        var, addrs = self._var(name)
        arr = np.asarray(data)
        if arr.shape != var.shape:
            raise GraphError(f"write_tensor({name!r}): data has shape {arr.shape}, "
                             f"the variable has shape {var.shape}")
        if arr.dtype.kind not in "iub":
            raise GraphError(f"write_tensor({name!r}): data must be integers, not {arr.dtype}")
        info = np.iinfo(var.dtype)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise GraphError(f"write_tensor({name!r}): values {arr.min()}..{arr.max()} do not "
                             f"fit {var.dtype.name} ({info.min}..{info.max})")
        flat = arr.astype(var.dtype).reshape(-1)
        base = self.compiled.base
        for iv, a in zip(var.intervals, addrs):
            raw = flat[iv.start:iv.stop].tobytes()
            off = int(a) - base
            self._regions[iv.tile][off:off + len(raw)] = raw

    def read_tensor(self, name: str) -> np.ndarray:
        """The current value of variable ``name`` (after the last run), a new array of its
        shape and dtype."""
        var, addrs = self._var(name)
        out = np.empty(var.size, dtype=var.dtype)
        base, isz = self.compiled.base, var.dtype.itemsize
        for iv, a in zip(var.intervals, addrs):
            off = int(a) - base
            out[iv.start:iv.stop] = np.frombuffer(
                bytes(self._regions[iv.tile][off:off + iv.size * isz]), dtype=var.dtype)
        return out.reshape(var.shape)

    def run(self, max_cycles: int = DEFAULT_MAX_CYCLES, check: bool = True) -> RunResult:
        """Run the program once.

        Parameters
        ----------
        max_cycles : int
            Cycle limit.
        check : bool
            Raise :class:`EngineError` unless the run halts with every context's exit
            code 0 (a non-zero code means a corrupt control table).

        Returns
        -------
        tessera.spec.result.RunResult
            Status, cycles, per-tile counters (compute / sync / exchange / halted cycles,
            retired, macs) and contexts. Also kept as :attr:`last_result`.

        Raises
        ------
        EngineError
            With ``check``: the run faulted, timed out or exited non-zero; the message
            gives the status and the first fault record. Tensors are still read back.
        """
        from tessera.backends import run_program_io
        cg = self.compiled
        base = cg.base
        preload = [(t, base, bytes(r)) for t, r in enumerate(self._regions)]
        readback = [(t, base, len(r)) for t, r in enumerate(self._regions)]
        result, data = run_program_io(self.backend, cg.config, cg.image, max_cycles,
                                      preload=preload, readback=readback)
        for t, d in enumerate(data):
            self._regions[t][:] = d
        self.last_result = result
        if check:
            _check(result, max_cycles)
        return result


def _check(result: RunResult, max_cycles: int) -> None:
    if result.status == RunStatus.HALTED:
        bad = [(t.tile, c.context, c.exit_code) for t in result.tiles for c in t.contexts
               if c.exit_code not in (0, None)]
        if bad:
            raise EngineError(f"graph run halted with non-zero exit codes (tile, context, code): "
                              f"{bad[:4]}", result)
        return
    if result.status == RunStatus.FAULT:
        f = next(t for t in result.tiles if t.fault is not None)
        raise EngineError(f"graph run faulted after {result.cycles} cycles: tile {f.tile} "
                          f"{f.fault.to_json()}", result)
    raise EngineError(f"graph run timed out after {max_cycles} cycles "
                      f"(not arrived at the ARRAY barrier: {result.not_arrived})", result)
