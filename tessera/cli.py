"""The ``tessera`` command line (one function per subcommand; details live in ``toolchain/``).

Exit codes: 0 success (run halted), 2 bad usage or input (one-line message on stderr,
no traceback), 3 the run faulted or timed out, or the demo result did not match.
Room is left for later subcommands (gen, run, profile, bench).
"""

from __future__ import annotations

import argparse
import sys

__all__ = ["main", "build_parser"]

EXIT_OK, EXIT_USAGE, EXIT_RUN = 0, 2, 3


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2 (argparse's default also prints usage)
        self.print_usage(sys.stderr)
        print(f"tessera: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE)


def _positive(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be positive: {text!r}")
    return v


def _add_array_args(p):
    from tessera.backends import KNOWN_BACKENDS
    p.add_argument("--preset", help="array preset: tiny, small (default), array16, gc2_like")
    p.add_argument("--tiles", type=_positive, help="tiles N (overrides the preset)")
    p.add_argument("--contexts", type=_positive, help="contexts per tile T")
    p.add_argument("--sram-bytes", type=_positive, help="SRAM bytes per tile (power of two)")
    p.add_argument("--xlatency", type=_positive, help="exchange latency L in cycles")
    p.add_argument("--backend", default="model", choices=KNOWN_BACKENDS,
                   help="simulator to run on (default: model)")
    p.add_argument("--max-cycles", type=_positive, default=None,
                   help="cycle limit (default 1000000); the run times out after it")
    p.add_argument("--json", metavar="OUT", help="write the run result JSON here ('-' = stdout)")
    p.add_argument("--waves", choices=("vcd", "fst"),
                   help="dump waves (rtl backend only; sets TESSERA_RTL_WAVES)")


def _waves(args):
    if args.waves is None:
        return
    if args.backend != "rtl":
        from toolchain.run import UsageError
        raise UsageError("--waves needs --backend rtl")
    import os
    os.environ["TESSERA_RTL_WAVES"] = args.waves


def _config(args):
    from toolchain.run import resolve_config
    return resolve_config(args.preset, tiles=args.tiles, contexts=args.contexts,
                          sram_bytes=args.sram_bytes, xlatency=args.xlatency)


def cmd_cc(args) -> int:
    """``tessera cc SRC... -o OUT.elf [--no-crt] [-O..] [-D..] [-I..]``."""
    from toolchain.cc import compile_program, CompileError
    try:
        compile_program(args.sources, args.output, no_crt=args.no_crt, opt=args.opt,
                        defines=args.define or (), include_dirs=args.include or ())
    except CompileError as e:
        if e.output:
            print(e.output, file=sys.stderr)
        raise
    return EXIT_OK


def cmd_exec(args) -> int:
    """``tessera exec PROG.elf [array options] [--backend B] [--max-cycles C] [--json OUT]``."""
    from toolchain.run import DEFAULT_MAX_CYCLES, exec_program, summarize
    config = _config(args)
    _waves(args)
    result, _ = exec_program(args.program, config, backend=args.backend,
                             max_cycles=args.max_cycles or DEFAULT_MAX_CYCLES,
                             json_out=args.json)
    print(summarize(result), file=sys.stderr if args.json == "-" else sys.stdout)
    return result.exit_code


def cmd_demo(args) -> int:
    """``tessera demo [--program digits|vecsum] [array options] [--images K] [--out DIR]
    [--json OUT] [--profile]``: the int8 digits network (default, RTL backend) or the SPMD
    vector sum (model backend by default), checked against numpy; exit 3 on mismatch."""
    if args.program == "vecsum":
        from toolchain.demo import run_demo
        from toolchain.run import DEFAULT_MAX_CYCLES
        args.backend = args.backend or "model"
        _waves(args)
        return run_demo(_config(args), words_per_tile=args.words, seed=args.seed,
                        backend=args.backend, max_cycles=args.max_cycles or DEFAULT_MAX_CYCLES,
                        json_out=args.json)
    from tessera.demo import DemoError, run_digits_demo
    from toolchain.graph import EngineError, GraphError
    from toolchain.run import UsageError
    args.backend = "rtl" if args.backend in (None, "both") else args.backend  # rtl checks vs model anyway
    _waves(args)
    try:
        report = run_digits_demo(_config(args), backend=args.backend, images=args.images,
                                 batch=args.batch, out_dir=args.out, json_out=args.json,
                                 profile=args.profile, progress=not args.no_progress,
                                 max_cycles=args.max_cycles or 50_000_000)
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
        from toolchain.profile import write_profile
        from toolchain.run import UsageError
        try:
            prof = json.loads(open(args.from_json, encoding="utf-8").read())
            paths = write_profile(prof, args.out or "build/profile")
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise UsageError(f"cannot render {args.from_json}: {e}") from None
        print(f"profile: {paths['png']}  {paths['html']}")
        return EXIT_OK
    args.profile, args.program = True, "digits"
    args.out = args.out or "build/profile"
    return cmd_demo(args)


def cmd_gen(args) -> int:
    """``tessera gen [--preset P | --tiles N ...] -o DIR [--lint]``: Verilog, config.json, .core."""
    from hdl.gen import generate, GenError
    from toolchain import ToolchainError
    try:
        paths = generate(_config(args), args.output, run_lint=args.lint)
    except GenError as e:
        raise ToolchainError(str(e)) from None
    for p in paths.values():
        print(p)
    return EXIT_OK


def cmd_bench(args) -> int:
    """``tessera bench [--quick] [--only A,B] [--json OUT] [--plots DIR] [--write-doc]``."""
    from tessera.bench import BenchError
    from tessera.bench import suite
    from toolchain import ToolchainError
    try:
        names = suite.parse_only(args.only)
    except BenchError as e:
        raise ToolchainError(str(e)) from None
    plots = args.plots or (str(suite.IMG_DIR) if args.write_doc else None)
    report = suite.run_suite(names, quick=args.quick, plots_dir=plots,
                             log=lambda m: print(m, file=sys.stderr))
    md = suite.render_markdown(report)
    if args.json:
        suite.write_json(report, args.json)
    if args.write_doc:
        print(f"tessera bench: wrote {suite.rewrite_doc(md)}", file=sys.stderr)
    if args.json != "-":
        print(md)
    return EXIT_RUN if any(s["error"] for s in report["sections"]) else EXIT_OK


def cmd_run(args) -> int:
    """``tessera run KERNEL [shape options] ...``: toolchain/kernels/run.py."""
    from toolchain.kernels.run import EXIT_MISMATCH, EXIT_OK, format_report, run_kernel
    from toolchain.run import resolve_config
    cfg = resolve_config(args.preset, tiles=args.tiles, contexts=args.contexts,
                         sram_bytes=args.sram_bytes, xlatency=args.xlatency)
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


def build_parser() -> argparse.ArgumentParser:
    """The argparse parser with all subcommands."""
    p = _Parser(prog="tessera", description="Tessera IPU-style processor tools")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    cc = sub.add_parser("cc", help="compile C/asm to a Tessera ELF")
    cc.add_argument("sources", nargs="+", metavar="SRC", help=".c, .S or .s files")
    cc.add_argument("-o", dest="output", required=True, metavar="OUT.elf")
    cc.add_argument("--no-crt", action="store_true", help="no crt0: the program has _start")
    cc.add_argument("-O", dest="opt", metavar="LEVEL", type=lambda s: "-O" + s,
                    help="optimisation level (0,1,2,3,s,z; default 2)")
    cc.add_argument("-D", dest="define", action="append", metavar="NAME[=VAL]")
    cc.add_argument("-I", dest="include", action="append", metavar="DIR")
    cc.set_defaults(func=cmd_cc)

    ex = sub.add_parser("exec", help="run an ELF on every tile (SPMD)")
    ex.add_argument("program", metavar="PROG.elf")
    _add_array_args(ex)
    ex.set_defaults(func=cmd_exec)

    from tessera.demo import DEFAULT_IMAGES

    def digits_args(q, default_images):
        _add_array_args(q)
        q.set_defaults(backend=None)
        for act in q._actions:          # this subcommand's defaults differ from exec's
            if act.dest == "backend":
                act.help = "simulator (default: rtl for digits, checked against the model)"
            elif act.dest == "max_cycles":
                act.help = "cycle limit per run (default 50000000)"
            elif act.dest == "json":
                act.help = "write the demo report JSON here ('-' = stdout)"
        q.add_argument("--images", type=_positive, default=default_images,
                       help=f"test images to run (default {default_images}, at most 450)")
        q.add_argument("--batch", type=_positive, help="images per run (default: auto)")
        q.add_argument("--out", metavar="DIR", help="directory for the profile files")
        q.add_argument("--no-progress", action="store_true", help="no progress bar")

    de = sub.add_parser("demo", help="run the int8 digits network on the array and check it")
    digits_args(de, DEFAULT_IMAGES)
    de.add_argument("--program", choices=("digits", "vecsum"), default="digits",
                    help="digits (default; backend rtl) or the SPMD vector sum (backend model)")
    de.add_argument("--profile", action="store_true",
                    help="also write profile.png / profile.html / profile.json to --out")
    de.add_argument("--words", type=_positive, default=96, help="vecsum: words (4 int8) per tile")
    de.add_argument("--seed", type=int, default=2024, help="vecsum: data seed")
    de.set_defaults(func=cmd_demo)

    pr = sub.add_parser("profile", help="BSP timeline, memory map and summary (PNG + HTML)")
    digits_args(pr, DEFAULT_IMAGES)
    pr.add_argument("--from", dest="from_json", metavar="PROFILE.json",
                    help="re-render a saved profile.json instead of running")
    pr.set_defaults(func=cmd_profile)

    ge = sub.add_parser("gen", help="write tessera_array.v, config.json and a FuseSoC .core")
    ge.add_argument("--preset", help="array preset: tiny, small (default), array16")
    ge.add_argument("--tiles", type=_positive, help="tiles N (overrides the preset)")
    ge.add_argument("--contexts", type=_positive, help="contexts per tile T")
    ge.add_argument("--sram-bytes", type=_positive, help="SRAM bytes per tile (power of two)")
    ge.add_argument("--xlatency", type=_positive, help="exchange latency L in cycles")
    ge.add_argument("-o", dest="output", required=True, metavar="DIR", help="output directory")
    ge.add_argument("--lint", action="store_true", help="also run verilator --lint-only")
    ge.set_defaults(func=cmd_gen)

    from toolchain.kernels.run import KERNELS
    ru = sub.add_parser("run", help="run a library kernel on the array and check it vs numpy")
    ru.add_argument("kernel", choices=KERNELS)
    ru.add_argument("--m", type=_positive, default=32, help="matmul rows M (default 32)")
    ru.add_argument("--k", type=_positive, default=32, help="matmul depth K (default 32)")
    ru.add_argument("--n", type=_positive, default=32, help="matmul columns N (default 32)")
    ru.add_argument("--sparsity", type=float, default=0.5,
                    help="fraction of weight blocks dropped, in [0, 1) (default 0.5)")
    ru.add_argument("--block-size", type=int, default=4, help="4, 8 or 16 (default 4)")
    ru.add_argument("--batch", type=_positive, default=1, help="conv batch N (default 1)")
    ru.add_argument("--height", type=_positive, default=8, help="conv input H (default 8)")
    ru.add_argument("--width", type=_positive, default=8, help="conv input W (default 8)")
    ru.add_argument("--cin", type=_positive, default=4, help="conv input channels (default 4)")
    ru.add_argument("--cout", type=_positive, default=8, help="conv output channels (default 8)")
    ru.add_argument("--kernel-size", type=_positive, default=3, help="conv KH = KW (default 3)")
    ru.add_argument("--stride", type=_positive, default=1, help="conv stride (default 1)")
    ru.add_argument("--padding", default="same", help="same, valid or an int (default same)")
    ru.add_argument("--zero-point", type=int, default=0, help="conv input zero point")
    ru.add_argument("--depthwise", action="store_true", help="depthwise conv2d")
    ru.add_argument("--depth-multiplier", type=_positive, default=1)
    ru.add_argument("--preset", help="array preset: tiny, small (default), array16, gc2_like")
    ru.add_argument("--tiles", type=_positive, help="tiles N (overrides the preset)")
    ru.add_argument("--contexts", type=_positive, help="contexts per tile T")
    ru.add_argument("--sram-bytes", type=_positive, help="SRAM bytes per tile (power of two)")
    ru.add_argument("--relu", action="store_true", help="requantize: fused ReLU")
    ru.add_argument("--xlatency", type=_positive, help="exchange latency L in cycles")
    ru.add_argument("--backend", default="model", choices=("model", "rtl", "both"))
    ru.add_argument("--seed", type=int, default=0, help="input data seed (default 0)")
    ru.add_argument("--max-cycles", type=_positive, default=None)
    ru.add_argument("--json", metavar="OUT", help="write the report JSON here ('-' = stdout)")
    ru.add_argument("--profile", metavar="DIR",
                    help="write profile.png / profile.html / profile.json of the run here")
    ru.set_defaults(func=cmd_run)

    be = sub.add_parser("bench", help="run the benchmark suite (docs/performance.md)")
    be.add_argument("--quick", action="store_true", help="quick mode (< 10 minutes)")
    be.add_argument("--only", metavar="NAME,...",
                    help="comma-separated subset: exchange, model, kernels, rtl, sync, synth")
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
    from toolchain import ToolchainError
    try:
        return args.func(args)
    except (ToolchainError, BackendError) as e:
        print(f"tessera {args.command}: error: {e}", file=sys.stderr)
        return getattr(e, "exit_code", EXIT_USAGE)  # e.g. 3 for a backend parity mismatch
    except KeyboardInterrupt:
        print("tessera: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
