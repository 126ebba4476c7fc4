"""``tessera demo`` (``--model cnn``, the default): the digits CNN from ONNX on the array.

1. trains the CNN with numpy on scikit-learn's bundled digits (deterministic, cached), exports it
   to ONNX and quantizes it with onnxruntime's ``quantize_static`` (QDQ, calibrated on the
   training split) — :mod:`tessera.toolchain.models.digits_cnn`, files cached in the user cache;
   by default the 90 % block-sparse :data:`~tessera.toolchain.models.digits_cnn.ARCH_8X8`
   network (``--arch pooled``: the earlier pooled CNN, dense by default);
2. imports the int8 ONNX file with :func:`tessera.toolchain.onnx.import_model` (compiled once);
3. runs the test images on the backend (RTL by default) and compares every output element
   with onnxruntime's CPU session (default options) on the same file; on the ``rtl`` backend
   also with the golden model running the same program (outputs and run-result JSON, so the
   cycles too);
4. for a sparse model (``sparsity > 0``) the dense model of the same layer list
   (:func:`dense_comparison`): its cycles on the same backend for the first ``dense_images``
   images, its accuracy and cycles on the golden model over all the images, and the ratio of
   the cycles per image sparse / dense (issue #14's bar: ≤ 0.2×, accuracy within 2 points);
5. prints accuracy float / onnxruntime int8 / Tessera, the equality, cycles per image, per-layer
   cycles, the comparison, and writes the profile (of the sparse run).

Exit 0 when every output element equals onnxruntime's (and the golden model's), 3 otherwise.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

__all__ = ["run_cnn_demo", "import_dense", "dense_comparison", "sparsity_sweep", "JSON_KEYS", "DENSE_KEYS",
           "DENSE_IMAGES", "DEFAULT_ARCH", "DEFAULT_SPARSITY", "RATIO_BAR", "RATIO_GOAL",
           "ACCURACY_POINTS"]

#: Keys the ``--json`` report always has.
JSON_KEYS = ("accuracy_float", "accuracy_onnxruntime", "accuracy_backend", "match", "images",
             "reference_mismatches", "cycles_per_image", "mac_utilization",
             "peak_macs_per_cycle_per_tile", "compile_seconds")
#: Keys of the report's ``dense`` record (a sparse model's comparison, :func:`dense_comparison`).
DENSE_KEYS = ("onnx_file", "images", "backend", "runs", "samples_per_run", "cycles",
              "cycles_per_run", "cycles_per_image", "match", "reference_mismatches",
              "match_model", "accuracy_float", "accuracy_onnxruntime", "model_all",
              "compile_seconds")
#: ``tessera demo``'s network: the layer list ``digits_cnn.ARCH_8X8`` ("pooled": the pooled CNN).
DEFAULT_ARCH = "8x8"
#: The default block sparsity of the ``8x8`` network (the pooled CNN's default is 0, dense).
DEFAULT_SPARSITY = 0.9
#: Images of the dense model's like-for-like run on the demo's backend: two runs of the dense
#: 8×8 model (1 image per tile on ``small``'s 4 tiles; on the RTL the simulation's SRAM load
#: and read-back through the host port cost more than the two runs' 140 000 cycles).
DENSE_IMAGES = 8
#: Issue #14's figures for the sparse model: cycles per image ≤ RATIO_BAR × dense (goal
#: RATIO_GOAL ×) with the int8 accuracy at most ACCURACY_POINTS points below dense.
RATIO_BAR, RATIO_GOAL, ACCURACY_POINTS = 0.2, 0.12, 2.0


def _arch(arch: str) -> str:
    """The layer list behind ``--arch``: "pooled" (or "") is the default pooled CNN ("")."""
    return "" if arch in ("", "pooled") else arch


def run_cnn_demo(config, *, backend: str = "rtl", images: int = 450, sparsity=None,
                 dense: bool = False, out_dir=None, json_out=None, profile: bool = False,
                 progress: bool = True, samples_per_tile=None, max_cycles: int = 200_000_000,
                 engine: str = "auto", arch: str = DEFAULT_ARCH, dense_images=DENSE_IMAGES,
                 compare_model=None, out=print) -> dict:
    """Run the CNN demo and return its report (see the module docstring).

    Parameters
    ----------
    config : tessera.spec.config.ArrayConfig
    backend : {"rtl", "model"}
    images : int
        The first ``images`` of the 450 test images.
    sparsity : float or None
        0 (dense network) or a block-sparse variant (0.5, 0.75, 0.9); None:
        :data:`DEFAULT_SPARSITY` for the ``8x8`` network, 0 for the others.
    dense : bool
        Force the dense kernels even when the weights have zero blocks.
    out_dir, json_out, profile, progress, max_cycles, out
        As :func:`tessera.demo.run_digits_demo`.
    samples_per_tile : int or None
        Samples per tile per run (default: as many as fit, for the image count).
    engine : {"auto", "dot4"}
        As :func:`tessera.toolchain.onnx.import_model`: the matrix engine when the array has
        one, or the ``dot4`` kernels.
    arch : str
        ``"8x8"`` (default): ``digits_cnn.ARCH_8X8``; ``"pooled"`` (or ``""``): the pooled CNN;
        else a layer list (:func:`cnn_config`).
    dense_images : int
        With ``sparsity > 0``: images (the first ones) of the dense model's run on ``backend``
        (:func:`dense_comparison`), 1..``images``; 0 skips the comparison.
    compare_model : bool or None
        Also run the golden model on the same program and compare outputs and run results
        (default: when the backend is not ``model``).

    Returns
    -------
    dict
        :data:`JSON_KEYS` plus ``backend``, ``config``, ``runs``, ``cycles``, ``cycles_per_run``,
        ``layers``, ``sparse_layers``, ``onnx_file``, ``match_model`` (None if not compared),
        ``dense`` (None, or the :func:`dense_comparison` record), ``profile``,
        ``wall_seconds``, ``exit_code``.

    Raises
    ------
    tessera.cli.demo.DemoError
        ``images`` outside 1..450, ``dense_images`` outside 0..``images``, an unknown
        sparsity, a model that does not fit the tiles (names the model, tensor and tile).
    """
    from tessera.backends import get as get_backend
    from tessera.cli.demo import DemoError, _progress, finish_report
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import load_digits_cnn, pixels_to_input
    from tessera.toolchain.onnx import compare_outputs, import_model, reference_outputs
    from tessera.toolchain.onnx.cli import sparse_block
    from tessera.toolchain.onnx.errors import ModelMemoryError

    t_start = time.monotonic()
    _, x_te, _, y_te = load_digits_split()
    if not isinstance(images, int) or isinstance(images, bool) or not 1 <= images <= len(x_te):
        raise DemoError(f"--images must be in 1..{len(x_te)} (the test split), not {images!r}")
    arch = _arch(arch)
    if sparsity is None:
        sparsity = DEFAULT_SPARSITY if arch == "8x8" else 0.0
    if not 0.0 <= float(sparsity) < 1.0:
        raise DemoError(f"--sparsity must be in [0, 1), not {sparsity!r}")
    if not isinstance(dense_images, int) or isinstance(dense_images, bool) or \
            not 0 <= dense_images <= images:
        raise DemoError(f"--dense-images must be in 0..{images} (--images), not "
                        f"{dense_images!r}")
    if compare_model is None:
        compare_model = backend != "model"
    get_backend(backend)
    cnn = load_digits_cnn(cnn_config(sparsity, arch))
    x = pixels_to_input(x_te[:images])
    y = y_te[:images]
    ref = reference_outputs(str(cnn.int8_path), {"x": x})["logits"]
    t0 = time.monotonic()
    what = "the " + ("dense" if not sparsity else f"{sparsity:.0%} block-sparse") + " model"
    try:
        prog = import_model(str(cnn.int8_path), config, samples_per_tile=samples_per_tile,
                            sparse="dense" if dense else "auto", batch_hint=images,
                            engine=engine)
    except ModelMemoryError as e:
        raise DemoError(f"{what} ({cnn.int8_path.name}) does not fit {config.tiles} tile(s) "
                        f"of {config.sram_bytes // 1024} KiB: {e}") from None
    compile_s = time.monotonic() - t0
    dense_prog = None
    if sparsity and dense_images:       # a dense model that does not fit: before any run
        dense_prog = import_dense(config, arch=arch, images=images, engine=engine)
    with _progress(progress) as bar:
        task = bar.add_task(f"digits CNN on {backend} ({config.tiles} tiles)", total=images)
        run = prog.run({"x": x}, backend=backend, max_cycles=max_cycles,
                       progress=lambda done, total: bar.update(task, completed=done))
    got = run.outputs["logits"]
    cmp = compare_outputs({"logits": got}, {"logits": ref})
    rep = run.report
    match_model, model_rep = None, None
    if compare_model and backend != "model":
        mrun = prog.run({"x": x}, backend="model", max_cycles=max_cycles)
        model_rep = mrun.report
        match_model = bool(np.array_equal(mrun.outputs["logits"], got) and all(
            a.to_json() == m.to_json() for a, m in zip(run.results, mrun.results)))
    acc_float = float((cnn.float_model.predict(x) == y).mean())
    acc_ort = float((ref.argmax(axis=1) == y).mean())
    acc_be = float((got.argmax(axis=1) == y).mean())
    match = cmp["reference_mismatches"] == 0 and match_model is not False
    bad_images = sorted(set(np.nonzero(~np.all(got == ref, axis=1))[0].tolist()))
    sparse_layers = [{"name": l["name"], **l["sparse"]} for l in rep["layers"] if l.get("sparse")]
    report = {
        "accuracy_float": acc_float, "accuracy_onnxruntime": acc_ort, "accuracy_backend": acc_be,
        "match": bool(match), "images": images,
        "reference_mismatches": cmp["reference_mismatches"],
        "reference_max_abs_diff": cmp["reference_max_abs_diff"],
        "cycles_per_image": rep["cycles"] / images, "mac_utilization": rep["mac_utilization"],
        "peak_macs_per_cycle_per_tile": rep["peak_macs_per_cycle_per_tile"],
        "compile_seconds": round(compile_s, 3), "backend": backend, "config": config.to_dict(),
        "runs": rep["runs"], "samples_per_run": rep["samples_per_run"],
        "samples_per_tile": rep["samples_per_tile"], "cycles": rep["cycles"],
        "cycles_per_run": rep["cycles_per_run"], "match_model": match_model,
        "layers": rep["layers"], "sparsity": float(sparsity), "engine": engine,
        "sparse_layers": sparse_layers,
        "mismatched_images": bad_images, "onnx_file": str(cnn.int8_path),
        "arch": cnn.config.arch,
        "simulation_seconds": rep["simulation_seconds"], "dense": None, "profile": None,
    }
    kind = ("dense" if not sparsity else f"{sparsity:.0%} block-sparse") + (
        f", layers {cnn.config.arch}" if cnn.config.arch else "")
    out(f"Tessera demo: int8 digits CNN from ONNX ({kind}; quantize_static QDQ) on "
        f"{config.tiles} tiles x {config.contexts} contexts, backend {backend}")
    out(f"  model: {cnn.int8_path}  (import + compile {compile_s:.2f} s)")
    out(f"  test images: {images} of {len(x_te)}; {rep['runs']} run(s) of "
        f"{rep['samples_per_run']} images, compiled once")
    out(f"  accuracy   float: {acc_float:.4f}   onnxruntime int8: {acc_ort:.4f}   "
        f"{backend}: {acc_be:.4f}")
    line = (f"  match: {'yes' if match else 'NO'}  (outputs == onnxruntime CPU session: "
            f"{got.size - cmp['reference_mismatches']}/{got.size} elements"
            + ("" if not bad_images else f", images {bad_images[:8]}"))
    if match_model is not None:
        line += f"; == golden model (outputs, cycles, counters): {'yes' if match_model else 'NO'}"
    out(line + ")")
    util = (f"MAC utilisation: {rep['mac_utilization']:.1%} of the peak "
            f"({rep['peak_macs_per_cycle_per_tile']} MACs/cycle/tile")
    util += (f"; the stored blocks' MACs; dense-equivalent "
             f"{rep['dense_equivalent_mac_utilization']:.1%})" if sparse_layers else ")")
    out(f"  cycles per image: {rep['cycles'] / images:.1f}   ({rep['cycles']} cycles in total)   "
        + util)
    out("  layer cycles: " + ", ".join(f"{l['name']} {l['cycles'] or 0}" + (
        f" [block-sparse {sparse_block(l['sparse'])}, {l['sparse']['density']:.0%} of blocks]"
        if l.get("sparse") else "") for l in rep["layers"])
        + f"  (first run, {rep['samples_per_run']} images; "
        + ("matrix engine" if config.engine_macs and engine == "auto" else "dot4") + ")")
    if sparsity and dense_images:
        d = dense_comparison(config, arch=arch, backend=backend, images=images,
                             dense_images=dense_images, engine=engine, max_cycles=max_cycles,
                             program=dense_prog)
        report["dense"] = d
        report.update(_ratios(report, d, model_rep if model_rep is not None else rep))
        match = match and d["match"] and d["match_model"] is not False and \
            d["model_all"]["match"]
        report["match"] = bool(match)
        _print_comparison(report, d, backend, out)
    if profile:
        from tessera.toolchain.profile import build_profile
        marks = run.marks
        extra = [("images", f"{images} in {rep['runs']} run(s)"),
                 ("accuracy (float / onnxruntime / backend)",
                  f"{acc_float:.4f} / {acc_ort:.4f} / {acc_be:.4f}"),
                 ("match onnxruntime", "yes" if match else "NO"),
                 ("cycles per image", f"{rep['cycles'] / images:.1f}")]
        if report["dense"] is not None:
            dd = report["dense"]
            extra += [("dense model: cycles per image",
                       f"{dd['cycles_per_image']:.1f} ({backend}, first {dd['images']} images); "
                       f"{dd['model_all']['cycles_per_image']:.1f} (golden model, all "
                       f"{dd['model_all']['images']})"),
                      ("dense model: accuracy (onnxruntime int8)",
                       f"{dd['accuracy_onnxruntime']:.4f}"),
                      ("cycles vs dense", f"{report['cycles_ratio']:.3f}x ({backend}); "
                       f"{report['cycles_ratio_model_all']:.3f}x (golden model, all images)")]
        prof = build_profile(prog.compiled, run.results[0], marks, runs=run.results,
                             title=f"Tessera digits CNN (ONNX) — {config.tiles} tiles, {backend} "
                                   f"backend (first run of {rep['runs']})", extra_summary=extra)
    else:
        prof = None
    return finish_report(report, prof, out, out_dir=out_dir, json_out=json_out,
                         t_start=t_start, match=match)


def import_dense(config, *, arch: str = DEFAULT_ARCH, images: int = 450,
                 engine: str = "auto"):
    """The dense model of ``arch``, imported as the demo imports the sparse one (its own
    samples per tile: as many as fit, ``batch_hint = images``).

    Returns
    -------
    tessera.toolchain.onnx.OnnxProgram

    Raises
    ------
    tessera.cli.demo.DemoError
        It does not fit the tiles (names the file and says ``--dense-images 0`` skips the
        comparison; the importer's message names the tensor, tile and bytes).
    """
    from tessera.cli.demo import DemoError
    from tessera.toolchain.models.digits_cnn import load_digits_cnn
    from tessera.toolchain.onnx import import_model
    from tessera.toolchain.onnx.errors import ModelMemoryError
    cnn = load_digits_cnn(cnn_config(0.0, _arch(arch)))
    try:
        return import_model(str(cnn.int8_path), config, batch_hint=images, engine=engine)
    except ModelMemoryError as e:
        raise DemoError(f"the dense model for the comparison ({cnn.int8_path.name}) does not "
                        f"fit {config.tiles} tile(s) of {config.sram_bytes // 1024} KiB "
                        f"(--dense-images 0 skips the comparison): {e}") from None


def dense_comparison(config, *, arch: str = DEFAULT_ARCH, backend: str = "rtl",
                     images: int = 450, dense_images: int = DENSE_IMAGES,
                     engine: str = "auto", max_cycles: int = 200_000_000,
                     program=None) -> dict:
    """The dense model of a sparse demo: cycles like for like on the backend, accuracy.

    The dense model (``sparsity`` 0, same layer list ``arch``) is imported as the demo imports
    the sparse one (its own samples per tile: as many as fit, ``batch_hint = images``) and
    runs the first ``dense_images`` test images on ``backend``; every output element is
    compared with onnxruntime, and on the ``rtl`` backend the run results (cycles, counters)
    with the golden model's on the same images. The golden model then runs all ``images``:
    the dense accuracy and cycles per image over the whole set. The sample's cycles per image
    stand for the whole set's only up to the data-dependent software layers (the input
    ``QuantizeLinear``'s threshold search; the engine layers' cycles depend on the shapes
    alone, ``tests/test_demo_sparse.py``): ``model_all`` says by how much.

    Parameters
    ----------
    config : tessera.spec.config.ArrayConfig
    arch : str
        As :func:`run_cnn_demo`.
    backend : {"rtl", "model"}
    images : int
        The demo's images (the first ``images`` of the 450 test images).
    dense_images : int
        Images of the run on ``backend``, 1..``images``.
    engine : {"auto", "dot4"}
    max_cycles : int
        Cycle limit per run.
    program : tessera.toolchain.onnx.OnnxProgram or None
        The dense model from :func:`import_dense` (default: imported here).

    Returns
    -------
    dict
        :data:`DENSE_KEYS`: ``cycles_per_image`` (the ``backend`` run, cycles / images),
        ``cycles_per_run``, ``match`` (== onnxruntime), ``match_model`` (the ``rtl`` run's
        results == the golden model's; None on ``model``), ``accuracy_onnxruntime`` and
        ``accuracy_float`` over all ``images``, ``model_all`` (golden model over all
        ``images``: ``images``, ``runs``, ``cycles``, ``cycles_per_image``,
        ``cycles_per_run_min`` / ``_max``, ``accuracy``, ``match``).

    Raises
    ------
    tessera.cli.demo.DemoError
        The dense model does not fit the tiles (the message names it and says
        ``--dense-images 0`` skips the comparison).
    """
    from tessera.cli.demo import DemoError
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import load_digits_cnn, pixels_to_input
    from tessera.toolchain.onnx import compare_outputs, reference_outputs
    _, x_te, _, y_te = load_digits_split()
    if not isinstance(dense_images, int) or isinstance(dense_images, bool) or \
            not 1 <= dense_images <= images:
        raise DemoError(f"--dense-images must be in 1..{images} (--images) for the "
                        f"comparison, not {dense_images!r}")
    x, y = pixels_to_input(x_te[:images]), y_te[:images]
    cnn = load_digits_cnn(cnn_config(0.0, _arch(arch)))
    ref = reference_outputs(str(cnn.int8_path), {"x": x})["logits"]
    prog = program if program is not None else \
        import_dense(config, arch=arch, images=images, engine=engine)
    compile_s = prog.compile_seconds
    xs = x[:dense_images]
    run = prog.run({"x": xs}, backend=backend, max_cycles=max_cycles)
    cmp = compare_outputs(run.outputs, {"logits": ref[:dense_images]})
    match_model = None
    if backend != "model":
        mrun = prog.run({"x": xs}, backend="model", max_cycles=max_cycles)
        match_model = bool(np.array_equal(mrun.outputs["logits"], run.outputs["logits"]) and all(
            a.to_json() == m.to_json() for a, m in zip(run.results, mrun.results)))
    allrun = prog.run({"x": x}, backend="model", max_cycles=max_cycles)
    all_got = allrun.outputs["logits"]
    rep, arep = run.report, allrun.report
    return {
        "onnx_file": str(cnn.int8_path), "images": dense_images, "backend": backend,
        "runs": rep["runs"], "samples_per_run": rep["samples_per_run"],
        "samples_per_tile": rep["samples_per_tile"], "cycles": rep["cycles"],
        "cycles_per_run": rep["cycles_per_run"],
        "cycles_per_image": rep["cycles"] / dense_images,
        "match": cmp["reference_mismatches"] == 0,
        "reference_mismatches": cmp["reference_mismatches"], "match_model": match_model,
        "accuracy_float": float((cnn.float_model.predict(x) == y).mean()),
        "accuracy_onnxruntime": float((ref.argmax(axis=1) == y).mean()),
        "layers": [{"name": l["name"], "cycles": l["cycles"]} for l in rep["layers"]],
        "model_all": {
            "images": images, "runs": arep["runs"], "cycles": arep["cycles"],
            "cycles_per_image": arep["cycles"] / images,
            "cycles_per_run_min": min(arep["cycles_per_run"]),
            "cycles_per_run_max": max(arep["cycles_per_run"]),
            "accuracy": float((all_got.argmax(axis=1) == y).mean()),
            "match": bool(np.array_equal(all_got, ref))},
        "compile_seconds": round(compile_s, 3),
        "simulation_seconds": rep["simulation_seconds"],
    }


def _ratios(report: dict, d: dict, model_rep: dict) -> dict:
    """The comparison figures of the report: sparse / dense cycles per image on the backend
    (all images / the dense sample) and on the golden model (all images each), the accuracy
    drop in points (onnxruntime int8, all images) and issue #14's bar and goal."""
    n = report["images"]
    ratio = report["cycles_per_image"] / d["cycles_per_image"]
    ratio_all = (model_rep["cycles"] / n) / d["model_all"]["cycles_per_image"]
    drop = 100.0 * (d["accuracy_onnxruntime"] - report["accuracy_onnxruntime"])
    acc_ok = drop <= ACCURACY_POINTS
    return {"cycles_ratio": ratio, "cycles_ratio_model_all": ratio_all,
            "accuracy_drop_points": drop,
            "bar": {"cycles_ratio": RATIO_BAR, "goal_cycles_ratio": RATIO_GOAL,
                    "accuracy_points": ACCURACY_POINTS,
                    "met": bool(ratio <= RATIO_BAR and acc_ok),
                    "goal_met": bool(ratio <= RATIO_GOAL and acc_ok)}}


def _print_comparison(report: dict, d: dict, backend: str, out) -> None:
    a = d["model_all"]
    out(f"  dense model: {d['onnx_file']}  (import + compile {d['compile_seconds']:.2f} s; "
        f"{d['samples_per_tile']} image(s) per tile)")
    out(f"  dense accuracy   float: {d['accuracy_float']:.4f}   onnxruntime int8: "
        f"{d['accuracy_onnxruntime']:.4f}   golden model: {a['accuracy']:.4f}  "
        f"(all {a['images']} images; outputs == onnxruntime: {'yes' if a['match'] else 'NO'})")
    same = "" if d["match_model"] is None else \
        f"; == golden model: {'yes' if d['match_model'] else 'NO'}"
    out(f"  dense cycles per image: {d['cycles_per_image']:.1f} on {backend} (the first "
        f"{d['images']} images: {d['runs']} run(s) of {d['samples_per_run']}; outputs == "
        f"onnxruntime: {'yes' if d['match'] else 'NO'}{same})   {a['cycles_per_image']:.1f} on "
        f"the golden model (all {a['images']}: {a['runs']} runs of "
        f"{a['cycles_per_run_min']}..{a['cycles_per_run_max']} cycles; the input "
        f"quantization's cycles depend on the data)")
    out(f"  sparse vs dense: {report['cycles_ratio']:.3f}x cycles per image ({backend}: "
        f"{report['cycles_per_image']:.1f} / {d['cycles_per_image']:.1f}; golden model, all "
        f"{a['images']} images each: {report['cycles_ratio_model_all']:.3f}x)   accuracy "
        f"{report['accuracy_onnxruntime']:.4f} vs {d['accuracy_onnxruntime']:.4f} "
        f"({-report['accuracy_drop_points']:+.2f} points, onnxruntime int8)")
    b = report["bar"]
    out(f"  bar: cycles <= {b['cycles_ratio']}x of dense with accuracy within "
        f"{b['accuracy_points']:g} points: {'met' if b['met'] else 'NOT met'}; goal <= "
        f"{b['goal_cycles_ratio']}x: {'met' if b['goal_met'] else 'not met'}  (each model "
        f"at the images per tile that fit it: {report['samples_per_tile']} sparse, "
        f"{d['samples_per_tile']} dense)")


def cnn_config(sparsity: float = 0.0, arch: str = ""):
    """The demo's :class:`~tessera.toolchain.models.digits_cnn.CnnConfig`: the pooled CNN
    (``arch`` "pooled" or ""), :func:`~tessera.toolchain.models.digits_cnn.arch_config` of
    ``ARCH_8X8`` (``arch`` "8x8") or of another layer list.

    Raises
    ------
    tessera.cli.demo.DemoError
        A malformed layer list (the parser's message).
    """
    from tessera.cli.demo import DemoError
    from tessera.toolchain.models.digits_cnn import ARCH_8X8, CnnConfig, arch_config
    arch = _arch(arch)
    if not arch:
        return CnnConfig(sparsity=float(sparsity))
    try:
        return arch_config(sparsity, ARCH_8X8 if arch == "8x8" else arch)
    except ValueError as e:
        raise DemoError(f"--arch: {e}") from None


def _pruned_names(cnn) -> list:
    """Layer names of the pruned convolutions: conv2, or the ``*`` layers of the layer list."""
    layers = cnn.config.layers()
    if layers is None:
        return ["conv2"]
    return ["fc" if i == len(layers) - 1 else f"conv{i + 1}"
            for i, lay in enumerate(layers) if lay.pruned]


def sparsity_sweep(config, *, backend: str = "model", images: int = 16, out_dir=None,
                   sparsities=(0.0, 0.5, 0.75, 0.9), engine: str = "auto", arch: str = "",
                   out=print) -> dict:
    """Accuracy and cycles of the dense and block-sparse CNN variants, dense vs sparse kernels.

    For each sparsity: float and onnxruntime int8 accuracy on all 450 test images; Tessera runs
    ``images`` test images twice (``sparse="auto"``: the block-sparse kernels where the weights
    have zero blocks; ``sparse="dense"``: dense kernels) and must equal onnxruntime on every
    element; cycles per image, the convolution layers' cycles, the pruned layers' cycles (conv2,
    or with ``arch`` the layer list's ``*`` layers; keys ``conv2_*``) and their matmul steps
    (first run; the plot scales it to cycles per image with the run count). All
    runs use the same samples per tile (``ceil(images / tiles)``, or the largest smaller
    number at which the dense model fits the SRAM), so the cycle counts compare like for like;
    ``sparse_kernels_auto_batch`` / ``dense_model_auto_batch`` are the sparse kernels' and the
    dense model's cycles per image with the importer's own samples per tile (as many as fit:
    the block-sparse weights store only their stored blocks, so more images may fit) and
    ``cycles_ratio_auto_batch`` their ratio. ``engine`` as :func:`run_cnn_demo`. Writes
    ``sparsity.json`` and ``sparsity.png`` (accuracy and cycles against sparsity) to
    ``out_dir`` (default ``build/demo``).

    Returns
    -------
    dict
        ``rows`` (one per sparsity) and ``files``.
    """
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import load_digits_cnn, pixels_to_input
    from tessera.toolchain.onnx import compare_outputs, import_model, reference_outputs
    from tessera.toolchain.onnx.errors import ModelMemoryError
    _, x_te, _, y_te = load_digits_split()
    x_all = pixels_to_input(x_te)
    rows = []
    spt = -(-images // config.tiles)
    dense_path = str(load_digits_cnn(cnn_config(0.0, arch)).int8_path)
    while True:
        try:
            import_model(dense_path, config, engine=engine, samples_per_tile=spt)
            break
        except ModelMemoryError:
            if spt == 1:
                raise
            spt -= 1
    dense_auto = None
    for sp in sparsities:
        cnn = load_digits_cnn(cnn_config(sp, arch))
        pruned = _pruned_names(cnn)
        ref = reference_outputs(str(cnn.int8_path), {"x": x_all})["logits"]
        row = {"sparsity": float(sp),
               "accuracy_float": float((cnn.float_model.predict(x_all) == y_te).mean()),
               "accuracy_onnxruntime": float((ref.argmax(axis=1) == y_te).mean())}
        for mode in ("auto", "dense"):
            prog = import_model(str(cnn.int8_path), config, sparse=mode, engine=engine,
                                samples_per_tile=spt)
            run = prog.run({"x": x_all[:images]}, backend=backend)
            cmp = compare_outputs(run.outputs, {"logits": ref[:images]})
            pl = [l for l in run.report["layers"] if l["name"].split("+")[0] in pruned]
            convs = sum(l["cycles"] for l in run.report["layers"] if l["kind"] == "conv")
            key = "sparse_kernels" if mode == "auto" else "dense_kernels"
            row[key] = {"cycles_per_image": run.report["cycles"] / images, "runs": run.report["runs"],
                        "conv_cycles": convs, "steps": {l["name"]: l["steps"]
                                                        for l in run.report["layers"]},
                        "conv2_cycles": sum(l["cycles"] for l in pl),
                        "conv2_matmul_cycles": sum(l["steps"]["mm"] for l in pl),
                        "reference_mismatches": cmp["reference_mismatches"],
                        "sparse_layers": [{"name": l["name"], **l["sparse"]}
                                          for l in run.report["layers"] if l.get("sparse")]}
        auto = import_model(str(cnn.int8_path), config, engine=engine, batch_hint=images)
        arun = auto.run({"x": x_all[:images]}, backend=backend)
        if compare_outputs(arun.outputs, {"logits": ref[:images]})["reference_mismatches"]:
            row["sparse_kernels"]["reference_mismatches"] += 1
        row["sparse_kernels_auto_batch"] = {"cycles_per_image": arun.report["cycles"] / images,
                                            "samples_per_tile": auto.lowered.samples}
        if sp == 0:
            dense_auto = row["sparse_kernels_auto_batch"]["cycles_per_image"]
        row["dense_model_auto_batch"] = dense_auto
        row["cycles_ratio_auto_batch"] = (row["sparse_kernels_auto_batch"]["cycles_per_image"]
                                          / dense_auto if dense_auto else None)
        d, s_ = row["dense_kernels"], row["sparse_kernels"]
        row["cycles_ratio"] = s_["cycles_per_image"] / d["cycles_per_image"]
        row["conv2_matmul_ratio"] = s_["conv2_matmul_cycles"] / d["conv2_matmul_cycles"]
        row["conv_ratio"] = s_["conv_cycles"] / d["conv_cycles"]
        row["conv2_ratio"] = s_["conv2_cycles"] / d["conv2_cycles"]
        rows.append(row)
        out(f"  sparsity {sp:4.0%}: accuracy float {row['accuracy_float']:.4f} onnxruntime "
            f"{row['accuracy_onnxruntime']:.4f}; cycles/image dense kernels "
            f"{d['cycles_per_image']:.0f}, sparse kernels {s_['cycles_per_image']:.0f} "
            f"({row['cycles_ratio']:.2f}x; conv layers {row['conv_ratio']:.2f}x, {'+'.join(pruned)} "
            f"{row['conv2_ratio']:.2f}x, their matmul {row['conv2_matmul_ratio']:.2f}x); "
            f"mismatches vs onnxruntime {d['reference_mismatches']} / {s_['reference_mismatches']}"
            f"; {spt} image(s) per tile; importer's own batch: "
            f"{row['sparse_kernels_auto_batch']['cycles_per_image']:.0f} cycles/image "
            f"({row['sparse_kernels_auto_batch']['samples_per_tile']} per tile"
            + (f", {row['cycles_ratio_auto_batch']:.3f}x of the dense model's "
               f"{dense_auto:.0f})" if dense_auto else ")"))
    odir = Path(out_dir or "build/demo")
    odir.mkdir(parents=True, exist_ok=True)
    (odir / "sparsity.json").write_text(json.dumps({"backend": backend, "images": images,
                                                    "engine": engine, "arch": arch,
                                                    "samples_per_tile": spt,
                                                    "config": config.to_dict(), "rows": rows},
                                                   indent=1))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sps = [100 * r["sparsity"] for r in rows]
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(10, 4))
    a1.plot(sps, [100 * r["accuracy_float"] for r in rows], "o-", label="float")
    a1.plot(sps, [100 * r["accuracy_onnxruntime"] for r in rows], "s--",
            label="int8 (onnxruntime = Tessera)")
    what = "+".join(pruned)
    a1.set_xlabel(f"{what} block sparsity (%)")
    a1.set_ylabel("test accuracy (%, 450 images)")
    a1.legend()
    a1.grid(alpha=.3)
    for key, lab, st in (("dense_kernels", "dense kernels", "o-"),
                         ("sparse_kernels", "block-sparse kernels", "s-")):
        a2.plot(sps, [r[key]["cycles_per_image"] for r in rows], st, label=f"{lab}: network")
        a2.plot(sps, [r[key]["conv2_matmul_cycles"] * r[key]["runs"] / images for r in rows],
                st.replace("-", ":"), label=f"{lab}: {what} matmul")
    a2.plot(sps, [r["sparse_kernels_auto_batch"]["cycles_per_image"] for r in rows], "^--",
            label="block-sparse kernels: network, own batch")
    a2.set_xlabel(f"{what} block sparsity (%)")
    a2.set_ylabel(f"cycles per image ({config.tiles} tiles, {backend})")
    a2.set_ylim(bottom=0)
    a2.legend(fontsize=8)
    a2.grid(alpha=.3)
    fig.suptitle("Tessera digits CNN from ONNX: block sparsity")
    fig.tight_layout()
    fig.savefig(odir / "sparsity.png", dpi=110)
    plt.close(fig)
    files = {"json": str(odir / "sparsity.json"), "png": str(odir / "sparsity.png")}
    out(f"  wrote {files['png']}  {files['json']}")
    return {"rows": rows, "files": files}
