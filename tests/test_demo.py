"""`tessera demo`: the int8 digits network on the array.

Expected values come from the numpy int8 reference (`QuantizedMLP.forward_int8`, built only
from golden_model.kernels) and the dataset labels, never from the backend under test.
"""

import json

import numpy as np
import pytest

from tessera import backends
from tessera.spec.config import preset
from tessera.cli.demo import JSON_KEYS, DemoError, run_digits_demo
from tessera.toolchain.models.digits import load_digits_model, load_digits_split
from tessera.toolchain.models.digits_graph import build_digits_graph, fit_batch, max_batch

from helpers.cli import run_cli


@pytest.fixture(scope="module", params=[32, 0], ids=["engine", "dot4"])
def model_report(tmp_path_factory, request):
    out = tmp_path_factory.mktemp("demo")
    lines = []
    rep = run_digits_demo(preset("small").replace(engine_macs=request.param), backend="model",
                          images=8, out_dir=out,
                          json_out=out / "demo.json", profile=True, progress=False,
                          out=lines.append)
    return rep, lines, out


def test_model_backend_matches_reference_and_json(model_report):
    rep, lines, out = model_report
    assert rep["exit_code"] == 0 and rep["match"] is True, "\n".join(lines)
    d = json.loads((out / "demo.json").read_text())
    for k in JSON_KEYS:
        assert k in d, k
    assert d["images"] == 8
    # accuracies recomputed here from the labels and the numpy reference
    q = load_digits_model()
    _, x_te, _, y_te = load_digits_split(q.config)
    ref = q.forward_int8(x_te[:8].astype(np.int64))
    assert d["accuracy_int8"] == pytest.approx(float((ref.argmax(1) == y_te[:8]).mean()))
    assert d["accuracy_float"] == pytest.approx(
        float((q.forward_float(x_te[:8]).argmax(1) == y_te[:8]).mean()))
    assert d["accuracy_backend"] == d["accuracy_int8"]
    # useful MACs per image = 64*32 + 32*10; utilisation = MACs / (peak x 4 tiles x cycles),
    # peak = the engine's P, or 4 (one dot4 per cycle) without an engine
    assert d["useful_macs"] == 8 * (64 * 32 + 32 * 10)
    peak = d["config"]["engine_macs"] or 4
    assert d["peak_macs_per_cycle_per_tile"] == peak
    assert d["matrix_engine"] is (peak != 4)
    assert d["mac_utilization"] == pytest.approx(d["useful_macs"] / (4 * peak * d["cycles"]))
    assert d["cycles_per_image"] == pytest.approx(d["cycles"] / 8)
    assert 0 < d["exchange_share"] < 0.5 and 0 <= d["sync_share"] < 0.1
    # the batch is padded to a multiple of the tile count: hardware MACs count every row
    assert d["macs"] == d["batch"] * (64 * 32 + 32 * 10)
    assert any("match: yes" in ln for ln in lines)
    assert any("accuracy" in ln and "int8 reference" in ln for ln in lines)


def test_model_backend_profile_files(model_report):
    rep, _, out = model_report
    png, page, js = (out / "profile.png", out / "profile.html", out / "profile.json")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    text = page.read_text()
    assert "data:image/png;base64," in text and "<table>" in text
    assert "http://" not in text and "https://" not in text      # self-contained
    prof = json.loads(js.read_text())
    cycles = prof["cycles"]
    for t in prof["tiles"]:
        segs = t["segments"]
        # the timeline tiles the whole run, without gaps or overlaps
        assert segs[0]["start"] == 0 and segs[-1]["end"] == cycles
        assert all(a["end"] == b["start"] for a, b in zip(segs, segs[1:]))
        # exchange segments add up exactly to the hardware exchange counter
        assert sum(s["end"] - s["start"] for s in segs if s["kind"] == "exchange") == \
            t["counters"]["exchange"]
    # two exchange phases (weight all-gathers of fc1 and fc2) -> 3 supersteps
    assert len(prof["supersteps"]) == 3
    assert [r["name"] for r in prof["exchanges"]] == ["copy0", "copy1"]
    cats = set(prof["memory"][0])
    assert {"code", "control", "tensors", "exchange", "stacks", "free"} <= cats


def test_digits_graph_batches_and_padding():
    """Two runs of one compiled program; a zero padding image is harmless."""
    q = load_digits_model()
    _, x_te, _, _ = load_digits_split(q.config)
    cfg = preset("small")
    dg = build_digits_graph(q, cfg, 4)
    eng = dg.engine("model")
    for lo in (0, 4):
        X = q.quantize_input(x_te[lo:lo + 4])
        logits, res = dg.run_batch(eng, X)
        np.testing.assert_array_equal(logits, q.forward_int8(X))
    assert max_batch(cfg) % cfg.tiles == 0 and max_batch(cfg) >= cfg.tiles
    # fit_batch: the fitted batch compiles, on the 16 KiB tiny preset too
    for name in ("tiny", "small"):
        c = preset(name)
        b = fit_batch(q, c)
        assert b % c.tiles == 0 and b >= c.tiles
        dgb = build_digits_graph(q, c, b)
        assert min(m["free"] for m in dgb.compiled.memory) >= 0
    with pytest.raises(ValueError, match="int8"):
        dg.run_batch(eng, np.zeros((4, 64), dtype=np.int32))
    with pytest.raises(ValueError, match="batch"):
        build_digits_graph(q, cfg, 0)


def test_mismatch_is_detected_and_exit_3():
    @backends.register("digits-corrupt-test")
    def corrupt(config, image, max_cycles, *, preload=(), readback=()):
        res, data = backends.get("model")(config, image, max_cycles, preload=preload,
                                          readback=readback)
        data = [bytes(b ^ 0x5A for b in d) if i == 0 else d for i, d in enumerate(data)]
        return res, data
    lines = []
    rep = run_digits_demo(preset("small"), backend="digits-corrupt-test", images=4,
                          compare_model=False, progress=False, out=lines.append)
    assert rep["exit_code"] == 3 and rep["match"] is False
    assert rep["mismatches"] and any("match: NO" in ln for ln in lines)


def test_bad_arguments():
    with pytest.raises(DemoError, match="images"):
        run_digits_demo(preset("small"), backend="model", images=0, progress=False)
    with pytest.raises(DemoError, match="images"):
        run_digits_demo(preset("small"), backend="model", images=10_000, progress=False)
    with pytest.raises(DemoError, match="does not fit"):
        run_digits_demo(preset("small"), backend="model", images=8, batch=4000, progress=False)


def _tessera(*args, cwd=None):
    return run_cli(*args, cwd=cwd, timeout=600)


def test_cli_demo_model_json_and_errors(tmp_path):
    js = tmp_path / "d.json"
    r = _tessera("demo", "--model", "mlp", "--backend", "model", "--images", "4",
                 "--no-progress", "--json", str(js))
    assert r.returncode == 0, r.stdout + r.stderr
    d = json.loads(js.read_text())
    assert set(JSON_KEYS) <= set(d) and d["match"] is True and d["images"] == 4
    r = _tessera("demo", "--model", "mlp", "--backend", "model", "--images", "9999",
                 "--no-progress")
    assert r.returncode == 2 and "images" in r.stderr and "Traceback" not in r.stderr


def test_cli_demo_default_is_the_onnx_cnn(tmp_path):
    """`tessera demo` (what `make demo` runs, here on the model with 8 images) is the 90 %
    block-sparse 8x8 digits CNN from ONNX, checked element by element against onnxruntime,
    on the matrix engine, compared with the dense 8x8 model (tests/test_demo_sparse.py)."""
    from tessera.cli.demo_cnn import JSON_KEYS as CNN_KEYS
    js = tmp_path / "c.json"
    r = _tessera("demo", "--backend", "model", "--images", "8", "--no-progress",
                 "--json", str(js))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "digits CNN from ONNX" in r.stdout and "match: yes" in r.stdout
    d = json.loads(js.read_text())
    assert set(CNN_KEYS) <= set(d) and d["match"] is True and d["images"] == 8
    assert d["reference_mismatches"] == 0 and d["engine"] == "auto"
    assert d["config"]["engine_macs"] > 0
    assert d["arch"] == "c3:8,c3:48*,c3:56*,c2s2:16*,k4" and d["sparsity"] == 0.9
    assert d["dense"]["match"] is True and "sparse vs dense:" in r.stdout
    r = _tessera("demo", "--backend", "model", "--images", "0", "--no-progress")
    assert r.returncode == 2 and "images" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.rtl
def test_reduced_demo_on_rtl(tmp_path):
    """The default-suite RTL check: 4 images, logits == numpy reference == golden model
    (dot4 layers, engine_macs = 0; the engine demo on the RTL is the slow test below)."""
    lines = []
    rep = run_digits_demo(preset("small").replace(engine_macs=0), backend="rtl", images=4,
                          out_dir=tmp_path,
                          json_out=tmp_path / "rtl.json", profile=True, progress=False,
                          out=lines.append)
    assert rep["exit_code"] == 0, "\n".join(lines)
    assert rep["match_reference"] is True and rep["match_model"] is True
    assert rep["accuracy_backend"] == rep["accuracy_int8"]
    assert (tmp_path / "profile.png").stat().st_size > 10_000
    assert (tmp_path / "profile.html").stat().st_size > 10_000


@pytest.mark.rtl
def test_reduced_engine_demo_on_rtl(tmp_path):
    """The digits MLP on the matrix engine on the RTL."""
    rep = run_digits_demo(preset("small"), backend="rtl", images=4, out_dir=tmp_path,
                          progress=False, out=lambda *_: None)
    assert rep["matrix_engine"] and rep["match_reference"] and rep["match_model"]
