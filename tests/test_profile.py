"""tessera.toolchain.profile: decoding the runtime's superstep marks, timeline segments, rendering.

The expected segments below are worked out by hand from the rules in
tessera/toolchain/profile/collect.py's docstring (not from its output)."""

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from tessera.spec.config import ArrayConfig
from tessera.toolchain.profile import ProfileError, build_profile, decode_marks, write_profile

from helpers.cli import run_cli


def _fake(cycles=320):
    cfg = ArrayConfig(tiles=2, contexts=6, sram_bytes=16384, exchange_latency=3)
    compiled = SimpleNamespace(
        config=cfg,
        ops=[("prof", "p"), ("exec", "a"), ("exch", "x"), ("exec", "b")],
        exchanges=[{"name": "x", "cycles": 10, "cycle_bound": 10, "bound_met": True,
                    "words_sent": [3, 0], "words_received": [0, 3]}],
        memory=[{"code": 1000, "control": 100, "tensors": 500, "vertices": 50, "exchange": 40,
                 "stacks": 4096, "used": 5786, "free": 16384 - 5786}] * 2)
    counters = {"compute": 280, "sync": 30, "exchange": 10, "halted": 0, "retired": 200,
                "macs": 64}
    result = SimpleNamespace(cycles=cycles, backend="model",
                             tiles=[SimpleNamespace(counters=dict(counters)) for _ in range(2)])
    # tag = op << 4 | kind; row = count, (tag, cycle) * count, capacity 8
    recs = [(0 << 4 | 0, 12), (1 << 4 | 1, 100), (2 << 4 | 2, 110), (2 << 4 | 3, 150),
            (3 << 4 | 1, 300), (4 << 4 | 15, 310)]
    row = [len(recs)] + [v for r in recs for v in r] + [0] * (2 * (8 - len(recs)))
    return compiled, result, np.array([row, row], dtype=np.int64)


def test_decode_marks():
    _, _, marks = _fake()
    assert decode_marks(marks[0]) == [(0, 0, 12), (1, 1, 100), (2, 2, 110), (2, 3, 150),
                                      (3, 1, 300), (4, 15, 310)]
    with pytest.raises(ProfileError, match="at most"):
        decode_marks([9, 0, 0])
    # the cycle word is unsigned (low 32 bits of the counter), stored in an int32 tensor
    assert decode_marks(np.array([1, 0x11, -1], dtype=np.int32)) == [(1, 1, 0xFFFFFFFF)]


def test_segments_by_hand():
    compiled, result, marks = _fake()
    prof = build_profile(compiled, result, marks, title="t")
    segs = [(s["kind"], s["start"], s["end"], s["superstep"]) for s in prof["tiles"][0]["segments"]]
    assert segs == [
        ("compute", 0, 12, 0),         # crt0 + runtime start
        ("compute", 12, 100, 0),       # compute set a
        ("compute", 100, 110, 0),      # runtime control before sync ARRAY
        # arrive..resume = 40 cycles: exchange = the last 10 (scheduled length); both tiles
        # arrive together, so sync = 0 + S = ceil(log2 2) + 2 = 3; the rest is control
        ("compute", 110, 137, 0),
        ("sync", 137, 140, 0),
        ("exchange", 140, 150, 0),
        ("compute", 150, 300, 1),      # compute set b
        ("compute", 300, 310, 1),      # runtime end
        ("compute", 310, 320, 1),      # return + ecall until the run ends
    ]
    st = prof["supersteps"]
    assert [s["index"] for s in st] == [0, 1]
    assert st[0]["tiles"][0] == {"compute": 137, "sync": 3, "exchange": 10}
    assert st[1]["tiles"][1] == {"compute": 170, "sync": 0, "exchange": 0}
    assert "a" in st[0]["label"] and "b" in st[1]["label"]
    summary = dict(prof["summary"])
    assert summary["supersteps"] == "2"
    # exchange share from the counters: 2 tiles x 10 / (2 x 320)
    assert summary["exchange share"] == f"{10 / 320:.2%}"


def test_mac_utilisation_against_the_tile_peak():
    """The summary's MAC utilisation is the MAC counters' sum over tiles x cycles x the tile's
    peak (ArrayConfig.peak_macs_per_cycle): _fake's 2 tiles count 64 MACs each in 320
    cycles; with the matrix engine (engine_macs = 32, the default) 128 / (2 x 320 x 32) =
    0.625 %, printed 0.6 %; without one the peak is one dot4 per cycle, 4 MACs:
    128 / (2 x 320 x 4) = 5.0 %."""
    compiled, result, marks = _fake()
    summary = dict(build_profile(compiled, result, marks)["summary"])
    assert summary["MAC utilisation (run)"] == "0.6% of 32 MACs/cycle/tile (matrix engine)"
    compiled.config = compiled.config.replace(engine_macs=0)
    summary = dict(build_profile(compiled, result, marks)["summary"])
    assert summary["MAC utilisation (run)"] == "5.0% of 4 MACs/cycle/tile (dot4)"


def test_sync_wait_follows_the_latest_tile():
    """Tile 1 arrives 50 cycles after tile 0: tile 0 waits 50 + S cycles, tile 1 only S."""
    compiled, result, marks = _fake(cycles=400)
    m = marks.copy()
    # tile 1: arrive at 160 (instead of 110), resume 200 for both tiles
    m[1, 6] = 160
    m[0, 8] = m[1, 8] = 200
    prof = build_profile(compiled, result, m)
    sync = [sum(s["end"] - s["start"] for s in t["segments"] if s["kind"] == "sync")
            for t in prof["tiles"]]
    assert sync == [53, 3]
    t0 = [(s["kind"], s["start"], s["end"]) for s in prof["tiles"][0]["segments"]]
    assert ("sync", 137, 190) in t0 and ("exchange", 190, 200) in t0


def test_out_of_order_marks_and_bad_shape():
    compiled, result, marks = _fake()
    bad = marks.copy()
    bad[0, 4] = 5                      # exec-done mark before the start mark
    with pytest.raises(ProfileError, match="out of order"):
        build_profile(compiled, result, bad)
    with pytest.raises(ProfileError, match="shape"):
        build_profile(compiled, result, marks[:1])


def test_without_marks_uses_counters(tmp_path):
    compiled, result, _ = _fake()
    prof = build_profile(compiled, result, None)
    kinds = [(s["kind"], s["end"] - s["start"]) for s in prof["tiles"][1]["segments"]]
    assert kinds == [("compute", 280), ("sync", 30), ("exchange", 10)]


def test_render_and_rerender_cli(tmp_path):
    compiled, result, marks = _fake()
    prof = build_profile(compiled, result, marks, title="fake run")
    paths = write_profile(prof, tmp_path / "a")
    assert paths["png"].read_bytes()[:4] == b"\x89PNG" and paths["png"].stat().st_size > 5000
    page = paths["html"].read_text()
    assert "data:image/png;base64," in page and "fake run" in page and "Supersteps" in page
    assert json.loads(paths["json"].read_text())["cycles"] == 320
    r = subprocess.run([sys.executable, "-m", "tessera.cli", "profile", "--from",
                        str(paths["json"]), "--out", str(tmp_path / "b")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "b" / "profile.png").stat().st_size > 5000
    r = subprocess.run([sys.executable, "-m", "tessera.cli", "profile", "--from",
                        str(tmp_path / "missing.json")], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 2 and "missing.json" in r.stderr and "Traceback" not in r.stderr


def _cli(*args):
    return run_cli(*args, timeout=600)


def test_run_kernel_profile(tmp_path):
    """`tessera run matmul --profile DIR`: marks from the runtime, consistent with counters."""
    r = _cli("run", "matmul", "--m", "8", "--k", "16", "--n", "4", "--profile", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    prof = json.loads((tmp_path / "profile.json").read_text())
    assert (tmp_path / "profile.png").stat().st_size > 5000
    assert len(prof["supersteps"]) == 2          # B broadcast exchange, then the matmul
    for t in prof["tiles"]:
        segs = t["segments"]
        assert segs[-1]["end"] == prof["cycles"]
        assert sum(s["end"] - s["start"] for s in segs if s["kind"] == "exchange") == \
            t["counters"]["exchange"]
        # sync from the marks: the barrier latency S (+ waiting) per barrier; the counter
        # also counts the sync TILE releases, so it is at least as large as ours minus slack
        ours = sum(s["end"] - s["start"] for s in segs if s["kind"] == "sync")
        assert 0 < ours <= t["counters"]["sync"] + 8


def test_profile_subcommand_runs_digits(tmp_path):
    r = _cli("profile", "--backend", "model", "--images", "4", "--no-progress",
             "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    for f in ("profile.png", "profile.html", "profile.json"):
        assert (tmp_path / f).stat().st_size > 1000, f
