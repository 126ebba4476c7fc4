"""``tessera demo --model cnn``: the digits CNN from ONNX on the array.

1. trains the CNN with numpy on scikit-learn's bundled digits (deterministic, cached), exports it
   to ONNX and quantizes it with onnxruntime's ``quantize_static`` (QDQ, calibrated on the
   training split) — :mod:`tessera.toolchain.models.digits_cnn`, files cached in the user cache;
2. imports the int8 ONNX file with :func:`tessera.toolchain.onnx.import_model` (compiled once);
3. runs the test images on the backend (RTL by default) and compares every output element
   with onnxruntime's CPU session (default options) on the same file;
4. prints accuracy float / onnxruntime int8 / Tessera, the equality, cycles per image, per-layer
   cycles, and writes the profile.

Exit 0 when every output element equals onnxruntime's, 3 otherwise.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

__all__ = ["run_cnn_demo", "sparsity_sweep", "JSON_KEYS"]

#: Keys the ``--json`` report always has.
JSON_KEYS = ("accuracy_float", "accuracy_onnxruntime", "accuracy_backend", "match", "images",
             "reference_mismatches", "cycles_per_image", "mac_utilization",
             "peak_macs_per_cycle_per_tile", "compile_seconds")


def run_cnn_demo(config, *, backend: str = "rtl", images: int = 450, sparsity: float = 0.0,
                 dense: bool = False, out_dir=None, json_out=None, profile: bool = False,
                 progress: bool = True, samples_per_tile=None, max_cycles: int = 200_000_000,
                 engine: str = "auto", arch: str = "", out=print) -> dict:
    """Run the CNN demo and return its report (see the module docstring).

    Parameters
    ----------
    config : tessera.spec.config.ArrayConfig
    backend : {"rtl", "model"}
    images : int
        The first ``images`` of the 450 test images.
    sparsity : float
        0 (dense network) or a block-sparse variant (0.5, 0.75, 0.9).
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
        ``""``: the default CNN; else a layer list (:func:`cnn_config`).

    Returns
    -------
    dict
        :data:`JSON_KEYS` plus ``backend``, ``config``, ``runs``, ``cycles``, ``layers``,
        ``sparse_layers``, ``onnx_file``, ``profile``, ``wall_seconds``, ``exit_code``.

    Raises
    ------
    ValueError
        ``images`` outside 1..450 or an unknown sparsity.
    """
    from tessera.backends import get as get_backend
    from tessera.cli.demo import DemoError, _progress, finish_report
    from tessera.toolchain.models.digits import load_digits_split
    from tessera.toolchain.models.digits_cnn import load_digits_cnn, pixels_to_input
    from tessera.toolchain.onnx import compare_outputs, import_model, reference_outputs
    from tessera.toolchain.onnx.cli import sparse_block

    t_start = time.monotonic()
    _, x_te, _, y_te = load_digits_split()
    if not isinstance(images, int) or isinstance(images, bool) or not 1 <= images <= len(x_te):
        raise DemoError(f"--images must be in 1..{len(x_te)} (the test split), not {images!r}")
    if not 0.0 <= float(sparsity) < 1.0:
        raise DemoError(f"--sparsity must be in [0, 1), not {sparsity!r}")
    get_backend(backend)
    cnn = load_digits_cnn(cnn_config(sparsity, arch))
    x = pixels_to_input(x_te[:images])
    y = y_te[:images]
    ref = reference_outputs(str(cnn.int8_path), {"x": x})["logits"]
    t0 = time.monotonic()
    prog = import_model(str(cnn.int8_path), config, samples_per_tile=samples_per_tile,
                        sparse="dense" if dense else "auto", batch_hint=images, engine=engine)
    compile_s = time.monotonic() - t0
    with _progress(progress) as bar:
        task = bar.add_task(f"digits CNN on {backend} ({config.tiles} tiles)", total=images)
        run = prog.run({"x": x}, backend=backend, max_cycles=max_cycles,
                       progress=lambda done, total: bar.update(task, completed=done))
    got = run.outputs["logits"]
    cmp = compare_outputs({"logits": got}, {"logits": ref})
    rep = run.report
    acc_float = float((cnn.float_model.predict(x) == y).mean())
    acc_ort = float((ref.argmax(axis=1) == y).mean())
    acc_be = float((got.argmax(axis=1) == y).mean())
    match = cmp["reference_mismatches"] == 0
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
        "runs": rep["runs"], "samples_per_run": rep["samples_per_run"], "cycles": rep["cycles"],
        "layers": rep["layers"], "sparsity": float(sparsity), "engine": engine, "sparse_layers": sparse_layers,
        "mismatched_images": bad_images, "onnx_file": str(cnn.int8_path),
        "arch": cnn.config.arch,
        "simulation_seconds": rep["simulation_seconds"], "profile": None,
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
    out(f"  match: {'yes' if match else 'NO'}  (outputs == onnxruntime CPU session: "
        f"{got.size - cmp['reference_mismatches']}/{got.size} elements"
        + ("" if match else f", images {bad_images[:8]}") + ")")
    out(f"  cycles per image: {rep['cycles'] / images:.1f}   ({rep['cycles']} cycles in total)   "
        f"MAC utilisation: {rep['mac_utilization']:.1%} of the peak "
        f"({rep['peak_macs_per_cycle_per_tile']} MACs/cycle/tile)")
    out("  layer cycles: " + ", ".join(f"{l['name']} {l['cycles'] or 0}" + (
        f" [block-sparse {sparse_block(l['sparse'])}, {l['sparse']['density']:.0%} of blocks]"
        if l.get("sparse") else "") for l in rep["layers"])
        + f"  (first run, {rep['samples_per_run']} images; "
        + ("matrix engine" if config.engine_macs and engine == "auto" else "dot4") + ")")
    if profile:
        from tessera.toolchain.profile import build_profile
        marks = run.marks
        extra = [("images", f"{images} in {rep['runs']} run(s)"),
                 ("accuracy (float / onnxruntime / backend)",
                  f"{acc_float:.4f} / {acc_ort:.4f} / {acc_be:.4f}"),
                 ("match onnxruntime", "yes" if match else "NO"),
                 ("cycles per image", f"{rep['cycles'] / images:.1f}")]
        prof = build_profile(prog.compiled, run.results[0], marks, runs=run.results,
                             title=f"Tessera digits CNN (ONNX) — {config.tiles} tiles, {backend} "
                                   f"backend (first run of {rep['runs']})", extra_summary=extra)
    else:
        prof = None
    return finish_report(report, prof, out, out_dir=out_dir, json_out=json_out,
                         t_start=t_start, match=match)


def cnn_config(sparsity: float = 0.0, arch: str = ""):
    """The demo's :class:`~tessera.toolchain.models.digits_cnn.CnnConfig`: the default CNN
    (``arch`` ""), :func:`~tessera.toolchain.models.digits_cnn.arch_config` of ``ARCH_8X8``
    (``arch`` "8x8") or of another layer list.

    Raises
    ------
    tessera.cli.demo.DemoError
        A malformed layer list (the parser's message).
    """
    from tessera.cli.demo import DemoError
    from tessera.toolchain.models.digits_cnn import ARCH_8X8, CnnConfig, arch_config
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
