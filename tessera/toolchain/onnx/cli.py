"""``tessera onnx MODEL.onnx --inputs IN.npz --out OUT.npz ...`` (docs/compiler.md, "ONNX importer").

Exit status: 0 ok, 2 bad input (file, model, inputs, memory; one line on stderr, nothing ran),
3 mismatch (``--backend both``: RTL ≠ golden model; ``--reference``: any output element differs
from onnxruntime).
"""

from __future__ import annotations

import json
import sys
import time
import zipfile

import numpy as np

__all__ = ["add_arguments", "run_cli", "EXIT_OK", "EXIT_USAGE", "EXIT_MISMATCH"]

EXIT_OK, EXIT_USAGE, EXIT_MISMATCH = 0, 2, 3


def add_arguments(p) -> None:
    """The ``tessera onnx`` options (array options come from the CLI's shared helper)."""
    p.add_argument("model", metavar="MODEL.onnx", help="the ONNX model")
    p.add_argument("--inputs", required=True, metavar="IN.npz",
                   help="inputs keyed by the model's input names (dtype as declared, batch in "
                        "the first axis)")
    p.add_argument("--out", required=True, metavar="OUT.npz",
                   help="write the outputs here, keyed by the model's output names")
    p.add_argument("--profile", metavar="DIR",
                   help="write profile.png / profile.html / profile.json of the first run")
    p.add_argument("--reference", action="store_true",
                   help="compare with onnxruntime (CPU, default session options); exit 3 if any "
                        "output element differs")
    p.add_argument("--dense", action="store_true",
                   help="force the dense kernels (no block-sparse detection)")
    p.add_argument("--dot4", action="store_true",
                   help="run the matmuls on the dot4 kernels even when the array has a matrix "
                        "engine (engine_macs > 0), for comparison")
    p.add_argument("--samples-per-tile", type=int, default=None, metavar="S",
                   help="samples each tile processes per run (default: as many as fit)")


def _load_npz(path):
    from .errors import InputError
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except FileNotFoundError:
        raise InputError(f"--inputs {path}: no such file") from None
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise InputError(f"--inputs {path}: not a readable .npz file ({e})") from None


def sparse_block(s: dict) -> str:
    """A layer's ``sparse`` entry's block as text: ``4x4`` (dot4 kernels, square blocks) or
    ``8x4`` (the engine: 8 rows of K by ``block_channels`` output channels)."""
    return f"{s['block_size']}x{s.get('block_channels', s['block_size'])}"


def format_report(r: dict) -> str:
    lines = [f"Tessera onnx: {r['model']} on {r['config']['tiles']} tiles x "
             f"{r['config']['contexts']} contexts, backend {r['backend']}",
             f"  batch {r['batch']} in {r['runs']} run(s) of {r['samples_per_run']} "
             f"({r['samples_per_tile']} per tile); compile {r['compile_seconds']:.2f} s",
             f"  cycles {r['cycles']} ({r['cycles_per_sample']:.1f} per sample), MAC "
             f"utilisation {r['mac_utilization']:.1%}"]
    for l in r["layers"]:
        sp = ""
        if l.get("sparse"):
            s = l["sparse"]
            sp = f"  block-sparse {sparse_block(s)}, {s['density']:.0%} blocks kept"
        lines.append(f"    {l['name'][:32]:32s} {'/'.join(l['onnx_ops'])[:40]:40s} "
                     f"{l['cycles'] if l['cycles'] is not None else '-':>9} cycles{sp}")
    if "reference_mismatches" in r:
        lines.append(f"  onnxruntime: {r['reference_mismatches']} element(s) differ "
                     f"(max abs diff {r['reference_max_abs_diff']})")
    if "backends_agree" in r:
        lines.append(f"  model == rtl: {'yes' if r['backends_agree'] else 'NO'}")
    return "\n".join(lines)


def run_cli(args, config) -> int:
    """Run ``tessera onnx`` with parsed ``args`` on ``config``; returns the exit status."""
    from tessera.output import write_output
    from . import import_model, reference_outputs, compare_outputs
    from .errors import InputError, OnnxError
    inputs = _load_npz(args.inputs)
    t0 = time.monotonic()
    prog = None
    from .model import load_model
    model = load_model(args.model)
    # the batch is known before compiling: do not compute more samples per run than needed
    hint = None
    try:
        hint = max(int(np.asarray(v).shape[0]) for v in inputs.values()) if inputs else None
    except (IndexError, ValueError):
        hint = None
    prog = import_model(model, config, samples_per_tile=args.samples_per_tile,
                        sparse="dense" if args.dense else "auto", batch_hint=hint,
                        engine="dot4" if args.dot4 else "auto")
    prog.source_name = args.model
    prog.check_inputs(inputs)
    run = prog.run(inputs, backend=args.backend,
                   max_cycles=args.max_cycles or 200_000_000)
    rep = run.report
    rep["compile_seconds"] = round(prog.compile_seconds, 3)
    code = EXIT_OK
    if args.reference:
        ref = reference_outputs(model, inputs)
        cmp = compare_outputs(run.outputs, ref)
        rep["reference_mismatches"] = cmp["reference_mismatches"]
        rep["reference_max_abs_diff"] = cmp["reference_max_abs_diff"]
        rep["reference_per_output"] = cmp["per_output"]
        if cmp["reference_mismatches"]:
            code = EXIT_MISMATCH
    if rep.get("backends_agree") is False:
        code = EXIT_MISMATCH
    try:
        np.savez(args.out, **run.outputs)
    except OSError as e:
        raise InputError(f"--out {args.out}: cannot write: {e.strerror}") from None
    if args.profile:
        from pathlib import Path
        from tessera.toolchain.profile import build_profile, write_profile
        marks = run.marks
        prof = build_profile(prog.compiled, run.results[0], marks, runs=run.results,
                             title=f"Tessera onnx {args.model} — {config.tiles} tiles",
                             extra_summary=[("batch", str(rep["batch"])),
                                            ("cycles per sample", f"{rep['cycles_per_sample']:.1f}")])
        paths = write_profile(prof, Path(args.profile))
        rep["profile"] = {k: str(v) for k, v in paths.items()}
    rep["exit_code"] = code
    out = sys.stderr if args.json == "-" else sys.stdout
    print(format_report(rep), file=out)
    if args.json:
        write_output(args.json, json.dumps(rep, indent=1, default=float), error=InputError)
    return code
