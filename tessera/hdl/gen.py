"""The one Verilog generation path: :func:`convert`, used by ``tessera gen`` and the testbenches.

:func:`convert` turns any Amaranth ``wiring.Component`` into Verilog with top module
:data:`TOP` (``tessera_array``) and one port per signature member, named by its path joined
with ``_`` (``s_axil.awaddr`` → ``s_axil_awaddr``, ``trace.valid`` → ``trace_valid``; ports
``clk`` and ``rst`` for the ``sync`` domain). The Verilator builds of the testbenches
(:mod:`tessera.tb.runner`) convert through it with ``zero_memory_init=False`` and the
Verilator options :data:`LINT_WAIVERS`, the same waivers ``tessera gen --lint`` uses.

``tessera gen [--preset P | --tiles N --contexts T --sram-bytes B --xlatency L] -o DIR`` calls
:func:`generate`, which writes

* ``DIR/tessera_array.v`` — one Verilog file, top module ``tessera_array`` (ports in
  docs/rtl.md "Top-level ports"; clock ``clk``, synchronous active-high reset ``rst``);
* ``DIR/config.json`` — the :class:`~tessera.spec.config.ArrayConfig` fields plus the derived values
  the testbench needs (sync latency, address widths, host-map bases);
* ``DIR/tessera_array.core`` — a FuseSoC CAPI2 core file with a ``default`` target and a
  ``lint`` target (Verilator ``--lint-only``).

The Verilator lint itself (``tessera gen --lint``) runs outside the RTL package, in
:func:`tessera.tb.lint.lint` (this package imports only :mod:`tessera.spec` and Amaranth).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from amaranth.hdl import ValueCastable
# What amaranth.back.verilog.convert itself uses to give a port's direction (amaranth 0.5).
from amaranth.hdl._ir import PortDirection
from amaranth.lib import wiring

from tessera.spec.config import ArrayConfig
from tessera.spec import hostmap

from .variant import CONTRACT, Variant

__all__ = ["TOP", "MAX_RTL_TILES", "LINT_WAIVERS", "GenError", "top_ports", "convert",
           "strip_zero_memory_init", "dedupe_modules", "register_reset", "REGISTERED_RESET",
           "verilog_text", "generate"]

#: Name of the top module, for every design converted by :func:`convert`.
TOP = "tessera_array"
#: Largest array :func:`generate` accepts (the receive muxes grow as N^2).
MAX_RTL_TILES = 256

#: Verilator warnings switched off for the generated Verilog, with the reason (used by
#: ``tessera gen --lint``, the FuseSoC ``lint`` target and the testbench builds).
LINT_WAIVERS = {
    "WIDTHEXPAND": "Amaranth's Verilog backend writes constants at their minimal width "
                   "(e.g. `addr < 15'h4000` against a 20-bit value); the comparisons are "
                   "zero-extended as Amaranth intends",
    "WIDTHTRUNC": "the backend writes `x == 0` on a multi-bit x as `!x`",
    "CASEINCOMPLETE": "Amaranth emits a default assignment before every `casez`, so an "
                      "uncovered pattern (e.g. an Array index beyond the last tile) keeps it",
}


class GenError(Exception):
    """Generation or lint failed; the message says which step and why."""


def top_ports(component: wiring.Component) -> dict:
    """The top-level ports of ``component``: one per signature member, named by its path.

    Parameters
    ----------
    component : amaranth.lib.wiring.Component

    Returns
    -------
    dict
        ``name -> (value, direction)`` for :func:`amaranth.back.verilog.convert`; the name
        joins the member's path with ``_`` (array members: their index), the direction is
        the member's flow (as :func:`~amaranth.back.verilog.convert` does by default).

    Raises
    ------
    TypeError
        ``component`` has no :class:`~amaranth.lib.wiring.Signature`.
    """
    if not isinstance(getattr(component, "signature", None), wiring.Signature):
        raise TypeError(f"top_ports() needs a wiring.Component, not {component!r}")
    ports = {}
    for path, member, value in component.signature.flatten(component):
        if isinstance(value, ValueCastable):
            value = value.as_value()
        ports["_".join(map(str, path))] = (
            value, PortDirection.Input if member.flow == wiring.In else PortDirection.Output)
    return ports


_ZERO_INIT = re.compile(r"^[ \t]*initial begin\n(?:[ \t]*[\w$\\.]+\[\d+\] = \d+'(?:h|d|b)0+;\n)+"
                        r"[ \t]*end\n", re.M)


def strip_zero_memory_init(verilog: str) -> str:
    """Remove ``initial`` blocks that only set memory words to zero.

    Amaranth writes one ``initial`` assignment per memory word, zeros included (8192 lines
    per 64 KiB tile SRAM). Verilator zero-initialises every variable anyway (the default
    ``--x-initial unique`` with ``+verilator+rand+reset+0``), so these blocks only cost
    build time (huge ``_eval_initial`` functions). Blocks with any non-zero word are kept.
    """
    return _ZERO_INIT.sub("", verilog)


#: The register :func:`register_reset` puts in front of the top module's ``rst``.
REGISTERED_RESET = "tb_rst_q"
_RST_USE = re.compile(r"(?<![\w.\\$])rst(?![\w$])")


def register_reset(verilog: str, top: str = TOP) -> str:
    """Drive the design's synchronous reset from a register of the ``rst`` input (testbench builds).

    Amaranth folds the synchronous reset into every register's next-state process
    (``if (rst) x$next = init;``), so with ``rst`` a top-level input all of the design's
    next-state logic depends combinationally on an input. Verilator evaluates such logic in
    its input-combinational (``ico``) region on every ``eval()`` call, i.e. on both clock
    edges under cocotb, besides the clocked region: measured on a 16-tile array, half of the
    simulator's time. Here every use of ``rst`` inside module ``top`` (its body, after the
    port declarations: instance connections and processes) reads :data:`REGISTERED_RESET`
    instead, a register that samples ``rst`` on each rising edge of ``clk`` (initial value 1).
    The design's registers then see the reset one cycle later than the pin: they are reset
    at each rising edge of ``clk`` that follows an edge at which ``rst`` was 1 (and at the
    first edge). Nothing below the top module changes, nor the ports.

    Parameters
    ----------
    verilog : str
        Output of :func:`amaranth.back.verilog.convert` (one or more modules).
    top : str
        The top module, which must declare ``input clk;`` and ``input rst;`` (the implicit
        ``sync`` domain's clock and reset).

    Returns
    -------
    str
        The same Verilog with the register added to ``top``; unchanged if ``top`` has no
        ``rst`` input (a design without a resettable ``sync`` domain).

    Raises
    ------
    ValueError
        No module ``top``; ``top`` has ``rst`` but no ``clk`` input, or already uses the
        name :data:`REGISTERED_RESET`.
    """
    for mo in _MODULE.finditer(verilog):
        if mo.group(2) == top:
            break
    else:
        raise ValueError(f"register_reset: no module {top!r} in the Verilog")
    body = mo.group(4)
    decl = "  input rst;\n  wire rst;\n"
    if decl not in body:
        return verilog
    if "  input clk;\n" not in body:
        raise ValueError(f"register_reset: module {top!r} has an rst input but no clk input")
    if re.search(rf"\b{REGISTERED_RESET}\b", body):
        raise ValueError(f"register_reset: module {top!r} already uses the name "
                         f"{REGISTERED_RESET!r}")
    before, after = body.split(decl, 1)
    after = _RST_USE.sub(REGISTERED_RESET, after)
    reg = (f"  reg {REGISTERED_RESET} = 1'h1;\n"
           f"  always @(posedge clk) {REGISTERED_RESET} <= rst;\n")
    start, end = mo.span(4)
    return verilog[:start] + before + decl + reg + after + verilog[end:]


_MODULE = re.compile(r'(\(\* generator = "Amaranth" \*\)\n)?module (\\\S+|\w+) ?\((.*?)\);\n(.*?)^endmodule\n',
                     re.S | re.M)
#: Names the backend numbers globally (so two instances of one block differ only in them).
_AUTO_NAME = re.compile(r'\\(?:\$auto\$[^\s]*?\$\d+|port\$\d+\$\d+|\$\d+)(?= )')
_INSTANCE = re.compile(r'^  (\\\S+) +((?:\\\S+|\w+) +\(\n.*?\n  \);\n)', re.S | re.M)
_CONNECTION = re.compile(r'\.(\\\S+|\w+)(\s*)\(')


#: A module-level declaration line (the backend writes them sorted by name, so two instances
#: whose numbered names sort differently, e.g. ``port$9999`` and ``port$10000``, list them in
#: different orders).
_DECLARATION = re.compile(r"^  (?:input|output|inout|wire|reg)\b")


def _canonical(header: str, body: str) -> str:
    """The merge key: numbered names renamed by first appearance (header first), the
    module-level declarations sorted (their order carries no meaning)."""
    seen: dict = {}

    def sub(mo):
        return seen.setdefault(mo.group(0), f"\\$c{len(seen)}")
    text = _AUTO_NAME.sub(sub, header + "\0" + body)
    lines = text.split("\n")
    decls = sorted(ln for ln in lines if _DECLARATION.match(ln))
    return "\n".join([ln for ln in lines if not _DECLARATION.match(ln)] + ["\0"] + decls)


def dedupe_modules(verilog: str, top: str = TOP) -> str:
    """Define identical modules once: every tile instantiates one ``matrix``, ``sram``, ``alu`` ….

    Amaranth writes one module per instance, named by its hierarchy path; the instances of a
    block that does not depend on the tile (everything but the parts holding ``tile_id``, and
    their parents) differ only in names the backend numbers globally (``\\$auto$…$n``,
    ``\\port$n$m``). Modules equal up to those names are merged into the first one, the
    instantiations renamed (type, and the named port connections by position), repeated until
    nothing merges (a parent merges once its children have). Instance names, and so the
    signal hierarchy of waves, are unchanged; Verilator compiles each block once.
    """
    while True:
        mods = [(mo.start(), mo.end(), mo.group(2), mo.group(3), mo.group(4))
                for mo in _MODULE.finditer(verilog)]
        groups: dict = {}
        for _st, _en, name, header, body in mods:
            if name != top:
                groups.setdefault(_canonical(header, body), []).append((name, header))
        merges = {}
        for members in groups.values():
            kname, kheader = members[0]
            kports = [p.strip() for p in kheader.split(",")]
            for dname, dheader in members[1:]:
                dports = [p.strip() for p in dheader.split(",")]
                merges[dname] = (kname, {d: k for d, k in zip(dports, kports) if d != k})
        if not merges:
            return verilog
        out, pos = [], 0
        for st, en, name, _header, _body in mods:
            if name in merges:
                out.append(verilog[pos:st])
                pos = en
        out.append(verilog[pos:])
        verilog = "".join(out)

        def instance(mo):
            if mo.group(1) not in merges:
                return mo.group(0)
            kname, pmap = merges[mo.group(1)]
            rest = mo.group(2)
            if pmap:
                rest = _CONNECTION.sub(
                    lambda c: "." + pmap.get(c.group(1), c.group(1)) + c.group(2) + "(", rest)
            return "  " + kname + "  " + rest
        verilog = _INSTANCE.sub(instance, verilog)


def convert(component: wiring.Component, *, name: str = TOP,
            zero_memory_init: bool = True, emit_src: bool = False,
            dedupe: bool = False, registered_reset: bool = False) -> str:
    """Convert ``component`` to Verilog with top module ``name`` and :func:`top_ports`.

    Parameters
    ----------
    component : amaranth.lib.wiring.Component
        The design (the array, or any block built alone for a test).
    name : str
        Top module name (default :data:`TOP`).
    zero_memory_init : bool
        Keep the ``initial`` blocks that set memory words to zero (``False``: remove them,
        :func:`strip_zero_memory_init`; only for simulators that zero-initialise, such as
        Verilator).
    emit_src : bool
        Annotate the Verilog with ``(* src = "file.py:line" *)`` attributes (the Amaranth
        source of each signal and process); used by coverage builds to map Verilator
        coverage points back to the Python source (``scripts/coverage.py``).
    dedupe : bool
        Define identical modules once (:func:`dedupe_modules`; the testbench builds).
    registered_reset : bool
        Drive the design's reset from a register of the ``rst`` pin (:func:`register_reset`;
        the testbench builds, where it halves Verilator's work per cycle).

    Returns
    -------
    str
        The Verilog source.
    """
    from amaranth.back import verilog
    text = verilog.convert(component, name=name, ports=top_ports(component), emit_src=emit_src)
    text = text if zero_memory_init else strip_zero_memory_init(text)
    text = dedupe_modules(text, name) if dedupe else text
    return register_reset(text, name) if registered_reset else text


def verilog_text(config: ArrayConfig, *, variant: Variant = CONTRACT) -> str:
    """The Verilog of ``tessera.hdl.array.Array(config, variant=variant)`` (:func:`convert`).

    Parameters
    ----------
    config : ArrayConfig
    variant : Variant, keyword-only

    Returns
    -------
    str
        The Verilog source (top module :data:`TOP`).
    """
    from .array import Array
    return convert(Array(config, variant=variant))


def _config_json(config: ArrayConfig) -> dict:
    d = config.to_dict()
    d["derived"] = {
        "sync_latency": config.sync_latency, "sram_words": config.sram_words,
        "sram_addr_bits": config.sram_addr_bits, "tile_bits": config.tile_bits,
        "context_bits": config.context_bits,
    }
    d["hostmap"] = {"ctrl_base": hostmap.CTRL_BASE, "tile_reg_base": hostmap.TILE_REG_BASE,
                    "tile_reg_stride": hostmap.TILE_REG_STRIDE, "sram_base": hostmap.SRAM_BASE,
                    "sram_stride": hostmap.SRAM_STRIDE, "magic": hostmap.MAGIC}
    d["top"] = TOP
    return d


def _core_file(config: ArrayConfig) -> str:
    opts = ", ".join(f"-Wno-{w}" for w in LINT_WAIVERS)
    return f"""CAPI=2:
# Generated by `tessera gen` ({config.name}: {config.tiles} tiles, {config.contexts} contexts,
# {config.sram_bytes} SRAM bytes, exchange latency {config.exchange_latency}). Do not edit.
name: tessera:tessera:{TOP}:0.1.0
description: Tessera IPU-style array, AXI4-Lite host port

filesets:
  rtl:
    files:
      - {TOP}.v
    file_type: verilogSource
  config:
    files:
      - config.json: {{file_type: user, copyto: config.json}}

targets:
  default:
    filesets: [rtl, config]
    toplevel: {TOP}
  lint:
    default_tool: verilator
    filesets: [rtl]
    toplevel: {TOP}
    tools:
      verilator:
        mode: lint-only
        verilator_options: [{opts}]
"""


def generate(config: ArrayConfig, out_dir, *, variant: Variant = CONTRACT) -> dict:
    """Write ``tessera_array.v``, ``config.json`` and ``tessera_array.core`` into ``out_dir``.

    Parameters
    ----------
    config : ArrayConfig
        The array to generate.
    out_dir : str or os.PathLike
        Output directory (created if missing).
    variant : Variant, keyword-only
        Default :data:`tessera.hdl.variant.CONTRACT`.

    Returns
    -------
    dict
        ``{"verilog": Path, "config": Path, "core": Path}``.

    Raises
    ------
    TypeError
        ``config`` is not an ArrayConfig.
    GenError
        More than :data:`MAX_RTL_TILES` tiles, or the directory cannot be written.
    """
    if not isinstance(config, ArrayConfig):
        raise TypeError(f"generate() needs an ArrayConfig, not {config!r}")
    if config.tiles > MAX_RTL_TILES:
        raise GenError(f"{config.tiles} tiles is too large for RTL generation (at most "
                       f"{MAX_RTL_TILES}; presets like gc2_like are for the golden model only)")
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise GenError(f"cannot create output directory {out}: {e.strerror}") from None
    paths = {"verilog": out / f"{TOP}.v", "config": out / "config.json",
             "core": out / f"{TOP}.core"}
    text = verilog_text(config, variant=variant)
    try:
        paths["verilog"].write_text(text)
        paths["config"].write_text(json.dumps(_config_json(config), indent=1) + "\n")
        paths["core"].write_text(_core_file(config))
    except OSError as e:
        raise GenError(f"cannot write into {out}: {e.strerror}") from None
    return paths
