"""Compile an imported model once, run it many times (docs/compiler.md, "ONNX importer").

:func:`import_model` = :func:`~tessera.toolchain.onnx.model.load_model` +
:func:`~tessera.toolchain.onnx.convert.convert` + :func:`~tessera.toolchain.onnx.lower.lower` +
:func:`tessera.toolchain.graph.compile_graph`, with the number of samples per tile chosen to fill the
tiles' SRAM (batched models). :meth:`OnnxProgram.run` checks the inputs, runs the batch in as
many runs as needed on a backend (``model``, ``rtl`` or ``both``) and returns the outputs and a
JSON-ready report (cycles total and per layer, utilisation, memory per tile, compile seconds).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .convert import convert
from .errors import InputError, ModelMemoryError, OnnxError, UnsupportedError
from .lower import lower
from .model import load_model

__all__ = ["import_model", "OnnxProgram", "RunOutput", "MAX_SAMPLES_PER_TILE"]

#: Upper bound of the automatic samples-per-tile choice.
MAX_SAMPLES_PER_TILE = 16
_DEFAULT_MAX_CYCLES = 200_000_000


@dataclass
class RunOutput:
    """What :meth:`OnnxProgram.run` returns: ``outputs`` (name -> array), ``report``, the
    per-run :class:`tessera.spec.result.RunResult` list and the first run's superstep marks."""
    outputs: dict
    report: dict
    results: list
    marks: object = None


def _np(dtype: str):
    return np.dtype(dtype)


class OnnxProgram:
    """A compiled ONNX model (from :func:`import_model`).

    Attributes
    ----------
    input_names, output_names : list of str
    batched : bool
        Samples along axis 0 are spread over the tiles (else one sample = the whole input,
        on tile 0).
    samples_per_tile : int
    samples_per_run : int
        ``samples_per_tile × tiles used``.
    compile_seconds : float
        Import (load, check, convert) plus compile time.
    layers : list of tessera.toolchain.onnx.lower.Layer
    compiled : tessera.toolchain.graph.CompiledGraph
    """

    def __init__(self, model, ir, lowered, compiled, config, compile_seconds, source_name):
        self.model, self.ir, self.lowered, self.compiled = model, ir, lowered, compiled
        self.config = config
        self.compile_seconds = compile_seconds
        self.source_name = source_name
        self.input_names = list(lowered.inputs)
        self.output_names = list(lowered.outputs)
        self.batched = ir.batched
        self.samples_per_tile = lowered.samples
        self.tiles = lowered.tiles
        self.samples_per_run = lowered.samples * len(lowered.tiles)
        self.layers = lowered.layers
        self._engines = {}

    # -- inputs ----------------------------------------------------------------------------
    def check_inputs(self, inputs) -> int:
        """Validate ``inputs`` (name -> array); returns the batch size.

        Raises
        ------
        InputError
            A missing or unknown name, a wrong dtype or shape (the message names the input).
        """
        if not isinstance(inputs, dict):
            raise InputError(f"inputs must be a dict of name -> array, not {type(inputs).__name__}")
        missing = [n for n in self.input_names if n not in inputs]
        if missing:
            raise InputError(f"missing input(s) {missing}; the model's inputs are "
                             f"{self.input_names}")
        extra = [n for n in inputs if n not in self.input_names]
        if extra:
            raise InputError(f"unknown input(s) {extra}; the model's inputs are {self.input_names}")
        batch = None
        for n in self.input_names:
            arr = np.asarray(inputs[n])
            var, shape, dt = self.lowered.inputs[n]
            if arr.dtype != _np(dt):
                raise InputError(f"input {n!r} has dtype {arr.dtype.name}; the model declares "
                                 f"{dt}")
            if self.batched:
                if arr.ndim != len(shape) or tuple(arr.shape[1:]) != tuple(shape[1:]) or \
                        arr.shape[0] < 1:
                    raise InputError(f"input {n!r} has shape {list(arr.shape)}; the model "
                                     f"expects [batch, {', '.join(map(str, shape[1:]))}]")
                if batch is not None and arr.shape[0] != batch:
                    raise InputError(f"input {n!r} has batch {arr.shape[0]} but another input "
                                     f"has {batch}")
                batch = arr.shape[0]
            else:
                if tuple(arr.shape) != tuple(shape):
                    raise InputError(f"input {n!r} has shape {list(arr.shape)}; the model "
                                     f"declares {list(shape)}")
                batch = 1
        return batch if batch is not None else 1

    # -- running ---------------------------------------------------------------------------
    def engine(self, backend: str):
        from tessera.toolchain.graph import Engine
        if backend not in self._engines:
            self._engines[backend] = Engine(self.compiled, backend=backend)
        return self._engines[backend]

    def _chunk(self, inputs, r):
        nt, S, per_run = len(self.tiles), self.samples_per_tile, self.samples_per_run
        data = {}
        for n in self.input_names:
            var, shape, dt = self.lowered.inputs[n]
            arr = np.asarray(inputs[n])
            if self.batched:
                part = arr[r * per_run:(r + 1) * per_run]
                buf = np.zeros((per_run,) + tuple(shape[1:]), dtype=arr.dtype)
                buf[:part.shape[0]] = part
            else:
                buf = arr.reshape((1,) + arr.shape)
            buf = np.ascontiguousarray(buf)
            if dt == "float32":
                buf = buf.view(np.int32)
            data[var] = buf.reshape(nt * S, -1)
        return data

    def _read(self, eng):
        return self._decode({self.lowered.outputs[n][0]: eng.read_tensor(self.lowered.outputs[n][0])
                             for n in self.output_names})

    def _decode(self, got):
        """Output variables' values (variable name -> array) -> model outputs."""
        out = {}
        for n in self.output_names:
            var, shape, dt = self.lowered.outputs[n]
            a = got[var]
            if dt == "float32":
                a = a.view(np.float32)
            if self.batched:
                out[n] = a.reshape((self.samples_per_run,) + tuple(shape[1:]))
            else:
                out[n] = a.reshape(tuple(shape))
        return out

    def run(self, inputs: dict, backend: str = "model", *, max_cycles: int = _DEFAULT_MAX_CYCLES,
            progress=None) -> RunOutput:
        """Run the model on a batch.

        Parameters
        ----------
        inputs : dict of str -> ndarray
            Keyed by the model's input names, dtype as declared, batch along axis 0.
        backend : {"model", "rtl", "both"}
            ``both`` runs the golden model and the RTL and compares them (``backends_agree``).
        max_cycles : int
            Cycle limit of each run.
        progress : callable or None
            Called as ``progress(done_samples, total_samples)`` after each run.

        Returns
        -------
        RunOutput
            ``outputs`` (name -> ndarray, the model's output shapes with the batch), ``report``
            (see :meth:`report`) and the per-run :class:`tessera.spec.result.RunResult` list.

        Raises
        ------
        InputError
            Bad inputs (before anything runs).
        tessera.toolchain.graph.EngineError
            A run faulted or timed out.
        """
        batch = self.check_inputs(inputs)
        backends = ["model", "rtl"] if backend == "both" else [backend]
        per_run = self.samples_per_run if self.batched else 1
        runs = -(-batch // per_run)
        outs = {b: {n: [] for n in self.output_names} for b in backends}
        results = {b: [] for b in backends}
        marks = {}
        t0 = time.monotonic()
        sim = {b: 0.0 for b in backends}
        if backend == "rtl" and runs > 1:
            # one RTL simulation for all runs (Engine.run_many): the per-run simulator start
            # and full-SRAM load / read-back were most of the wall time
            eng = self.engine("rtl")
            outvars = [self.lowered.outputs[n][0] for n in self.output_names]
            ts = time.monotonic()
            done = eng.run_many([self._chunk(inputs, r) for r in range(runs)],
                                outvars + [self.lowered.profile.name], max_cycles)
            sim["rtl"] += time.monotonic() - ts
            for r, (res, got) in enumerate(done):
                results["rtl"].append(res)
                dec = self._decode(got)
                for n in self.output_names:
                    outs["rtl"][n].append(dec[n])
                if r == 0:
                    marks["rtl"] = got[self.lowered.profile.name]
            if progress is not None:
                progress(batch, batch)
        for r in (range(runs) if not (backend == "rtl" and runs > 1) else ()):
            data = self._chunk(inputs, r)
            for b in backends:
                eng = self.engine(b)
                for var, arr in data.items():
                    eng.write_tensor(var, arr)
                ts = time.monotonic()
                res = eng.run(max_cycles)
                sim[b] += time.monotonic() - ts
                results[b].append(res)
                got = self._read(eng)
                for n in self.output_names:
                    outs[b][n].append(got[n])
                if r == 0:
                    marks[b] = eng.read_tensor(self.lowered.profile.name)
            if progress is not None:
                progress(min(batch, (r + 1) * per_run), batch)
        main = backends[-1]
        outputs = {}
        for n in self.output_names:
            a = np.concatenate(outs[main][n], axis=0) if self.batched else outs[main][n][0]
            outputs[n] = a[:batch] if self.batched else a
        report = self.report(results[main], marks.get(main), batch, main)
        report["run_seconds"] = round(time.monotonic() - t0, 3)
        report["simulation_seconds"] = round(sim[main], 3)
        if backend == "both":
            same_out = all(np.array_equal(np.concatenate(outs["model"][n]), np.concatenate(outs["rtl"][n]))
                           for n in self.output_names)
            same_json = all(a.to_json() == m.to_json()
                            for a, m in zip(results["rtl"], results["model"]))
            report["backends_agree"] = bool(same_out and same_json)
            report["backend"] = "both"
        return RunOutput(outputs, report, results[main], marks.get(main))

    # -- report ----------------------------------------------------------------------------
    def layer_cycles(self, marks) -> list:
        """Per layer: the largest number of cycles any tile spends in its compute sets (first
        run's superstep marks)."""
        from tessera.toolchain.profile.collect import decode_marks
        ops = self.compiled.ops
        cs_index = {}
        for i, op in enumerate(ops):
            if op[0] == "exec":
                cs_index.setdefault(op[1], []).append(i)
        per_tile = []
        for t in self.tiles:
            recs = decode_marks(marks[t])
            d = {}
            for (i0, k0, c0), (i1, k1, c1) in zip(recs, recs[1:]):
                if k1 == 1 and 0 <= i1 < len(ops):
                    d[ops[i1][1]] = d.get(ops[i1][1], 0) + ((c1 - c0) & 0xFFFFFFFF)
            per_tile.append(d)
        out = []
        for layer in self.layers:
            out.append(max(sum(d.get(c, 0) for c in layer.compute_sets) for d in per_tile))
        self._step_cycles = {c: max(d.get(c, 0) for d in per_tile)
                             for layer in self.layers for c in layer.compute_sets}
        return out

    def report(self, results, marks, batch, backend) -> dict:
        """The JSON report of a run (keys documented in docs/compiler.md)."""
        cfg = self.config
        nt = len(self.tiles)
        # utilisation is against the tile's peak: the matrix engine's P MACs per cycle, or 4
        # (one dot4 per cycle) without an engine (ArrayConfig.peak_macs_per_cycle)
        peak = cfg.peak_macs_per_cycle
        cycles = sum(int(r.cycles) for r in results)
        macs = sum(int(t.counters["macs"]) for r in results for t in r.tiles)
        # useful MACs: those of the stored weight blocks (a block-sparse layer's skipped blocks
        # are not work; every block of a layer has the same MACs, so a layer's share is its
        # ``density``); the dense-equivalent count is reported beside it
        dense_per_sample = sum(l.macs for l in self.layers)
        useful_per_sample = sum(_useful_macs(l) for l in self.layers)
        useful = useful_per_sample * batch
        lc = self.layer_cycles(marks) if marks is not None else [None] * len(self.layers)
        runs = len(results)
        layers = []
        for l, c in zip(self.layers, lc):
            d = {"index": l.index, "name": l.label, "onnx_ops": list(l.onnx_ops), "kind": l.kind,
                 "cycles": c, "macs_per_sample": l.macs,
                 "useful_macs_per_sample": _useful_macs(l)}
            if c is not None:
                d["steps"] = {cs.split(".", 1)[1]: self._step_cycles.get(cs) for cs in l.compute_sets}
            if c:
                d["mac_utilization"] = (_useful_macs(l) * self.samples_per_run /
                                        (c * peak * nt)) if l.macs else 0.0
            if l.sparse is not None:
                d["sparse"] = l.sparse
            layers.append(d)
        mem = []
        for t in self.tiles:
            m = dict(self.compiled.memory[t])
            m["tile"] = t
            mem.append(m)
        return {
            "model": self.source_name, "backend": backend, "config": cfg.to_dict(),
            "batched": self.batched, "batch": batch, "runs": runs,
            "samples_per_run": self.samples_per_run if self.batched else 1,
            "samples_per_tile": self.samples_per_tile, "tiles_used": nt,
            "cycles": cycles, "cycles_per_run": [int(r.cycles) for r in results],
            "cycles_per_sample": cycles / batch if batch else None,
            "macs": macs, "useful_macs": useful,
            "dense_equivalent_macs": dense_per_sample * batch,
            "peak_macs_per_cycle_per_tile": peak,
            "mac_utilization": useful / (cycles * peak * cfg.tiles) if cycles else 0.0,
            "dense_equivalent_mac_utilization": (dense_per_sample * batch /
                                                 (cycles * peak * cfg.tiles)) if cycles else 0.0,
            "layers": layers, "memory": mem, "arena_bytes_per_tile": self.lowered.arena_bytes,
            "compile_seconds": round(self.compile_seconds, 3),
        }

    def memory_report(self) -> str:
        return self.compiled.memory_report()


def _useful_macs(layer) -> int:
    """MACs per sample of ``layer`` with its stored weights only: ``layer.macs`` (dense) times
    the stored fraction of its weight blocks (``layer.sparse["density"]``; 1 when dense)."""
    if layer.sparse is None:
        return int(layer.macs)
    return int(round(layer.macs * layer.sparse["blocks_stored"] / layer.sparse["blocks_total"]))


def _fit_samples(ir, config, kwargs, cap) -> tuple:
    """Lower and compile with 1 sample per tile, then with as many as fit (≤ cap)."""
    from tessera.toolchain.graph import compile_graph
    from tessera.toolchain.graph.errors import GraphMemoryError
    low = lower(ir, config, 1, **kwargs)
    try:
        comp = compile_graph(low.graph, low.program, profile=low.profile)
    except GraphMemoryError as e:
        raise _memory_error(e, low, 1) from None
    if not ir.batched or cap <= 1:
        return low, comp
    free = min(comp.memory[t]["free"] for t in low.tiles)
    io = sum(-(-int(np.prod(s)) * (4 if d in ("float32", "int32") else 1) // 4) * 4
             for _, s, d in list(low.inputs.values()) + list(low.outputs.values()))
    per = low.arena_peak[0] + io + low.padded_bytes
    s = max(1, min(cap, 1 + (free - 256) // max(per, 1)))
    while s > 1:
        try:
            low2 = lower(ir, config, s, **kwargs)
            return low2, compile_graph(low2.graph, low2.program, profile=low2.profile)
        except (GraphMemoryError, ModelMemoryError):
            s = max(1, s * 3 // 4)
    return low, comp


def _memory_error(e, low, samples) -> ModelMemoryError:
    peak, label, big, bigb = low.arena_peak
    items = ", ".join(f"{n} {b} B" for n, b in e.largest)
    if big:
        need = bigb * samples
        free = max(0, e.available - (e.used - need))
        msg = (f"the model does not fit tile {e.tile}: tensor {big!r} (live at node {label!r}, "
               f"{samples} sample(s)) needs {need} bytes but only {free} are free; the tile "
               f"needs {e.used} bytes in all and has {e.available}; largest items: {items}")
        return ModelMemoryError(msg, str(big), e.tile, need, free)
    name, nb = e.largest[0] if e.largest else ("?", e.used)
    free = max(0, e.available - (e.used - nb))
    msg = (f"the model does not fit tile {e.tile}: {name} needs {nb} bytes but only {free} are "
           f"free; the tile needs {e.used} bytes in all and has {e.available}; largest items: "
           f"{items}")
    return ModelMemoryError(msg, str(name), e.tile, nb, free)


def import_model(source, config=None, *, samples_per_tile=None, constants=None,
                 batch_mode="auto", sparse="auto", block_size=None,
                 batch_hint=None, engine="auto") -> OnnxProgram:
    """Load, check, map and compile an ONNX model for a Tessera array.

    Parameters
    ----------
    source : str, Path, bytes or onnx.ModelProto
    config : tessera.spec.config.ArrayConfig, optional
        Default ``preset("small")``.
    samples_per_tile : int or None
        Samples each tile processes per run (batched models); default: as many as fit, at
        most :data:`MAX_SAMPLES_PER_TILE`.
    constants : dict, optional
        Graph inputs to compile in as constants (``name -> array``).
    batch_mode : {"auto", "batched", "single"}
        See :func:`tessera.toolchain.onnx.convert.convert`.
    sparse : {"auto", "dense"}
        ``auto``: constant weights with zero blocks use the block-sparse kernels (reported
        per layer); ``dense`` forces the dense kernels.
    block_size : int or None
        Block size for the sparsity detection (default: the largest of 16, 8, 4 that the
        weights' zero blocks allow).
    batch_hint : int or None
        The batch the program will mostly run: the automatic samples-per-tile choice does not
        exceed ``ceil(batch_hint / tiles)`` (fewer padding samples per run).
    engine : {"auto", "dot4"}
        ``auto``: convolution and constant-weight matmuls on the matrix engine when
        ``config.engine_macs > 0`` (docs/compiler.md, "ONNX importer"); ``dot4``: the ``dot4``
        kernels on any array (for comparison).

    Returns
    -------
    OnnxProgram

    Raises
    ------
    OnnxFileError, UnsupportedError, ModelMemoryError
        Before anything runs; messages name the node, op type, tensor, tile and bytes.
    """
    from tessera.spec.config import ArrayConfig, preset
    t0 = time.monotonic()
    config = preset("small") if config is None else config
    if not isinstance(config, ArrayConfig):
        raise TypeError(f"import_model: config must be an ArrayConfig, not {config!r}")
    if sparse not in ("auto", "dense"):
        raise UnsupportedError(f"sparse must be 'auto' or 'dense', not {sparse!r}")
    if engine not in ("auto", "dot4"):
        raise UnsupportedError(f"engine must be 'auto' or 'dot4', not {engine!r}")
    model = load_model(source)
    name = str(source) if isinstance(source, (str,)) or hasattr(source, "__fspath__") else \
        (model.graph.name or "model")
    ir = convert(model, constants=constants, batch_mode=batch_mode)
    kwargs = {"sparse_mode": sparse, "block_size": block_size, "engine": engine}
    if samples_per_tile is not None:
        if not isinstance(samples_per_tile, int) or samples_per_tile < 1:
            raise UnsupportedError(f"samples_per_tile must be a positive int, not {samples_per_tile!r}")
        from tessera.toolchain.graph import compile_graph
        from tessera.toolchain.graph.errors import GraphMemoryError
        s = samples_per_tile if ir.batched else 1
        low = lower(ir, config, s, **kwargs)
        try:
            comp = compile_graph(low.graph, low.program, profile=low.profile)
        except GraphMemoryError as e:
            raise _memory_error(e, low, s) from None
    else:
        cap = MAX_SAMPLES_PER_TILE
        if batch_hint is not None and ir.batched:
            cap = max(1, min(cap, -(-int(batch_hint) // config.tiles)))
        low, comp = _fit_samples(ir, config, kwargs, cap)
    return OnnxProgram(model, ir, low, comp, config, time.monotonic() - t0, name)
