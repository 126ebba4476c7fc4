"""The ``tessera`` command line (one function per subcommand; details live in ``tessera/toolchain/``).

Subcommands: cc, objdump, exec, demo, profile, gen, run, onnx, bench (``tessera COMMAND --help``;
``tessera --version``; ``python -m tessera`` is the same command).

Exit codes: 0 success (run halted), 2 bad usage or input (one-line message on stderr,
no traceback), 3 the run faulted or timed out, or the demo result did not match.
Output paths (``--json``, ``--out``, ``--profile DIR``, ``--trace``, ``-o``) are checked for
writability before any long run, and an output that is one of the command's inputs is
refused (nothing the user wrote is overwritten). With ``--json -`` stdout carries only the
JSON; every human-readable line goes to stderr. A closed stdout (``tessera ... | head``)
ends the command quietly.
"""

from __future__ import annotations

import argparse
import os
import sys

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_USAGE, EXIT_RUN = 0, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, like the other errors (--help stays full)
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


#: ``tessera cc -O`` levels (clang's).
OPT_LEVELS = ("0", "1", "2", "3", "s", "z")


def _opt_level(text: str) -> str:
    if text not in OPT_LEVELS:
        raise argparse.ArgumentTypeError(
            f"invalid optimisation level {text!r}; choose one of {', '.join(OPT_LEVELS)}")
    return "-O" + text


def _check_out_file(path, option: str) -> None:
    """Fail fast (UsageError) unless ``path`` can be written; '-' (stdout) and None pass."""
    if path is None or str(path) == "-":
        return
    from tessera.toolchain.run import UsageError
    p = os.path.abspath(os.fspath(path))
    if os.path.isdir(p):
        raise UsageError(f"{option} {path}: is a directory, expected a file name")
    parent = os.path.dirname(p)
    if not os.path.isdir(parent):
        raise UsageError(f"{option} {path}: directory {parent} does not exist")
    existed = os.path.exists(p)
    try:
        with open(p, "a"):
            pass
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write: {e.strerror}") from None
    if not existed:
        os.unlink(p)


def _same_file(a, b) -> bool:
    """True if paths ``a`` and ``b`` name the same file (also through links)."""
    if a is None or b is None or str(a) == "-" or str(b) == "-":
        return False
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(a) == os.path.realpath(b)


def _check_not_inputs(outputs, inputs) -> None:
    """Refuse (UsageError) an output path that is also an input or another output.

    Parameters
    ----------
    outputs : iterable of (option, path)
        E.g. ``[("-o", "p.elf"), ("--json", "r.json")]``; None paths are skipped.
    inputs : iterable of (what, path)
        E.g. ``[("source", "p.c")]``.
    """
    from tessera.toolchain.run import UsageError
    outs = [(o, p) for o, p in outputs if p is not None and str(p) != "-"]
    for i, (opt, path) in enumerate(outs):
        for what, src in inputs:
            if _same_file(path, src):
                raise UsageError(f"{opt} {path} is the {what} {src}; refusing to overwrite an "
                                 "input (choose another output file)")
        for opt2, path2 in outs[:i]:
            if _same_file(path, path2):
                raise UsageError(f"{opt} {path} and {opt2} {path2} are the same file; give "
                                 "each output its own file")


def _human_out(args):
    """Where human-readable text goes: stderr when ``--json -`` puts JSON on stdout."""
    return sys.stderr if getattr(args, "json", None) == "-" else sys.stdout


def _say(args):
    """A print-like callable writing one line to :func:`_human_out`."""
    def say(line=""):
        print(line, file=_human_out(args))
    return say


def _l_range() -> str:
    from tessera.spec.config import MAX_EXCHANGE_LATENCY, MIN_EXCHANGE_LATENCY
    return f"{MIN_EXCHANGE_LATENCY}..{MAX_EXCHANGE_LATENCY}"


_L_RANGE = _l_range()


def _xlatency(text: str) -> int:
    """``--xlatency`` value: an int accepted by the spec's ArrayConfig (2..64, contract v2)."""
    v = _positive(text)
    from tessera.spec.config import ArrayConfig
    try:
        ArrayConfig(exchange_latency=v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e).replace("ArrayConfig.exchange_latency",
                                                        "exchange latency")) from None
    return v


def _engine_macs(text: str) -> int:
    """``--engine-macs`` value: one of the spec's ENGINE_MACS_CHOICES."""
    from tessera.spec.config import ENGINE_MACS_CHOICES
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v not in ENGINE_MACS_CHOICES:
        raise argparse.ArgumentTypeError(f"must be one of {ENGINE_MACS_CHOICES}: {text!r}")
    return v


def _check_out_dir(path, option: str) -> None:
    """Fail fast (UsageError) unless directory ``path`` exists or can be created, and is writable."""
    if path is None:
        return
    import tempfile
    from tessera.toolchain.run import UsageError
    try:
        os.makedirs(path, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as e:
        raise UsageError(f"{option} {path}: cannot write there: {e.strerror}") from None


def _check_rtl(args, config) -> None:
    """RTL-only limits checked before compiling anything (same message as ``tessera gen``)."""
    if getattr(args, "backend", None) not in ("rtl", "both"):
        return
    from tessera.hdl.gen import MAX_RTL_TILES
    from tessera.toolchain.run import UsageError
    if config.tiles > MAX_RTL_TILES:
        default = " (the default backend here)" if getattr(args, "backend_defaulted", False) else ""
        raise UsageError(f"{config.tiles} tiles is too large for RTL generation (at most "
                         f"{MAX_RTL_TILES}) with --backend {args.backend}{default}; add "
                         f"--backend model (presets like gc2_like are for the golden model only)")


def _int_at_least(text: str, low: int, what: str) -> int:
    """``text`` as an integer (any base prefix) ``>= low``; argparse's error otherwise."""
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < low:
        raise argparse.ArgumentTypeError(f"must be {what}: {text!r}")
    return v


def _positive(text: str) -> int:
    return _int_at_least(text, 1, "positive")


def _nonnegative(text: str) -> int:
    return _int_at_least(text, 0, "0 or positive")


def _add_array_args(p):
    from tessera.backends import KNOWN_BACKENDS
    p.add_argument("--preset", help="array preset: tiny, small (default), array16, "
                                    "gc2_like (1216 tiles: model backend only)")
    p.add_argument("--tiles", type=_positive, help="tiles N (overrides the preset)")
    p.add_argument("--contexts", type=_positive, help="contexts per tile T")
    p.add_argument("--sram-bytes", type=_positive, help="SRAM bytes per tile (power of two)")
    p.add_argument("--xlatency", type=_positive, help="exchange latency L in cycles")
    p.add_argument("--engine-macs", type=_engine_macs,
                   help="matrix-engine MACs per cycle per tile: 0 (none: dot4 kernels), 16, 32 "
                        "(the presets' value), 64")
    p.add_argument("--backend", default="model", choices=KNOWN_BACKENDS,
                   help="simulator: model (golden model, default), rtl (Verilator), or both "
                        "(runs both and exits 3 unless their run-result JSON is identical)")
    p.add_argument("--max-cycles", type=_positive, default=None,
                   help="cycle limit (default 1000000); the run times out after it")
    p.add_argument("--json", metavar="OUT", help="write the run result JSON here ('-' = stdout)")
    p.add_argument("--waves", choices=("vcd", "fst"),
                   help="dump waves (rtl backend only; sets TESSERA_RTL_WAVES). fst needs "
                        "lz4.h (liblz4-dev); the latest 5 runs are kept in .build/rtl/runs")


def _waves(args):
    if args.waves is None:
        return
    if args.backend != "rtl":
        from tessera.toolchain.run import UsageError
        raise UsageError("--waves needs --backend rtl")
    if args.waves == "fst":
        from tessera.tb.runner import lz4_available
        if not lz4_available():
            from tessera.toolchain.run import UsageError
            raise UsageError("--waves fst needs the lz4.h header for Verilator's FST writer, "
                             "which the C++ compiler cannot find; use --waves vcd or install "
                             "liblz4-dev")
    os.environ["TESSERA_RTL_WAVES"] = args.waves


def _config(args):
    from tessera.toolchain.run import resolve_config
    return resolve_config(args.preset, tiles=args.tiles, contexts=args.contexts,
                          sram_bytes=args.sram_bytes, xlatency=args.xlatency,
                          engine_macs=getattr(args, "engine_macs", None))


def cmd_cc(args) -> int:
    """``tessera cc SRC... -o OUT.elf [--no-crt] [-O..] [-D..] [-I..] [--xlatency L]``.

    The ELF is linked to a temporary file next to ``OUT.elf`` and checked (stack size)
    before it replaces ``OUT.elf``, so a failed build leaves an existing ``OUT.elf`` as it was.
    """
    from tessera.toolchain.cc import compile_program, CompileError
    from tessera.toolchain.elf import load_elf
    _check_not_inputs([("-o", args.output)], [("source", s) for s in args.sources])
    _check_out_file(args.output, "-o")
    defines = list(args.define or ())
    if args.xlatency is not None:
        defines.append(f"TSR_XLATENCY={args.xlatency}")
    if args.engine_macs is not None:
        defines.append(f"TSR_ENGINE_MACS={args.engine_macs}")
    out_dir = os.path.dirname(os.path.abspath(args.output))
    tmp = os.path.join(out_dir, f".{os.path.basename(args.output)}.{os.getpid()}.tmp")
    try:
        try:
            compile_program(args.sources, tmp, no_crt=args.no_crt, opt=args.opt,
                            defines=defines, include_dirs=args.include or ())
        except CompileError as e:
            if e.output:
                print(e.output.replace(tmp, args.output), file=sys.stderr)
            if "duplicate symbol: _start" in (e.output or "") and not args.no_crt:
                print("tessera cc: hint: your program defines _start; compile it with --no-crt "
                      "(crt0's _start is linked otherwise)", file=sys.stderr)
            raise
        image = load_elf(tmp)
        os.replace(tmp, args.output)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    from tessera.spec.config import MAX_SRAM_BYTES, MIN_CONTEXTS
    need = image.end + MIN_CONTEXTS * image.stack_bytes
    if need > MAX_SRAM_BYTES:
        print(f"tessera cc: warning: {args.output} needs {need} bytes (image {image.end} + "
              f"{MIN_CONTEXTS} contexts x {image.stack_bytes} stack bytes), more than the "
              f"largest tile SRAM ({MAX_SRAM_BYTES} bytes); it cannot run on any array",
              file=sys.stderr)
    return EXIT_OK


def cmd_objdump(args) -> int:
    """``tessera objdump ELF [-S]``: disassembly with symbols (and source lines)."""
    from tessera.toolchain.objdump import objdump
    sys.stdout.write(objdump(args.elf, source=args.source))
    return EXIT_OK


def cmd_exec(args) -> int:
    """``tessera exec PROG.elf [array options] [--backend B] [--max-cycles C] [--json OUT]
    [--trace FILE] [--load TILE:SYMBOL=FILE]...``."""
    from tessera.toolchain.elf import load_elf
    from tessera.toolchain.run import (DEFAULT_MAX_CYCLES, exec_program, resolve_loads,
                                       summarize)
    from tessera.toolchain.run import parse_load
    loads = args.load or ()
    load_files = [("--load file", parse_load(spec)[2]) for spec in loads]
    _check_not_inputs([("--json", args.json), ("--trace", args.trace)],
                      [("program", args.program), *load_files])
    config = _config(args)
    _check_rtl(args, config)
    _waves(args)
    _check_out_file(args.json, "--json")
    _check_out_file(args.trace, "--trace")
    if args.trace is not None and args.backend != "model":
        from tessera.toolchain.run import UsageError
        raise UsageError("--trace needs --backend model: the golden model records the retire "
                         "trace; the RTL's trace ports are only compared inside the test "
                         "bench (tests/test_rtl_*), not written by tessera exec")
    image = load_elf(args.program)
    preload = resolve_loads(image, config, loads)
    result, _ = exec_program(image, config, backend=args.backend,
                             max_cycles=args.max_cycles or DEFAULT_MAX_CYCLES,
                             json_out=args.json, preload=preload, trace_out=args.trace)
    out = _human_out(args)
    print(summarize(result, image=image), file=out)
    if args.backend == "both":   # a difference raised BackendMismatch (exit 3) above
        print("  model == rtl: yes (identical run-result JSON)", file=out)
    if args.trace is not None:
        print(f"trace: {args.trace}", file=out)
    return result.exit_code


def cmd_demo(args) -> int:
    """``tessera demo [--program digits|vecsum] [array options] [--images K] [--out DIR]
    [--json OUT] [--profile]``: the int8 digits network (default, RTL backend) or the SPMD
    vector sum (model backend by default), checked against numpy; exit 3 on mismatch."""
    if args.program == "vecsum":
        from tessera.toolchain.demo import run_demo
        from tessera.toolchain.run import DEFAULT_MAX_CYCLES
        args.backend = args.backend or "model"
        config = _config(args)
        _check_rtl(args, config)
        _waves(args)
        _check_out_file(args.json, "--json")
        return run_demo(config, words_per_tile=args.words, seed=args.seed,
                        backend=args.backend, max_cycles=args.max_cycles or DEFAULT_MAX_CYCLES,
                        json_out=args.json, out=_say(args))
    from tessera.cli.demo import DemoError, run_digits_demo
    from tessera.toolchain.graph import EngineError, GraphError
    from tessera.toolchain.run import UsageError
    args.backend_defaulted = args.backend is None
    args.backend = "rtl" if args.backend in (None, "both") else args.backend  # rtl checks vs model anyway
    if args.out is not None:
        args.profile = True          # --out only makes sense for the profile files
    config = _config(args)
    _check_rtl(args, config)
    _waves(args)
    _check_out_file(args.json, "--json")
    if args.profile:
        _check_out_dir(args.out or "build/demo", "--out")
    # the ONNX digits CNN (tessera/cli/demo_cnn.py; `tessera demo`'s default). `tessera profile`
    # comes here without a --model: it profiles the MLP digits job
    if getattr(args, "model", "mlp") == "cnn":
        from tessera.cli.demo_cnn import DENSE_IMAGES, run_cnn_demo, sparsity_sweep
        if args.sweep:
            sw = sparsity_sweep(config, backend=args.backend, images=min(args.images, 450)
                                if args.images != 450 else 16, out_dir=args.out, arch=args.arch,
                                engine="dot4" if args.dot4 else "auto", out=_say(args))
            bad = any(r[k]["reference_mismatches"] for r in sw["rows"]
                      for k in ("dense_kernels", "sparse_kernels"))
            return EXIT_RUN if bad else EXIT_OK
        try:
            report = run_cnn_demo(config, backend=args.backend, images=args.images,
                                  sparsity=args.sparsity, dense=args.dense, out_dir=args.out,
                                  arch=args.arch, dense_images=(min(DENSE_IMAGES, args.images)
                                                if args.dense_images is None
                                                else args.dense_images),
                                  json_out=args.json, profile=args.profile,
                                  progress=not args.no_progress, samples_per_tile=args.batch,
                                  max_cycles=args.max_cycles or 200_000_000,
                                  engine="dot4" if args.dot4 else "auto", out=_say(args))
        except (DemoError, GraphError) as e:
            raise UsageError(str(e)) from None
        except EngineError as e:
            print(f"tessera demo: run failed: {e}", file=sys.stderr)
            return EXIT_RUN
        return report["exit_code"]
    try:
        report = run_digits_demo(config, backend=args.backend, images=args.images,
                                 batch=args.batch, out_dir=args.out, json_out=args.json,
                                 profile=args.profile, progress=not args.no_progress,
                                 max_cycles=args.max_cycles or 50_000_000, out=_say(args))
    except (DemoError, GraphError) as e:   # bad arguments, batch does not fit, ...
        raise UsageError(str(e)) from None
    except EngineError as e:               # a run faulted or timed out
        print(f"tessera demo: run failed: {e}", file=sys.stderr)
        return EXIT_RUN
    return report["exit_code"]


def cmd_profile(args) -> int:
    """``tessera profile [--from PROFILE.json] [--out DIR] [demo options]``: write the
    PopVision-style profile (PNG + HTML) of the digits job, or re-render a saved one."""
    if args.from_json:
        import json
        from tessera.toolchain.profile import ProfileFormatError, check_profile, write_profile
        from tessera.toolchain.run import UsageError
        out_dir = args.out or "build/profile"
        _check_out_dir(out_dir, "--out")                 # an output problem names --out
        src = args.from_json
        try:
            text = open(src, encoding="utf-8").read()
        except OSError as e:
            raise UsageError(f"--from {src}: cannot read: {e.strerror}") from None
        try:
            prof = json.loads(text)
        except ValueError as e:
            raise UsageError(f"--from {src}: not JSON ({e})") from None
        try:
            check_profile(prof)
        except ProfileFormatError as e:
            raise UsageError(f"--from {src}: not a Tessera profile.json: {e}") from None
        _check_not_inputs([("--out", os.path.join(out_dir, "profile.json"))],
                          [("--from file", src)])
        try:
            paths = write_profile(prof, out_dir)
        except OSError as e:
            raise UsageError(f"--out {out_dir}: cannot write the profile: "
                             f"{e.strerror or e}") from None
        print(f"profile: {paths['png']}  {paths['html']}  {paths['json']}", file=_human_out(args))
        return EXIT_OK
    args.profile, args.program = True, "digits"
    args.out = args.out or "build/profile"
    return cmd_demo(args)


def cmd_gen(args) -> int:
    """``tessera gen [--preset P | --tiles N ...] -o DIR [--lint]``: Verilog, config.json, .core."""
    from tessera.hdl.gen import LINT_WAIVERS, generate, GenError
    from tessera.toolchain import ToolchainError
    try:
        paths = generate(_config(args), args.output)
        if args.lint:
            from tessera.tb.lint import lint
            paths["lint"] = paths["verilog"].parent / "lint.log"
            lint(paths["verilog"], log_path=paths["lint"])
    except GenError as e:
        raise ToolchainError(str(e)) from None
    for p in paths.values():
        print(p)
    if args.lint:
        warnings = [ln for ln in paths["lint"].read_text().splitlines()
                    if ln.startswith(("%Warning", "%Error"))]
        if warnings:   # non-fatal output (errors already raised GenError above)
            print(f"lint: {len(warnings)} message(s), see {paths['lint']}:")
            print("\n".join(warnings))
        else:
            print(f"lint: clean ({len(LINT_WAIVERS)} waived warning kinds: "
                  f"{', '.join(LINT_WAIVERS)})")
    return EXIT_OK


def cmd_bench(args) -> int:
    """``tessera bench [--quick] [--only A,B] [--json OUT] [--plots DIR] [--write-doc]``."""
    from tessera.cli.bench import BenchError
    from tessera.cli.bench import suite
    from tessera.toolchain import ToolchainError
    try:
        names = suite.parse_only(args.only)
    except BenchError as e:
        raise ToolchainError(str(e)) from None
    _check_out_file(args.json, "--json")
    _check_out_dir(args.plots, "--plots")
    plots = args.plots or (str(suite.IMG_DIR) if args.write_doc else None)
    partial = None
    if args.json and args.json != "-":      # finished sections survive a stopped run
        partial = lambda rep: suite.write_json(rep, args.json)  # noqa: E731
    report = suite.run_suite(names, quick=args.quick, plots_dir=plots,
                             log=lambda m: print(m, file=sys.stderr), on_section=partial)
    md = suite.render_markdown(report)
    if args.json:
        suite.write_json(report, args.json)
    if args.write_doc:
        print(f"tessera bench: wrote {suite.rewrite_doc(md)}", file=sys.stderr)
    if args.json != "-":
        print(md)
    return EXIT_RUN if any(s["error"] for s in report["sections"]) else EXIT_OK


def cmd_run(args) -> int:
    """``tessera run KERNEL [shape options] ...``: tessera/toolchain/kernels/run.py."""
    from tessera.toolchain.kernels.run import EXIT_MISMATCH, EXIT_OK, format_report, run_kernel
    from tessera.toolchain.run import resolve_config
    cfg = resolve_config(args.preset, tiles=args.tiles, contexts=args.contexts,
                         sram_bytes=args.sram_bytes, xlatency=args.xlatency,
                         engine_macs=args.engine_macs)
    _check_rtl(args, cfg)
    _check_out_file(args.json, "--json")
    _check_out_dir(args.profile, "--profile")
    opts = {k: getattr(args, k) for k in (
        "m", "k", "n", "sparsity", "block_size", "batch", "height", "width", "cin", "cout",
        "kernel_size", "stride", "padding", "zero_point", "depthwise", "depth_multiplier",
        "relu")}
    if args.max_cycles:
        opts["max_cycles"] = args.max_cycles
    r = run_kernel(args.kernel, cfg, backend=args.backend, seed=args.seed, json_out=args.json,
                   profile_dir=args.profile, **opts)
    print(format_report(r), file=sys.stderr if args.json == "-" else sys.stdout)
    return EXIT_OK if r["match"] else EXIT_MISMATCH


def cmd_onnx(args) -> int:
    """``tessera onnx MODEL.onnx --inputs IN.npz --out OUT.npz ...``: toolchain/onnx/cli.py."""
    from tessera.toolchain.graph import EngineError
    from tessera.toolchain.onnx.cli import run_cli
    config = _config(args)
    _check_rtl(args, config)
    _check_out_file(args.json, "--json")
    _check_out_file(args.out, "--out")
    _check_out_dir(args.profile, "--profile")
    try:
        return run_cli(args, config)
    except EngineError as e:               # a run faulted or timed out
        print(f"tessera onnx: run failed: {e}", file=sys.stderr)
        return EXIT_RUN


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser with all subcommands."""
    from tessera import __version__
    p = _Parser(prog="tessera", description="Tessera IPU-style processor tools")
    p.add_argument("--version", action="version", version=f"tessera {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    cc = sub.add_parser(
        "cc", help="compile C/asm to a Tessera ELF",
        description="Compile and link C (.c) and assembly (.S, .s) into a Tessera ELF with the "
                    "ziglang clang (tessera.h on the include path, crt0 linked first).")
    cc.add_argument("sources", nargs="+", metavar="SRC", help=".c, .S or .s files")
    cc.add_argument("-o", dest="output", required=True, metavar="OUT.elf",
                    help="the ELF to write (required; its directory must exist)")
    cc.add_argument("--no-crt", action="store_true",
                    help="do not link crt0: the program defines _start itself")
    cc.add_argument("-O", dest="opt", metavar="LEVEL", type=_opt_level,
                    help="optimisation level: 0, 1, 2, 3, s or z (default 2)")
    cc.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]",
                    help="define a preprocessor macro (repeatable)")
    cc.add_argument("-I", dest="include", action="append", metavar="DIR",
                    help="add an include directory (repeatable)")
    cc.add_argument("--xlatency", type=_xlatency, metavar="L",
                    help="exchange latency the program is built for, "
                         f"{_L_RANGE} (defines "
                         "TSR_XLATENCY=L; programs that set an exchange program only run on "
                         "arrays with this L)")
    cc.add_argument("--engine-macs", type=_engine_macs, metavar="P",
                    help="matrix-engine MACs per cycle the program is built for: 0, 16, 32 "
                         "(default), 64 (defines TSR_ENGINE_MACS=P; programs that call "
                         "tsr_mrun only run on arrays with this P)")
    cc.set_defaults(func=cmd_cc)

    od = sub.add_parser(
        "objdump", help="disassemble an ELF with its symbols",
        description="Disassemble the code sections of a Tessera ELF (RV32IM + Tessera's "
                    "custom instructions) with function labels and branch-target symbols.")
    od.add_argument("elf", metavar="ELF")
    od.add_argument("-S", "--source", action="store_true",
                    help="interleave file:line from the ELF's debug info")
    od.set_defaults(func=cmd_objdump)

    ex = sub.add_parser(
        "exec", help="run an ELF on every tile (SPMD)",
        description="Load one ELF into every tile (SPMD), run it on the golden model or the "
                    "RTL and print the run summary (exit 3 on a fault or timeout).")
    ex.add_argument("program", metavar="PROG.elf")
    _add_array_args(ex)
    ex.add_argument("--trace", metavar="FILE",
                    help="write one JSON line per retired instruction (cycle, tile, context, "
                         "pc, insn, asm, rd, value, store_*) to FILE; --backend model only")
    ex.add_argument("--load", action="append", metavar="TILE:SYMBOL=FILE",
                    help="before the start, write FILE's bytes to the .noinit symbol SYMBOL "
                         "of tile TILE (a number, or 'all'); at most the symbol's size "
                         "(repeatable)")
    ex.set_defaults(func=cmd_exec)

    from tessera.cli.demo import DEFAULT_IMAGES
    from tessera.cli.demo_cnn import DENSE_IMAGES

    def digits_args(q, default_images):
        _add_array_args(q)
        q.set_defaults(backend=None)
        for act in q._actions:          # this subcommand's defaults differ from exec's
            if act.dest == "backend":
                act.help = ("simulator (default: rtl for digits, vecsum: model); rtl runs are "
                            "always checked against the model, so 'both' means rtl here")
            elif act.dest == "max_cycles":
                act.help = "cycle limit per run (default 50000000)"
            elif act.dest == "json":
                act.help = "write the demo report JSON here ('-' = stdout)"
        q.add_argument("--images", type=_positive, default=default_images,
                       help=f"test images to run (default {default_images}, at most 450)")
        q.add_argument("--batch", type=_positive, help="images per run (default: auto)")
        q.add_argument("--out", metavar="DIR",
                       help="directory for the profile files (implies --profile; "
                            "default build/demo)")
        q.add_argument("--no-progress", action="store_true", help="no progress bar")

    de = sub.add_parser(
        "demo", help="run the int8 digits network on the array and check it",
        description="Run the int8 digits CNN imported from ONNX (or --model mlp, the hand-mapped "
                    "MLP checked against numpy, or --program vecsum) on the simulated array and "
                    "check every output against its reference; exit 3 on any mismatch.")
    digits_args(de, DEFAULT_IMAGES)
    de.add_argument("--program", choices=("digits", "vecsum"), default="digits",
                    help="digits (default; backend rtl) or the SPMD vector sum (backend model)")
    de.add_argument("--profile", action="store_true",
                    help="also write profile.png / profile.html / profile.json to --out")
    de.add_argument("--model", choices=("mlp", "cnn"), default="cnn",
                    help="digits: the CNN imported from ONNX (default; trained with numpy, "
                         "quantized by onnxruntime; checked element by element against "
                         "onnxruntime; --batch = samples per tile) or the hand-mapped MLP "
                         "(checked against numpy and the golden model)")
    de.add_argument("--sparsity", type=float, default=None,
                    help="--model cnn: block-sparse variant 0.5, 0.75 or 0.9, or 0 (dense); "
                         "default 0.9 for --arch 8x8 (the default), 0 otherwise")
    de.add_argument("--dense", action="store_true",
                    help="--model cnn: force the dense kernels for sparse weights")
    de.add_argument("--arch", default="8x8",
                    help="--model cnn: '8x8' (default: digits_cnn.ARCH_8X8 = "
                         "c3:8,c3:48*,c3:56*,c2s2:16*,k4), 'pooled' (the pooled two-convolution "
                         "CNN) or a layer list (tessera.toolchain.models.convnet, e.g. "
                         "c3:8,c3:48*,c3:56*,c2s2:16*,k4*)")
    de.add_argument("--dense-images", type=_nonnegative, default=None,
                    help="--model cnn with --sparsity > 0: run the dense model of the same "
                         "layers on the same backend for the first K images (default "
                         f"{DENSE_IMAGES}, at most --images: two runs on 4 tiles) and on the "
                         "golden model for all --images, and print cycles per image sparse / "
                         "dense; 0: no comparison")
    de.add_argument("--dot4", action="store_true",
                    help="--model cnn: dot4 kernels even when the array has a matrix engine "
                         "(for comparison)")
    de.add_argument("--sweep", action="store_true",
                    help="--model cnn: accuracy and cycles of the 0/50/75/90%% block-sparse "
                         "variants, dense vs sparse kernels (--images, default 16 for cycles); "
                         "writes sparsity.png / sparsity.json to --out")
    de.add_argument("--words", type=_positive, default=96, help="vecsum: words (4 int8) per tile")
    de.add_argument("--seed", type=int, default=2024, help="vecsum: data seed")
    de.set_defaults(func=cmd_demo)

    pr = sub.add_parser(
        "profile", help="BSP timeline, memory map and summary (PNG + HTML)",
        description="Write the PopVision-style profile of the digits job (default --out "
                    "build/profile), or re-render a saved profile.json with --from.")
    digits_args(pr, DEFAULT_IMAGES)
    pr.add_argument("--from", dest="from_json", metavar="PROFILE.json",
                    help="re-render a saved profile.json instead of running")
    pr.set_defaults(func=cmd_profile)

    ge = sub.add_parser(
        "gen", help="write tessera_array.v, config.json and a FuseSoC .core",
        description="Generate the Verilog of an array (at most 256 tiles), its config.json "
                    "and a FuseSoC .core; --lint also runs verilator --lint-only.")
    ge.add_argument("--preset", help="array preset: tiny, small (default), array16 "
                                     "(gc2_like is model-only: too many tiles for RTL)")
    ge.add_argument("--tiles", type=_positive, help="tiles N (overrides the preset)")
    ge.add_argument("--contexts", type=_positive, help="contexts per tile T")
    ge.add_argument("--sram-bytes", type=_positive, help="SRAM bytes per tile (power of two)")
    ge.add_argument("--xlatency", type=_positive, help="exchange latency L in cycles")
    ge.add_argument("-o", dest="output", required=True, metavar="DIR", help="output directory")
    ge.add_argument("--lint", action="store_true", help="also run verilator --lint-only")
    ge.set_defaults(func=cmd_gen)

    from tessera.toolchain.kernels.run import KERNELS
    ru = sub.add_parser(
        "run", help="run a library kernel on the array and check it vs numpy",
        description="Compile one library kernel for the array, run it on random int8 inputs "
                    "and compare with numpy (exit 3 on a mismatch). Shape options: matmul "
                    "kernels and requantize use --m/--k/--n (requantize: [M, N]); block-sparse "
                    "kernels also --sparsity/--block-size; conv kernels --batch/--height/"
                    "--width/--cin/--cout/--kernel-size/--stride/--padding/--zero-point/"
                    "--depthwise/--depth-multiplier; pools --batch/--height/--width/--cin/"
                    "--kernel-size/--stride/--padding; requantize --relu/--zero-point.")
    ru.add_argument("kernel", choices=KERNELS)
    ru.add_argument("--m", type=_positive, default=32,
                    help="matmul / requantize rows M (default 32)")
    ru.add_argument("--k", type=_positive, default=32, help="matmul depth K (default 32)")
    ru.add_argument("--n", type=_positive, default=32,
                    help="matmul / requantize columns N (default 32)")
    ru.add_argument("--sparsity", type=float, default=0.5,
                    help="block-sparse: fraction of weight blocks dropped, in [0, 1) "
                         "(default 0.5)")
    ru.add_argument("--block-size", type=int, default=4,
                    help="block-sparse: block size 4, 8 or 16 (default 4)")
    ru.add_argument("--batch", type=_positive, default=1, help="conv/pool batch N (default 1)")
    ru.add_argument("--height", type=_positive, default=8, help="conv/pool input H (default 8)")
    ru.add_argument("--width", type=_positive, default=8, help="conv/pool input W (default 8)")
    ru.add_argument("--cin", type=_positive, default=4,
                    help="conv/pool input channels (default 4)")
    ru.add_argument("--cout", type=_positive, default=8, help="conv output channels (default 8)")
    ru.add_argument("--kernel-size", type=_positive, default=3,
                    help="conv KH = KW, pool window (default 3)")
    ru.add_argument("--stride", type=_positive, default=1, help="conv/pool stride (default 1)")
    ru.add_argument("--padding", default="same",
                    help="conv/pool padding: same, valid or an int (default same)")
    ru.add_argument("--zero-point", type=int, default=0,
                    help="conv input zero point / requantize output zero point (default 0)")
    ru.add_argument("--depthwise", action="store_true", help="conv: depthwise conv2d")
    ru.add_argument("--depth-multiplier", type=_positive, default=1,
                    help="depthwise conv: output channels per input channel (default 1)")
    ru.add_argument("--preset", help="array preset: tiny, small (default), array16, "
                                     "gc2_like (1216 tiles: model backend only)")
    ru.add_argument("--tiles", type=_positive, help="tiles N (overrides the preset)")
    ru.add_argument("--contexts", type=_positive, help="contexts per tile T")
    ru.add_argument("--sram-bytes", type=_positive, help="SRAM bytes per tile (power of two)")
    ru.add_argument("--relu", action="store_true", help="requantize: fused ReLU")
    ru.add_argument("--xlatency", type=_positive, help="exchange latency L in cycles")
    ru.add_argument("--engine-macs", type=_engine_macs,
                    help="matrix-engine MACs per cycle per tile: 0 (none: dot4 kernels), 16, "
                         "32 (the presets' value), 64")
    ru.add_argument("--backend", default="model", choices=("model", "rtl", "both"),
                    help="simulator: model (default), rtl, or both (also requires identical "
                         "model and RTL run results)")
    ru.add_argument("--seed", type=int, default=0, help="input data seed (default 0)")
    ru.add_argument("--max-cycles", type=_positive, default=None,
                    help="cycle limit of the run (default 50000000); it times out after it")
    ru.add_argument("--json", metavar="OUT", help="write the report JSON here ('-' = stdout)")
    ru.add_argument("--profile", metavar="DIR",
                    help="write profile.png / profile.html / profile.json of the run here")
    ru.set_defaults(func=cmd_run)

    on = sub.add_parser(
        "onnx", help="import an int8 ONNX model, run it on the array",
        description="Import an ONNX model (QDQ from onnxruntime.quantization.quantize_static, "
                    "QOperator, or integer operators), compile it once for the array and run "
                    "the inputs of IN.npz (batch in the first axis). Exit 0 ok, 2 bad input, "
                    "3 mismatch (--backend both: rtl != model; --reference: an element "
                    "differs from onnxruntime).")
    from tessera.toolchain.onnx.cli import add_arguments as onnx_args
    onnx_args(on)
    _add_array_args(on)
    for act in on._actions:
        if act.dest == "json":
            act.help = "write the report JSON here ('-' = stdout)"
        elif act.dest == "max_cycles":
            act.help = "cycle limit per run (default 200000000)"
    on.set_defaults(func=cmd_onnx)

    from tessera.cli.bench import BENCHMARKS
    be = sub.add_parser(
        "bench", help="run the benchmark suite (docs/performance.md)",
        description="Run the benchmark suite and print it as Markdown (exit 3 if a section "
                    "failed); --write-doc regenerates docs/performance.md.")
    be.add_argument("--quick", action="store_true", help="quick mode (< 10 minutes)")
    be.add_argument("--only", metavar="NAME,...",
                    help="comma-separated subset: " + ", ".join(BENCHMARKS))
    be.add_argument("--json", metavar="OUT", help="write all results as JSON ('-' = stdout)")
    be.add_argument("--plots", metavar="DIR", help="write PNG plots here")
    be.add_argument("--write-doc", action="store_true",
                    help="regenerate docs/performance.md (plots to docs/img/ unless --plots)")
    be.set_defaults(func=cmd_bench)
    return p


def main(argv=None) -> int:
    """Entry point of the ``tessera`` script; returns the process exit code."""
    args = build_parser().parse_args(argv)
    from tessera.backends import BackendError
    from tessera.toolchain import ToolchainError
    try:
        code = args.func(args)
        sys.stdout.flush()      # surface a broken pipe here, not at interpreter exit
        return code
    except (ToolchainError, BackendError) as e:
        print(f"tessera {args.command}: error: {e}", file=sys.stderr)
        return getattr(e, "exit_code", EXIT_USAGE)  # e.g. 3 for a backend parity mismatch
    except BrokenPipeError:
        # stdout was closed early (`tessera ... | head`): stop quietly; point stdout at
        # devnull so the interpreter's final flush does not raise again
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        print("tessera: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
