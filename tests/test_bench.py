"""Fast tests of the benchmark harness (tessera/bench): exchange benchmark end to end through the
CLI, the hand-checkable helpers, doc rewriting and argument errors."""

import json
from pathlib import Path

import numpy as np
import pytest

from tessera.cli.bench import BENCHMARKS, BenchError, suite
from tessera.cli.bench import exchange as bx
from tessera.cli.bench import sync as bs
from tessera.cli.bench.common import fmt
from tessera.cli import main


def test_cli_bench_exchange_json_and_markdown(tmp_path, capsys):
    out = tmp_path / "b.json"
    plots = tmp_path / "plots"
    rc = main(["bench", "--quick", "--only", "exchange", "--json", str(out), "--plots", str(plots)])
    assert rc == 0
    md = capsys.readouterr().out
    assert "### Goals" in md and "exchange = bound" in md
    assert "`tessera bench --only exchange --quick`" in md
    rep = json.loads(out.read_text())
    (sec,) = rep["sections"]
    assert sec["name"] == "exchange" and sec["error"] is None
    assert len(sec["rows"]) >= 18
    for r in sec["rows"]:
        assert r["slots"] >= r["bound"] >= 1           # never below the lower bound
        assert r["met"] == (r["slots"] == r["bound"])
        if r["kind"] != "kernel (compiled)":
            assert r["cycles"] == r["slots"] + 3 + 1   # K + L + 1 with L = 3
    # unicast patterns are bipartite: König says the bound is always met
    assert all(r["met"] for r in sec["rows"] if r["pattern"] in ("random unicast", "all-to-all",
                                                                "ring shift"))
    assert sec["plots"] == ["bench_exchange.png"]
    assert (plots / "bench_exchange.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_independent_bound_by_hand():
    # tile 0 sends 3 words, tile 1 receives 2, tile 2 receives 2 (one multicast to 1 and 2)
    tr = [(0, 0x100, [(1, 0x800), (2, 0x800)]), (0, 0x104, [(1, 0x804)]),
          (0, 0x108, [(2, 0x804)])]
    assert bx.independent_bound(tr) == 3
    # a destination tile named twice costs its sender two sends
    assert bx.independent_bound([(0, 0x100, [(1, 0x800), (1, 0x804)])]) == 2
    # ring of 4 tiles, 5 words each: every tile sends 5 and receives 5
    assert bx.independent_bound(bx._ring(4, 5)) == 5


def test_check_schedule_rejects_double_send():
    class S:
        def __init__(self, slot, src, dsts):
            self.slot, self.src_tile, self.dsts = slot, src, dsts

    class Sched:
        sends = [S(0, 0, ((1, 0x800),)), S(0, 0, ((2, 0x800),))]
    tr = [(0, 0x100, [(1, 0x800)]), (0, 0x104, [(2, 0x800)])]
    with pytest.raises(BenchError, match="sends twice"):
        bx.check_schedule(Sched, tr)
    Sched.sends = [S(0, 0, ((1, 0x800),)), S(1, 0, ((2, 0x800),))]
    bx.check_schedule(Sched, tr)                       # legal
    Sched.sends = [S(0, 0, ((1, 0x800),))]
    with pytest.raises(BenchError, match="exactly once"):
        bx.check_schedule(Sched, tr)


def test_sync_latency_from_hand_built_registers():
    # 2 tiles x 6 contexts (contract v2): last sync issued at s0 + T = 40 + 6 = 46, visible
    # from 51 = k*; r = k* + D(2) = 54; the contexts resume at 55..60
    regs = np.zeros((2, 6, 32), dtype=np.uint32)
    regs[:, :, 8] = [[30, 31, 40, 33, 34, 35], [29, 35, 36, 37, 38, 39]]
    regs[:, :, 10] = [[55, 56, 57, 58, 59, 60], [60, 55, 56, 57, 58, 59]]
    got = bs.latency_from_regs(regs, 6)
    assert got == dict(t_last=46, release=54, issue_to_release=8, arrival_to_release=3)
    regs[1, :, 10] += 1
    with pytest.raises(BenchError, match="differ between tiles"):
        bs.latency_from_regs(regs, 6)


@pytest.mark.parametrize("n,s", [(1, 2), (4, 4), (5, 5), (16, 6)])
def test_sync_on_model_matches_contract(n, s):
    # architecture §5: D = ceil(log2 N) + 2, computed by hand in the parametrisation
    assert bs._model(n)["arrival_to_release"] == s


def test_parse_only_and_errors(capsys):
    assert suite.parse_only(None) == list(BENCHMARKS)
    assert suite.parse_only("sync, model") == ["model", "sync"]      # run order kept
    with pytest.raises(BenchError, match="unknown benchmark nope"):
        suite.parse_only("model,nope")
    assert main(["bench", "--only", "nope"]) == 2
    assert "unknown benchmark nope" in capsys.readouterr().err


def test_rewrite_doc_keeps_text_outside_markers(tmp_path):
    doc = tmp_path / "perf.md"
    doc.write_text("# Performance\n\n## Golden model\n\nhand-written figures\n")
    suite.rewrite_doc("first table\n", doc)
    text = doc.read_text()
    assert "hand-written figures" in text and "first table" in text
    assert text.count(suite.BEGIN) == 1 and text.count(suite.END) == 1
    doc.write_text(text + "\n## Later section\n\nkept\n")
    suite.rewrite_doc("second table\n", doc)
    text = doc.read_text()
    assert "first table" not in text and "second table" in text
    assert "hand-written figures" in text and "kept" in text


def test_fmt():
    assert fmt(None) == "–"
    assert fmt(True) == "yes"
    assert fmt(1234567) == "1,234,567"
    assert fmt(2.5e6) == "2.5 M"
    assert fmt(0.123456) == "0.123"
    assert fmt(12345.6) == "12,346"


def test_cold_rtl_build_leaves_the_shared_cache_alone(tmp_path, monkeypatch):
    """A full bench's model section failed with 'Verilator build of 64 tiles failed ... (no
    log at .../bench-rtl/array-64t6c-<key>/build.log)': the rtl section of another checkout
    measured a cold build by deleting every ``array-64t6c-*`` directory of the shared user
    cache, including the one being built. A cold build now goes to a new private directory;
    builds of other keys (and of this key) in the cache are not touched."""
    import os
    from tessera.cli.bench import rtl
    from tessera.spec.config import ArrayConfig
    import tessera.tb.runner as runner
    monkeypatch.setenv("TESSERA_CACHE", str(tmp_path))
    monkeypatch.setattr(rtl, "_BUILT", {})
    cfg = ArrayConfig(tiles=4, contexts=6, sram_bytes=64 * 1024)
    shared = rtl.bench_cache()
    others = [shared / "array-4t6c-0123456789abcdef", shared / "array-4t6c-fedcba9876543210"]
    for d in others:
        d.mkdir(parents=True)
        (d / "build_ok.json").write_text("{}")
    seen = []

    def fake_build_array(config):
        d = Path(os.environ["TESSERA_BUILD_DIR"])
        seen.append((config, d, sorted(p.name for p in d.iterdir())))
        return object()
    monkeypatch.setattr(runner, "build_array", fake_build_array)
    model, secs = rtl.build(cfg, cold=True)
    for o in others:
        assert (o / "build_ok.json").exists(), f"{o} was deleted"
    (c, d, content) = seen[0]
    assert c == cfg and content == []                    # built from nothing ...
    assert d.parent == shared and d not in others        # ... in a new directory of its own
    assert rtl.build(cfg)[0] is model                    # later sections reuse this build


def test_exchange_bench_fails_when_the_graph_compiler_fails(monkeypatch):
    """The exchange section's compiled graph-matmul rows: an exception of the graph compiler
    was a note under a section that passed; now the section fails with the reason (the
    pattern rows measured before stay)."""
    def broken(quick):
        raise RuntimeError("compile_graph broke")
    monkeypatch.setattr(bx, "_graph_matmul_phases", broken)
    sec = bx.run(quick=True)
    assert sec.error == ("RuntimeError: graph matmul exchange phases not measured: "
                         "compile_graph broke")
    assert sec.rows and all(r["kind"] != "kernel (compiled)" for r in sec.rows)


def test_json_report_is_written_after_every_section(tmp_path, monkeypatch):
    """A full run takes hours: ``tessera bench --json FILE`` rewrites FILE after every
    section, so a run stopped in a later section leaves the finished ones behind."""
    import sys
    import types
    seen = []

    def first(quick):
        from tessera.cli.bench.common import Section
        return Section("first", "First", "tessera bench --only first", seconds=0.1)

    def second(quick):
        seen.append(json.loads(out.read_text()))       # the file as the second one starts
        raise KeyboardInterrupt                        # the run is stopped here
    for name, fn in (("first", first), ("second", second)):
        mod = types.ModuleType(f"tessera.cli.bench.{name}")
        mod.run = fn
        monkeypatch.setitem(sys.modules, f"tessera.cli.bench.{name}", mod)
    monkeypatch.setattr(suite, "BENCHMARKS", ("first", "second"))
    monkeypatch.setattr("tessera.cli.bench.BENCHMARKS", ("first", "second"))
    out = tmp_path / "r.json"
    assert main(["bench", "--only", "first,second", "--json", str(out)]) == 130  # interrupted
    (rep,) = seen
    assert [s["name"] for s in rep["sections"]] == ["first"] and rep["quick"] is False
    assert json.loads(out.read_text()) == rep


def _compare_rtl_builds():
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "scripts" / "compare_rtl_builds.py"
    spec = importlib.util.spec_from_file_location("compare_rtl_builds", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_compare_rtl_builds_refuses_unfinished_and_mismatched_builds(tmp_path, capsys):
    # scripts/compare_rtl_builds.py: a directory without build_ok.json is no build, and a build
    # of another configuration (here 4 tiles for --tiles 16) must not be timed as 16 tiles
    cmp = _compare_rtl_builds()
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    with pytest.raises(SystemExit) as e:
        cmp.main(["--tiles", "16", str(a), str(b)])
    assert e.value.code == 2
    assert f"{a} is not a finished build (no build_ok.json)" in capsys.readouterr().err
    for d, tiles in ((a, 16), (b, 4)):
        (d / "build_ok.json").write_text(json.dumps({"config": {
            "tiles": tiles, "contexts": 6, "sram_bytes": 65536}}))
    with pytest.raises(SystemExit) as e:
        cmp.main(["--tiles", "16", str(a), str(b)])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert f"{b} was built for" in err and "'tiles': 4" in err
    with pytest.raises(SystemExit) as e:
        cmp.main(["--tiles", "16", "--cycles", "200", "100", str(a), str(a)])
    assert e.value.code == 2
    assert "0 < SHORT < LONG" in capsys.readouterr().err


def test_engine_matmul_step_ceiling_by_hand():
    # §12: a command has 8 + 2C + G·K1 + KB·C + (KB − 1)·J + J·OW + WRITE_DELAY steps
    # (WRITE_DELAY = 10). One tile of the 128×128×128 matmul: 2 commands, C = 4, J = 128,
    # KB = 16, G = 0.
    #   RAW (OW = ⌈4/4⌉ = 1 since the two-word writes of 2026-12-02, 16 bytes a step):
    #     8 + 8 + 64 + 15·128 + 128·1 + 10 = 8 + 8 + 64 + 1920 + 128 + 10 = 2,138 steps (§12's
    #     worked example: RAW and TFLITE alike at C = 4); 2 commands = 4,276 for 2·128·16 =
    #     4,096 stream steps (95.79 %)
    #   TFLITE (OW = 1): 8 + 8 + 64 + 1920 + 128 + 10 = 2,138; 4,096 / 4,276 = 95.79 %
    #   90 % of peak: a compute set of at most ⌊4,096 / 0.9⌋ = 4,551 cycles: 4,551 − 4,276 = 275
    from tessera.cli.bench.engine import matmul_step_ceiling
    c = matmul_step_ceiling()
    assert (c["raw"], c["fused"], c["stream"], c["raw_slack"]) == (2138, 2138, 4096, 275)
    assert c["raw_share"] == pytest.approx(4096 / 4276)
    assert c["fused_share"] == pytest.approx(4096 / 4276)
