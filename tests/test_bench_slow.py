"""Slow: ``tessera bench --quick`` end to end (about 10 minutes on a 2-core machine).

Checks that every benchmark ran, produced its table, goals and plots, and that the figures are
sane (positive rates, consistency relations); no thresholds on absolute times or rates.
"""

import json

import pytest

from tessera.cli.bench import BENCHMARKS
from tessera.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.rtl]


def test_bench_quick_complete_and_sane(tmp_path, capsys):
    out, plots = tmp_path / "bench.json", tmp_path / "img"
    rc = main(["bench", "--quick", "--json", str(out), "--plots", str(plots)])
    md = capsys.readouterr().out
    assert rc == 0
    check_report(json.loads(out.read_text()), md, plots)


def check_report(rep, md, plots):
    """Completeness and sanity of a ``tessera bench --quick`` report (JSON dict, Markdown)."""
    secs = {s["name"]: s for s in rep["sections"]}
    assert list(secs) == list(BENCHMARKS)
    errors = {n: s["error"] for n, s in secs.items() if s["error"]}
    assert not errors, errors
    for s in secs.values():
        assert s["goals"], f"{s['name']} reports no goal"
        assert s["command"].startswith("tessera bench --only ") and s["command"] in md
        for p in s["plots"]:
            assert (plots / p).read_bytes()[:4] == b"\x89PNG"

    model = secs["model"]["rows"]
    assert [r["tiles"] for r in model] == sorted(r["tiles"] for r in model)
    assert model[-1]["tiles"] == 1216
    for r in model:
        assert r["model"] > 0 and r["scalar"] > 0 and r["unicorn"] > 0
        assert r["vs_scalar"] == pytest.approx(r["model"] / r["scalar"])

    rtl = secs["rtl"]["rows"]
    assert [r["tiles"] for r in rtl] == [1, 4, 16]
    for r in rtl:
        assert r["tcps"] == pytest.approx(r["cps"] * r["tiles"])
        assert (r["build_s"] is None and r["tiles"] == 16) or r["build_s"] > 0
        assert r["cycles"] > 0

    for r in secs["sync"]["rows"]:
        assert r["arrival_to_release"] == r["issue_to_release"] - 3
        if r["source"] == "RTL":
            assert r["model_agrees"] is True           # RTL obeys the contract like the model

    k = secs["kernels"]
    for r in k["rows"]:
        assert 0 < r["util_compute"] <= 1 and 0 < r["util_e2e"] <= r["util_compute"]
    assert k["data"]["dot4"]["speedup"] > 1
    sp = k["data"]["sparsity"]
    assert [r["sparsity"] for r in sp] == sorted(r["sparsity"] for r in sp)
    assert sp[-1]["cycles"] < sp[0]["cycles"]          # sparser is faster

    syn = secs["synth"]
    tile = [r for r in syn["rows"] if r["kind"] == "tile"]
    assert tile and tile[0]["lut4"] > 0 and tile[0]["ff"] > 0 and tile[0]["dp16kd"] >= 32
    assert tile[0]["fmax_mhz"] and tile[0]["fmax_mhz"] > 0
    assert tile[0]["variant"] == "contract" and tile[0]["sram_bytes"] == 64 * 1024
    for r in syn["rows"]:                               # cached rows of full-mode runs
        if r["kind"] == "array":
            assert r["tiles"] == 4 and 4 * 20 <= r["dp16kd"] <= 208
            assert r["fmax_mhz"] is None or 0 < r["fmax_mhz"] <= 1000
        if r["variant"] == "nodiv":     # what-if: no divider state (its LUT4 count is ABC9 noise)
            assert r["ff"] < tile[0]["ff"] and r["lutram"] == 0 < tile[0]["lutram"]
