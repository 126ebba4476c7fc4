"""The RTL's interfaces (tessera/hdl/interfaces.py); tessera.hdl needs only Amaranth.

Expected member names, widths and port names are written out by hand from docs/rtl.md
("Interfaces", "Top-level ports"), not taken from the code under test.
"""

import ast
from pathlib import Path

import pytest
from amaranth.hdl import Shape
from amaranth.lib import wiring

from tessera.spec.config import PRESETS, ArrayConfig
from tessera.spec.faults import FaultCause
from tessera.spec.result import ContextState
from tessera.hdl import interfaces as itf
from tessera.hdl.array import Array
from tessera.hdl.array.host_port import HostPort
from tessera.hdl.gen import top_ports
from tessera.hdl.tile.core import Core, CoreSignature, StubCore
from tessera.hdl.variant import CONTRACT, Variant

HDL = Path(__file__).resolve().parents[1] / "tessera" / "hdl"
SMALL = PRESETS["small"]      # 4 tiles, 6 contexts (cb = 3), 64 KiB (ab = 16)


def _members(sig):
    """{dotted path: (flow name, width)} of a signature."""
    return {".".join(map(str, p)): (m.flow.name, Shape.cast(m.shape).width)
            for p, m in sig.members.flatten() if m.is_port}


def test_hdl_needs_no_third_party_package_but_amaranth():
    # which tessera layers tessera.hdl may import is checked in tests/test_layers.py
    allowed_stdlib = {"__future__", "enum", "json", "re", "pathlib", "dataclasses"}
    bad = []
    for f in sorted(HDL.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            bad += [f"{f.relative_to(HDL)}: {n}" for n in names
                    if n.split(".")[0] not in allowed_stdlib | {"amaranth", "tessera"}]
    assert bad == []


def test_signature_members_by_hand():
    assert _members(itf.FetchSignature()) == {
        "en": ("Out", 1), "addr": ("Out", 32), "data": ("In", 32)}
    assert _members(itf.MemorySignature(addr_width=16)) == {
        "re": ("Out", 1), "we": ("Out", 4), "addr": ("Out", 16), "wdata": ("Out", 32),
        "rdata": ("In", 32)}
    assert _members(itf.FaultSignature(SMALL)) == {
        "valid": ("Out", 1), "xchg": ("Out", 1), "context": ("Out", 3), "cause": ("Out", 5),
        "pc": ("Out", 32), "addr": ("Out", 32)}
    assert _members(itf.TraceSignature(SMALL, lanes=4)) == {
        "valid": ("Out", 4), "context": ("Out", 12), "pc": ("Out", 128), "insn": ("Out", 128),
        "rd": ("Out", 20), "value": ("Out", 128), "st_mask": ("Out", 16),
        "st_addr": ("Out", 128), "st_data": ("Out", 128)}
    host = _members(itf.HostTileSignature(SMALL))
    assert host == {
        "sram.re": ("Out", 1), "sram.we": ("Out", 4), "sram.addr": ("Out", 16),
        "sram.wdata": ("Out", 32), "sram.rdata": ("In", 32),
        "dbg.ctx": ("Out", 3), "dbg.reg": ("Out", 5), "dbg.state": ("In", 3),
        "dbg.pc": ("In", 32), "dbg.retired": ("In", 64), "dbg.x": ("In", 32),
        **{f"dbg.counters.{n}": ("In", 64)
           for n in ("compute", "sync", "exchange", "halted", "retired", "macs", "engine")},
        "fault.valid": ("In", 1), "fault.xchg": ("In", 1), "fault.context": ("In", 3),
        "fault.cause": ("In", 5), "fault.pc": ("In", 32), "fault.addr": ("In", 32),
        "xprog": ("In", 32)}
    assert _members(itf.ExchangeLinkSignature(SMALL)) == {
        "send": ("Out", 32), "src": ("Out", 2), "data": ("In", 32)}
    assert _members(itf.MatrixEngineSignature(SMALL)) == {
        "m_mem": ("Out", 1), "accept": ("Out", 1), "desc": ("Out", 32), "ctx": ("Out", 3),
        "pc": ("Out", 32), "busy": ("In", 1), "active": ("In", 1), "macs": ("In", 8),
        "fault.valid": ("In", 1), "fault.xchg": ("In", 1), "fault.context": ("In", 3),
        "fault.cause": ("In", 5), "fault.pc": ("In", 32), "fault.addr": ("In", 32),
        "fault_now": ("In", 1)}
    # 64 KiB: 13-bit word index; a write is up to two 8-byte words (§12 "Engine cycles":
    # ENGINE_WRITE_WORDS = 2): 2 · 64 data bits, 2 · 8 byte-mask bits
    assert _members(itf.EngineSramSignature(SMALL)) == {
        "rd_en": ("Out", 1), "rd_addr": ("Out", 13), "rd_data": ("In", 64),
        "wr_en": ("Out", 1), "wr_addr": ("Out", 13), "wr_addr1": ("Out", 13), "wr_data": ("Out", 128),
        "wr_mask": ("Out", 16)}


def test_enum_members_have_the_enum_as_shape():
    assert itf.FaultSignature(SMALL).members["cause"].shape is FaultCause
    assert itf.DebugSignature(SMALL).members["state"].shape is ContextState
    assert itf.AXI4LiteSignature().members["bresp"].shape is itf.AxiResp


@pytest.mark.parametrize("make, exc, match", [
    (lambda: itf.FaultSignature(4), TypeError, "FaultSignature needs an ArrayConfig, not 4"),
    (lambda: itf.TraceSignature(SMALL, lanes=0), ValueError, "lanes must be an int ≥ 1, not 0"),
    (lambda: itf.MemorySignature(addr_width=True), ValueError, "addr_width must be an int"),
    (lambda: itf.AXI4LiteSignature(data_width=16), ValueError,
     "data_width must be 32 or 64, not 16"),
    (lambda: Variant(divider=1), TypeError, "divider must be a bool, not 1"),
    (lambda: HostPort("small"), TypeError, "HostPort needs an ArrayConfig"),
])
def test_bad_parameters(make, exc, match):
    with pytest.raises(exc, match=match):
        make()


def test_signature_equality_is_structural_per_parameter():
    assert itf.FaultSignature(SMALL) == itf.FaultSignature(ArrayConfig(tiles=2, contexts=8))
    assert itf.FaultSignature(SMALL) != itf.FaultSignature(ArrayConfig(tiles=2, contexts=9))
    assert itf.MemorySignature() != itf.MemorySignature(addr_width=16)
    assert itf.AXI4LiteSignature().flip() == itf.AXI4LiteSignature().flip()
    # the engine's SRAM port depends on the SRAM size only (docs/rtl.md: word index of
    # sram_addr_bits - 3 bits): 64 KiB (13 bits) equals 64 KiB with another N and T, and
    # differs from 16 KiB (11 bits). Kills mutant M02c44f (`and` -> `or` in its __eq__).
    k16 = ArrayConfig(tiles=1, contexts=6, sram_bytes=16 * 1024)
    assert _members(itf.EngineSramSignature(k16))["rd_addr"] == ("Out", 11)
    assert itf.EngineSramSignature(SMALL) == itf.EngineSramSignature(
        ArrayConfig(tiles=2, contexts=8, sram_bytes=SMALL.sram_bytes))
    assert itf.EngineSramSignature(SMALL) != itf.EngineSramSignature(k16)
    assert itf.EngineSramSignature(SMALL) != itf.FaultSignature(SMALL)


def test_core_interface_is_declared_once():
    core, stub = Core(SMALL, 1), StubCore(SMALL, 1)
    assert core.signature == stub.signature == CoreSignature(SMALL)
    assert core.variant == CONTRACT
    # the core reports faults (the instruction's and the matrix engine's apart) and keeps no
    # record of its own (the tile's fault record does)
    names = set(_members(core.signature))
    assert {"fault.valid", "fault.cause", "efault.valid", "efault.pc", "fault_now"} <= names
    assert not any(n.startswith(("dbg_fault", "dbg.fault")) for n in names)
    for obj in (core, stub):
        obj._MustUse__silence = True


def test_host_port_owns_one_port_per_tile():
    hp = HostPort(SMALL)                    # no tiles needed: it drives only its own ports
    hp._MustUse__silence = True
    assert len(hp.tiles) == SMALL.tiles
    assert hp.signature.members["tiles"] == wiring.Out(itf.HostTileSignature(SMALL)).array(4)
    assert hp.signature.members["s_axil"] == wiring.In(itf.AXI4LiteSignature())


def test_top_port_names_are_the_documented_ones():
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16 * 1024)
    dut = Array(cfg)
    ports = top_ports(dut)
    axil = ("awaddr awprot awvalid awready wdata wstrb wvalid wready bresp bvalid bready "
            "araddr arprot arvalid arready rdata rresp rvalid rready").split()
    trace = "valid context pc insn rd value st_mask st_addr st_data".split()
    assert sorted(ports) == sorted([f"s_axil_{n}" for n in axil] + ["done"]
                                   + [f"trace_{n}" for n in trace])
    assert len(ports["trace_valid"][0]) == 2 and len(ports["trace_context"][0]) == 6  # 2 tiles x context_bits 3 (T = 6)
    assert len(ports["s_axil_bresp"][0]) == 2 and len(ports["s_axil_wstrb"][0]) == 4
    dut._MustUse__silence = True
    for t in dut.tiles:
        for part in (t, t.core, t.engine, t.sram, t.fault, *t.sram.banks):
            part._MustUse__silence = True
