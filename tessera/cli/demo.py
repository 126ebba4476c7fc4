"""``tessera demo``: the int8 digits network on the simulated array, checked bit for bit.

What it does:

1. loads scikit-learn's bundled 8×8 digits (no download), the fixed 75/25 split, and the
   deterministic float MLP 64→32→10, trained once and cached, post-training quantized to int8
   (:mod:`tessera.toolchain.models.digits`);
2. maps it onto the array (:mod:`tessera.toolchain.models.digits_graph`: images split over the tiles,
   weights sharded and all-gathered by the exchange, matrix-engine layers with the requantize
   fused in the engine — or, with ``engine_macs = 0``, dot4 matmuls and requantize codelets) and
   compiles it **once** for a batch of images;
3. runs the first ``K`` test images batch by batch on the chosen backend (each run: write the
   batch tensor, run, read the int8 logits), with a progress bar;
4. compares the logits with the numpy int8 reference ``QuantizedMLP.forward_int8`` (built only
   from ``golden_model.kernels``) for every image, and on the ``rtl`` backend also with the
   golden-model backend running the same compiled program (logits and run-result JSON);
5. prints float / int8 reference / backend accuracy, ``match``, cycles per image, MAC
   utilisation, exchange and sync shares; ``--json`` and ``--profile`` write files.

Exit code 0 when everything matches, 3 on any mismatch (or a run that faulted / timed out).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from tessera.output import write_output

__all__ = ["run_digits_demo", "DEFAULT_IMAGES", "JSON_KEYS", "DemoError"]

#: Test images run by default: the whole test split (450). A warm ``make demo``
#: (RTL, 4 tiles, 2 runs of 228 images, plus the golden-model check) takes about 50 s on the
#: 2-core development machine (goal: under 3 minutes).
DEFAULT_IMAGES = 450
#: Keys the ``--json`` file always has.
JSON_KEYS = ("accuracy_float", "accuracy_int8", "accuracy_backend", "match", "images",
             "cycles_per_image", "mac_utilization", "peak_macs_per_cycle_per_tile")
#: Peak MACs per cycle per tile without a matrix engine: one dot4 (4 int8 MACs) per issue
#: slot. With an engine the peak is its P (``ArrayConfig.peak_macs_per_cycle``).
PEAK_MACS_PER_TILE = 4


class DemoError(ValueError):
    """Bad demo arguments (message names the argument)."""


def _progress(enabled: bool):
    """A rich progress bar (or a no-op stand-in when disabled / rich is missing)."""
    class _Null:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def add_task(self, *a, **k):
            return 0

        def update(self, *a, **k):
            pass

        def advance(self, *a, **k):
            pass
    if not enabled:
        return _Null()
    try:
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn,
                                   TextColumn, TimeElapsedColumn)
    except ImportError:  # pragma: no cover - rich is a dependency
        return _Null()
    from rich.console import Console
    return Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                    MofNCompleteColumn(), TextColumn("images"), TimeElapsedColumn(),
                    console=Console(stderr=True), transient=False)


def _plan_batches(images: int, max_b: int, tiles: int) -> tuple[int, int]:
    """(number of runs, batch size): equal batches, a multiple of the tile count."""
    runs = -(-images // max_b)
    per = -(-images // runs)
    batch = -(-per // tiles) * tiles
    return runs, batch


def run_digits_demo(config, *, backend: str = "rtl", images: int = DEFAULT_IMAGES,
                    batch: int | None = None, out_dir=None, json_out=None,
                    profile: bool = False, compare_model: bool | None = None,
                    progress: bool = True, max_cycles: int = 50_000_000, out=print) -> dict:
    """Run the digits demo and return its report.

    Parameters
    ----------
    config : tessera.spec.config.ArrayConfig
        Target array (e.g. ``preset("small")``, 4 tiles).
    backend : {"rtl", "model"}
    images : int
        Number of test images (the first ``images`` of the fixed test split), 1..450.
    batch : int or None
        Images per run; default: as many as fit (``fit_batch``, at most 64 per tile with dot4, 256 with
        the matrix engine), split into
        equal batches. Padding images (zeros) fill the last batch and are not scored.
    out_dir : path-like or None
        Directory for the profile files (default ``build/demo``).
    json_out : path-like, "-" or None
        Write the JSON report here ("-" = stdout).
    profile : bool
        Write ``profile.png``, ``profile.html`` and ``profile.json`` into ``out_dir``
        (the superstep timeline is that of the first batch; the summary covers all runs).
    compare_model : bool or None
        Also run the golden model on the same program and compare (default: when the
        backend is not ``model``).
    progress : bool
        Show a progress bar on stderr.
    max_cycles : int
        Cycle limit per run.
    out : callable
        Receives each report line.

    Returns
    -------
    dict
        The JSON report: the :data:`JSON_KEYS` plus ``backend``, ``config``, ``runs``,
        ``batch``, ``cycles``, ``macs``, ``exchange_share``, ``sync_share``,
        ``compute_share``, ``match_reference``, ``match_model`` (None if not compared),
        ``mismatches`` (image indices), ``profile`` (file paths) and ``exit_code``
        (0, or 3 on a mismatch).

    Raises
    ------
    DemoError
        ``images`` or ``batch`` out of range.
    tessera.backends.BackendError, NotImplementedError
        The backend is unavailable.
    tessera.toolchain.graph.EngineError
        A run faulted or timed out (the message has the fault record).
    """
    from tessera.backends import get as get_backend
    from tessera.toolchain.models.digits import load_digits_model, load_digits_split
    from tessera.toolchain.models.digits_graph import build_digits_graph, fit_batch

    t_start = time.monotonic()
    q = load_digits_model()
    _, x_te, _, y_te = load_digits_split(q.config)
    if not isinstance(images, int) or isinstance(images, bool) or not 1 <= images <= len(x_te):
        raise DemoError(f"--images must be in 1..{len(x_te)} (the test split), not {images!r}")
    N = config.tiles
    if batch is None:
        runs, batch = _plan_batches(images, fit_batch(q, config), N)
    else:
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise DemoError(f"batch must be a positive int, not {batch!r}")
        most = fit_batch(q, config, cap_per_tile=1 << 20)
        if batch > most:
            raise DemoError(f"--batch {batch} does not fit the SRAM of {config.tiles} tile(s): "
                            f"at most {most} images per run")
        runs = -(-images // batch)
    if compare_model is None:
        compare_model = backend != "model"
    get_backend(backend)  # fail early (BackendError) before compiling anything

    x_pix, y = x_te[:images], y_te[:images]
    X = q.quantize_input(x_pix)
    ref = q.forward_int8(X)
    dg = build_digits_graph(q, config, batch)
    engines = {backend: dg.engine(backend)}
    if compare_model:
        engines["model"] = dg.engine("model")

    logits = {b: np.zeros((runs * batch, 10), dtype=np.int8) for b in engines}
    results = {b: [] for b in engines}
    first_marks = None
    padded = np.zeros((runs * batch, 64), dtype=np.int8)
    padded[:images] = X
    sim_s = 0.0
    with _progress(progress) as bar:
        task = bar.add_task(f"digits on {backend} ({N} tiles)", total=images)
        for r in range(runs):
            chunk = padded[r * batch:(r + 1) * batch]
            for b, eng in engines.items():
                t0 = time.monotonic()
                lg, res = dg.run_batch(eng, chunk, max_cycles)
                if b == backend:
                    sim_s += time.monotonic() - t0
                logits[b][r * batch:(r + 1) * batch] = lg
                results[b].append(res)
                if r == 0 and b == backend:
                    first_marks = eng.read_tensor(dg.profile_name)
            bar.update(task, completed=min(images, (r + 1) * batch))

    got = logits[backend][:images]
    bad_ref = np.nonzero(~np.all(got == ref, axis=1))[0]
    match_ref = bad_ref.size == 0
    match_model = None
    bad_model = np.array([], dtype=np.int64)
    if compare_model and backend != "model":
        bad_model = np.nonzero(~np.all(got == logits["model"][:images], axis=1))[0]
        same_json = all(a.to_json() == m.to_json()
                        for a, m in zip(results[backend], results["model"]))
        match_model = bool(bad_model.size == 0 and same_json)
    match = bool(match_ref and match_model is not False)

    acc_float = float((q.predict_float(x_pix) == y).mean())
    acc_int8 = float((ref.argmax(axis=1) == y).mean())
    acc_backend = float((got.argmax(axis=1) == y).mean())
    res_list = results[backend]
    cycles = sum(int(r.cycles) for r in res_list)
    tile_cycles = N * cycles
    sums = {k: sum(int(t.counters.get(k, 0)) for r in res_list for t in r.tiles)
            for k in ("compute", "sync", "exchange", "halted", "macs", "retired", "engine")}
    useful_macs = images * dg.macs_per_image
    peak = config.peak_macs_per_cycle
    report = {
        "accuracy_float": acc_float, "accuracy_int8": acc_int8, "accuracy_backend": acc_backend,
        "match": match, "images": images, "cycles_per_image": cycles / images,
        "mac_utilization": useful_macs / (peak * tile_cycles),
        "peak_macs_per_cycle_per_tile": peak,
        "matrix_engine": bool(dg.uses_engine),
        "engine_share": sums["engine"] / tile_cycles,
        "backend": backend, "config": config.to_dict(), "runs": runs, "batch": batch,
        "cycles": cycles, "macs": sums["macs"], "useful_macs": useful_macs,
        "compute_share": sums["compute"] / tile_cycles,
        "sync_share": sums["sync"] / tile_cycles,
        "exchange_share": sums["exchange"] / tile_cycles,
        "match_reference": bool(match_ref), "match_model": match_model,
        "mismatches": sorted(set(bad_ref.tolist()) | set(bad_model.tolist())),
        "exchange_phases": [{k: r[k] for k in ("name", "cycles", "cycle_bound", "bound_met")}
                            for r in dg.compiled.exchanges],
        "simulation_seconds": round(sim_s, 2),
        "profile": None,
    }

    out(f"Tessera demo: int8 digits MLP 64-{q.config.hidden}-10 on {N} tiles x "
        f"{config.contexts} contexts ({config.sram_bytes // 1024} KiB), backend {backend}")
    out(f"  test images: {images} of {len(x_te)} (scikit-learn digits, fixed split); "
        f"{runs} run(s) of {batch} images, compiled once")
    out(f"  accuracy   float: {acc_float:.4f}   int8 reference: {acc_int8:.4f}   "
        f"{backend}: {acc_backend:.4f}")
    line = f"  match: {'yes' if match else 'NO'}  (logits == numpy int8 reference: " \
           f"{'yes' if match_ref else f'NO, {bad_ref.size} images'}"
    if match_model is not None:
        line += f"; == golden model: {'yes' if match_model else 'NO'}"
    out(line + ")")
    out(f"  cycles per image: {cycles / images:.1f}   ({cycles} cycles in total)")
    out(f"  MAC utilisation: {report['mac_utilization']:.1%}  ({useful_macs} useful MACs, "
        f"peak {peak} MAC/cycle/tile ({'matrix engine' if dg.uses_engine else 'dot4'}); "
        f"counter {sums['macs']})")
    out(f"  time share: compute {report['compute_share']:.1%}, exchange "
        f"{report['exchange_share']:.2%}, sync {report['sync_share']:.2%}")
    out("  exchange phases per run: " + (", ".join(
        f"{p['name']} {p['cycles']} cycles (bound {p['cycle_bound']})"
        for p in report["exchange_phases"]) or "none (no data crosses tiles)"))
    if not match:
        for i in report["mismatches"][:5]:
            out(f"  mismatch image {i}: {backend} {got[i].tolist()} reference {ref[i].tolist()}")

    if profile:
        from tessera.toolchain.profile import build_profile
        extra = [("images", f"{images} in {runs} run(s) of {batch}"),
                 ("accuracy (float / int8 / backend)",
                  f"{acc_float:.4f} / {acc_int8:.4f} / {acc_backend:.4f}"),
                 ("match", "yes" if match else "NO"),
                 ("cycles per image", f"{cycles / images:.1f}"),
                 ("MAC utilisation (all runs)", f"{report['mac_utilization']:.1%}")]
        prof = build_profile(dg.compiled, res_list[0], first_marks, runs=res_list,
                             title=f"Tessera digits MLP — {N} tiles, {backend} backend "
                                   f"(first run of {runs})", extra_summary=extra)
    else:
        prof = None
    return finish_report(report, prof, out, out_dir=out_dir, json_out=json_out,
                         t_start=t_start, match=match)


def finish_report(report: dict, prof, out, *, out_dir, json_out, t_start: float,
                  match: bool) -> dict:
    """Write the profile (if ``prof``), the wall time and exit code, and the ``--json`` file.

    Raises
    ------
    DemoError
        The profile or the JSON file cannot be written (names the path).
    """
    if prof is not None:
        from tessera.toolchain.profile import write_profile
        try:
            paths = write_profile(prof, Path(out_dir or "build/demo"))
        except OSError as e:
            raise DemoError(f"cannot write the profile to {out_dir or 'build/demo'}: "
                            f"{e.strerror}") from None
        report["profile"] = {k: str(v) for k, v in paths.items()}
        out(f"  profile: {paths['png']}  {paths['html']}  {paths['json']}")
    report["wall_seconds"] = round(time.monotonic() - t_start, 2)
    report["exit_code"] = 0 if match else 3
    if json_out is not None:
        write_output(json_out, json.dumps(report, indent=1, default=float), error=DemoError)
    return report
