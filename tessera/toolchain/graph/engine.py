"""Host API: load a compiled graph, move tensors, run (docs/compiler.md, "Host API").

The engine keeps each tile's data region (control tables, tensors, records, exchange
programs) on the host between runs. :meth:`Engine.run` loads the SPMD binary and every
region through the backend registry (:mod:`tessera.backends`), runs, and reads the
regions back, so tensors keep their values from run to run.
"""

from __future__ import annotations

import os

import numpy as np

from tessera.spec.result import RunResult, RunStatus

from .compile import CompiledGraph, VertexEntry
from .errors import EngineError, GraphError

__all__ = ["Engine", "DEFAULT_MAX_CYCLES", "VertexEntry"]

DEFAULT_MAX_CYCLES = 10_000_000
#: Environment variable that turns checked runs on for ``Engine.run(checked=None)`` on the
#: model backend (the test suite sets it: tests/conftest.py).
CHECKED_ENV = "TESSERA_CHECKED"


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

    def run(self, max_cycles: int = DEFAULT_MAX_CYCLES, check: bool = True,
            checked: bool | None = None) -> RunResult:
        """Run the program once.

        Parameters
        ----------
        max_cycles : int
            Cycle limit.
        check : bool
            Raise :class:`EngineError` unless the run halts with every context's exit
            code 0 (a non-zero code means a corrupt control table).
        checked : bool or None
            Tensor-bounds check (:mod:`tessera.toolchain.graph.checked`): run on the golden
            model with its store log and raise :class:`TensorBoundsError` if a vertex
            stored outside the tensors it may write. None: on when the backend is
            ``"model"`` and the environment variable ``TESSERA_CHECKED`` is ``1`` (the
            test suite's default), off otherwise. Results are identical (and on the fast
            engine the cost about the same).

        Returns
        -------
        tessera.spec.result.RunResult
            Status, cycles, per-tile counters (compute / sync / exchange / halted cycles,
            retired, macs) and contexts. Also kept as :attr:`last_result`.

        Raises
        ------
        TensorBoundsError
            In a checked run, a vertex wrote outside its tensors (raised after the tensors
            are read back; the message names vertex, codelet, compute set, tile, context,
            pc with ``file:line``, the address and the tensor or region it hit).
        GraphError
            ``checked=True`` with a backend other than ``"model"``.
        EngineError
            With ``check``: the run faulted, timed out or exited non-zero. For a fault the
            message names the tile, context, cause, the hex pc with its function and
            ``file:line``, the address and the codelet / vertex / compute set (attributes
            ``tile``, ``context``, ``pc``, ``addr``, ``cause``, ``entry``); for a timeout
            the contexts still running (``tiles_running``). Tensors are still read back.
        """
        from tessera.backends import run_program_io
        cg = self.compiled
        base = cg.base
        preload = [(t, base, bytes(r)) for t, r in enumerate(self._regions)]
        readback = [(t, base, len(r)) for t, r in enumerate(self._regions)]
        if checked is None:
            checked = self.backend == "model" and os.environ.get(CHECKED_ENV) == "1"
        violations = []
        if checked:
            if self.backend != "model":
                raise GraphError(f"Engine.run(checked=True) needs the 'model' backend, not "
                                 f"{self.backend!r} (the check replays the golden model's "
                                 "retire trace)")
            if not isinstance(max_cycles, int) or isinstance(max_cycles, bool) \
                    or max_cycles < 1:
                raise ValueError(f"max_cycles must be a positive int, not {max_cycles!r}")
            from .checked import run_checked
            result, data, violations = run_checked(cg, self._regions, max_cycles)
        else:
            result, data = run_program_io(self.backend, cg.config, cg.image, max_cycles,
                                          preload=preload, readback=readback)
        for t, d in enumerate(data):
            self._regions[t][:] = d
        self.last_result = result
        if violations:
            from .checked import TensorBoundsError, violation_message
            raise TensorBoundsError(violation_message(cg, violations), result, violations)
        if check:
            _check(result, max_cycles, cg, self._regions)
        return result

    def run_many(self, feeds, read, max_cycles: int = DEFAULT_MAX_CYCLES) -> list:
        """Several runs, each after writing its inputs: ``feeds[i]`` (name -> data, as
        :meth:`write_tensor`), then :meth:`run` (checked as ``check=True``), then the
        variables ``read`` are read (as :meth:`read_tensor`).

        The same as that loop on every backend; a backend whose run function has a
        ``run_jobs`` attribute (``rtl``: :func:`tessera.tb.backend.run_jobs_on_rtl`) runs
        them all in one simulation (the image and the SRAM are
        loaded once, a run after the first writes only its inputs and reads back only
        ``read``; the SRAM is read back in full after the last run).

        Returns
        -------
        list of (RunResult, dict of name -> ndarray)

        Raises
        ------
        GraphError, EngineError
            As :meth:`write_tensor` / :meth:`run` (a fault or timeout in any run).
        """
        feeds = list(feeds)
        from tessera.backends import get as get_backend
        run_jobs = getattr(get_backend(self.backend), "run_jobs", None)
        if run_jobs is None or len(feeds) < 2:
            out = []
            for f in feeds:
                for k, v in f.items():
                    self.write_tensor(k, v)
                res = self.run(max_cycles)
                out.append((res, {n: self.read_tensor(n) for n in read}))
            return out
        if not isinstance(max_cycles, int) or isinstance(max_cycles, bool) or max_cycles < 1:
            raise ValueError(f"max_cycles must be a positive int, not {max_cycles!r}")
        cg = self.compiled
        base = cg.base

        def ranges(names):
            got = []
            for n in names:
                var, addrs = self._var(n)
                isz = var.dtype.itemsize
                got += [(iv.tile, int(a), iv.size * isz) for iv, a in zip(var.intervals, addrs)]
            return got

        full = [(t, base, len(r)) for t, r in enumerate(self._regions)]
        jobs = []
        for i, f in enumerate(feeds):
            for k, v in f.items():
                self.write_tensor(k, v)
            if i == 0:
                preload = [(t, base, bytes(r)) for t, r in enumerate(self._regions)]
            else:
                preload = [(t, a, bytes(self._regions[t][a - base:a - base + n]))
                           for t, a, n in ranges(f)]
            jobs.append((preload, full if i == len(feeds) - 1 else ranges(read)))
        out = []
        for i, (result, data) in enumerate(run_jobs(cg.config, cg.image, max_cycles, jobs)):
            for (t, a, n), d in zip(jobs[i][1], data):
                self._regions[t][a - base:a - base + n] = d
            self.last_result = result
            _check(result, max_cycles, cg, self._regions)
            out.append((result, {n: self.read_tensor(n) for n in read}))
        return out

    def diagnose(self, max_cycles: int | None = None) -> "EngineError | None":
        """The :class:`EngineError` that ``run(check=True)`` would have raised for the last
        run (None if it halted cleanly or nothing ran yet); for ``run(check=False)`` users."""
        if self.last_result is None:
            return None
        try:
            _check(self.last_result, max_cycles or self.last_result.cycles, self.compiled,
                   self._regions)
        except EngineError as e:
            return e
        return None

    def running_entry(self, tile: int, context: int):
        """The vertex ``context`` of ``tile`` was running when the last run stopped.

        Returns
        -------
        VertexEntry or None
            None if the context was not inside a codelet (runtime code, a barrier, halted)
            or there was no run yet.
        """
        return _entry(self.compiled, self._regions, tile, context)


def _entry(cg: CompiledGraph, regions, tile: int, context: int):
    off = cg.current_offset + 4 * context
    if not cg.current_offset or not 0 <= tile < len(regions) or off + 4 > len(regions[tile]):
        return None
    addr = int.from_bytes(bytes(regions[tile][off:off + 4]), "little")
    return cg.entries.get((tile, addr)) if addr else None


def _where(cg: CompiledGraph, pc: int) -> str:
    from tessera.toolchain.run import describe_pc
    return describe_pc(pc, cg.image)


def _exchange_phase(cg: CompiledGraph, tile: int, addr: int) -> str | None:
    for lo, hi, name in cg.xprograms.get(tile, ()):
        if lo <= addr < hi:
            return name
    return None


def _check(result: RunResult, max_cycles: int, cg: CompiledGraph | None = None,
           regions=None) -> None:
    """Raise :class:`EngineError` unless ``result`` halted with every exit code 0.

    The message names, for a fault, the tile, context, cause, the hex pc with its function
    and ``file:line``, the address, and the codelet / vertex / compute set the context was
    running (or the exchange phase of an exchange fault); for a timeout, every context still
    running (with the same details) and the tiles waiting at barriers.
    """
    if result.status == RunStatus.HALTED:
        bad = [(t.tile, c.context, c.exit_code) for t in result.tiles for c in t.contexts
               if c.exit_code not in (0, None)]
        if bad:
            raise EngineError(f"graph run halted with non-zero exit codes (tile, context, code): "
                              f"{bad[:4]}", result)
        return
    from tessera.spec.faults import FaultCause
    from tessera.spec.result import ContextState
    if result.status == RunStatus.FAULT:
        faulted = [t for t in result.tiles if t.fault is not None]
        t = faulted[0]
        f = t.fault
        cause = FaultCause(f.cause).label
        info = dict(tile=t.tile, context=f.context, pc=f.pc, addr=f.addr, cause=cause)
        if f.context is None:
            phase = _exchange_phase(cg, t.tile, f.pc) if cg else None
            text = (f"tile {t.tile}: {cause} at exchange step {f.pc:#x}"
                    + (f" of exchange phase {phase!r}" if phase else "")
                    + f", addr {f.addr:#x}")
            info["exchange_phase"] = phase
        else:
            ent = _entry(cg, regions, t.tile, f.context) if cg else None
            text = (f"tile {t.tile} context {f.context}: {cause} at pc "
                    f"{_where(cg, f.pc) if cg else hex(f.pc)}, addr {f.addr:#x}")
            if ent:
                text += f"; running {ent}"
            elif f.cause == FaultCause.ENGINE_FAULT and cg is not None \
                    and cg.engine_starts.get(t.tile):
                starts = cg.engine_starts[t.tile]
                text += ("; the engine command was issued by the graph runtime: the engine "
                         "start (first descriptor) of compute set "
                         + " or ".join(f"{n!r} (descriptor at {a:#x})" for n, a in starts))
                info["engine_start"] = starts
            else:
                text += "; in the graph runtime, not in a codelet"
            if cg is not None and f.cause == FaultCause.STACK_OVERFLOW:
                from tessera.toolchain.run import stack_overflow_text
                text += "; " + stack_overflow_text(cg.config, f.context, f.addr, cg.image)
            info["entry"] = ent
        more = f" (and {len(faulted) - 1} more tile(s) faulted in the same cycle)" \
            if len(faulted) > 1 else ""
        raise EngineError(f"graph run faulted after {result.cycles} cycles: {text}{more}",
                          result, **info)
    # timeout
    running, waits = [], {}
    for t in result.tiles:
        for c in t.contexts:
            if c.state == ContextState.RUNNING:
                running.append((t.tile, c))
            elif c.state in (ContextState.WAIT_TILE, ContextState.WAIT_ARRAY):
                waits.setdefault(ContextState(c.state).label, set()).add(t.tile)
    parts = []
    entries = []
    for tile, c in running[:6]:
        ent = _entry(cg, regions, tile, c.context) if cg else None
        entries.append(ent)
        parts.append(f"tile {tile} context {c.context} at pc "
                     f"{_where(cg, c.pc) if cg else hex(c.pc)}"
                     + (f" running {ent}" if ent else " (graph runtime)"))
    if len(running) > 6:
        parts.append(f"... {len(running) - 6} more running contexts")
    from tessera.toolchain.run import format_ranges
    tiles_running = sorted({tile for tile, _ in running})
    msg = (f"graph run timed out after {max_cycles} cycles: "
           + (f"still running on tile(s) {format_ranges(tiles_running)}: " + "; ".join(parts)
              if running else "no context is running (all wait at barriers: a deadlock)"))
    for label, tiles in sorted(waits.items()):
        msg += f"; {label.replace('_', ' ')}: tile(s) {format_ranges(tiles)}"
    raise EngineError(msg, result, tiles_running=tiles_running,
                      entry=entries[0] if entries else None)
