"""CLI and compiler errors: memory-safe tensor slicing, impossible sizes
rejected at once, one-line CLI errors (exit 2, no traceback), output paths checked before
the run, ELF exchange-latency note, ``tessera cc`` checks, help texts."""

import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tessera.spec.config import ArrayConfig, PRESETS
from tessera.toolchain.graph import Graph, GraphError, map_linearly

from helpers.cli import one_line_error, run_cli

ROOT = Path(__file__).resolve().parents[1]


def tessera(*args, cwd=None, timeout=300):
    return run_cli(*args, cwd=cwd, timeout=timeout)


assert_one_line_error = one_line_error


# -- 1. slicing memory, impossible sizes ------------------------------------------------------

def test_slices_share_one_index_array():
    g = Graph(PRESETS["gc2_like"])
    v = g.add_variable("x", (1216, 1024), "int8", map_linearly(grain=1024))
    rows = [v[i] for i in range(8)]
    # basic slices are views of one shared index array, not fresh aranges per slice
    whole = v.tensor().index
    assert all(np.shares_memory(whole, r.index) for r in rows)
    assert rows[3].index[0] == 3 * 1024 and rows[3].index[-1] == 4 * 1024 - 1
    assert not v.tensor().index.flags.writeable


def test_slicing_every_tile_is_linear_in_memory():
    # 1216 tiles each slicing its row of a 1216 x 1024 variable: the old code allocated an
    # arange of the whole variable (10 MB) per slice, ~12 GB in total.
    g = Graph(PRESETS["gc2_like"])
    v = g.add_variable("x", (1216, 1024), "int8", map_linearly(grain=1024))
    tracemalloc.start()
    views = [v[t] for t in range(1216)]
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(views) == 1216
    assert peak < 64 * 1024 * 1024, peak        # one 10 MB index array plus small views
    iv, off = views[700].contiguous_interval("test")
    assert iv.tile == 700 and off == 0


def test_tensor_bigger_than_array_rejected_at_once():
    cfg = ArrayConfig(tiles=4, sram_bytes=16 * 1024)       # 64 KiB in total
    g = Graph(cfg)
    with pytest.raises(GraphError, match=r"out of memory: tensor 'huge'.*65537 bytes.*65536"):
        g.add_variable("huge", 65537, "uint8", map_linearly())
    # exactly the array's capacity is not rejected by the quick check
    g.add_variable("full", (4, 16 * 1024), "uint8", map_linearly(grain=16 * 1024))
    # ... but nothing else fits on those tiles now
    with pytest.raises(GraphError, match=r"tensor 'more' puts 4 bytes on tile 0.*16388 bytes"):
        g.add_variable("more", 1, "int32", 0)


def test_cli_run_impossible_matmul_is_fast():
    r = tessera("run", "matmul", "--m", "4096", "--k", "4096", "--n", "4096", timeout=60)
    assert_one_line_error(r, "tensor 'a'", "out of memory")


# -- 2/3. RTL limits checked before anything is built ------------------------------------------

@pytest.fixture(scope="module")
def elfs(tmp_path_factory):
    d = tmp_path_factory.mktemp("trial")
    out = {}
    for lat in (3, 5):
        out[lat] = d / f"ring{lat}.elf"
        r = tessera("cc", ROOT / "examples" / "ring.c", "-o", out[lat], "--xlatency", lat)
        assert r.returncode == 0, r.stderr
    out["hello"] = d / "hello.elf"
    r = tessera("cc", ROOT / "examples" / "hello.S", "-o", out["hello"], "--no-crt")
    assert r.returncode == 0, r.stderr
    return out


def test_rtl_too_many_tiles_one_line(elfs):
    r = tessera("exec", elfs[3], "--preset", "gc2_like", "--backend", "rtl", timeout=60)
    assert_one_line_error(r, "1216 tiles is too large for RTL generation (at most 256")
    r = tessera("demo", "--preset", "gc2_like", "--no-progress", timeout=60)   # default rtl
    assert_one_line_error(r, "1216 tiles is too large")
    from tessera.tb.runner import RtlRunError, build_array
    with pytest.raises(RtlRunError, match="1216 tiles is too large"):
        build_array(PRESETS["gc2_like"])


def test_waves_fst_without_lz4_is_one_line(elfs, monkeypatch):
    import tessera.tb.runner as runner
    monkeypatch.setattr(runner, "_LZ4_OK", False)
    with pytest.raises(runner.RtlRunError, match="--waves vcd or install liblz4-dev"):
        runner.build_array(PRESETS["small"], waves="fst")
    monkeypatch.setattr(runner, "_LZ4_OK", None)
    if not runner.lz4_available():       # this machine: the CLI says so before building
        r = tessera("exec", elfs[3], "--backend", "rtl", "--waves", "fst", timeout=60)
        assert_one_line_error(r, "lz4.h", "--waves vcd")


def test_prune_runs_keeps_newest(tmp_path):
    import os
    import time
    from tessera.tb.runner import prune_runs
    now = time.time()
    dirs = []
    for i in range(8):
        d = tmp_path / f"run-{i}"
        d.mkdir()
        (d / "dump.vcd").write_text("x")
        os.utime(d, (now - 1000 + i, now - 1000 + i))     # run-7 newest
        dirs.append(d)
    fresh = tmp_path / "run-fresh"
    fresh.mkdir()                                           # the new run: never deleted
    deleted = prune_runs(tmp_path, keep=3, exclude=fresh, min_age_s=60)
    left = sorted(p.name for p in tmp_path.iterdir())
    # keep=3 counts the new run: the 2 newest old runs survive
    assert left == ["run-6", "run-7", "run-fresh"], left
    assert sorted(d.name for d in deleted) == [f"run-{i}" for i in range(6)]
    young = tmp_path / "run-young"
    young.mkdir()                                           # maybe in use by another process
    prune_runs(tmp_path, keep=1, exclude=fresh, min_age_s=60)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run-fresh", "run-young"]


# -- 4. output paths, broken pipe -----------------------------------------------------------

@pytest.mark.parametrize("args,needle", [
    (["demo", "--backend", "model", "--json", "/nonexistent-dir/r.json"], "--json"),
    (["demo", "--backend", "model", "--profile", "--out", "/proc/nope"], "--out /proc/nope"),
    (["demo", "--backend", "model", "--out", "/proc/nope"], "--out /proc/nope"),
    (["run", "matmul", "--profile", "/proc/nope"], "--profile /proc/nope"),
    (["run", "matmul", "--json", "/nonexistent-dir/r.json"], "directory /nonexistent-dir"),
])
def test_unwritable_outputs_fail_fast(args, needle):
    r = tessera(*args, timeout=60)
    assert_one_line_error(r, needle)
    # refused before the run, not after it: nothing of a run's report was printed
    assert "cycles" not in r.stdout and "match" not in r.stdout, r.stdout


def test_json_to_a_directory_is_rejected(tmp_path, elfs):
    r = tessera("exec", elfs["hello"], "--json", tmp_path)
    assert_one_line_error(r, "is a directory")


def test_broken_pipe_is_quiet(elfs):
    p = subprocess.Popen([sys.executable, "-m", "tessera.cli", "exec", str(elfs["hello"]),
                          "--json", "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=ROOT)
    p.stdout.close()                           # reader gone before anything is written
    err = p.stderr.read().decode()
    p.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


# -- 5. usage errors ------------------------------------------------------------------------

@pytest.mark.parametrize("args,needle", [
    (["cc"], "tessera cc: error: the following arguments are required"),
    (["run", "nosuchkernel"], "tessera run: error: argument kernel: invalid choice"),
    (["exec"], "tessera exec: error:"),
    (["nosuchcommand"], "tessera: error: argument COMMAND"),
    (["run", "matmul", "--m", "0"], "tessera run: error: argument --m: must be positive"),
])
def test_usage_errors_are_one_line(args, needle):
    r = tessera(*args, timeout=60)
    assert_one_line_error(r, needle)
    assert "usage:" not in r.stderr


def test_help_is_full():
    r = tessera("run", "--help", timeout=60)
    assert r.returncode == 0 and "usage:" in r.stdout
    flat = " ".join(r.stdout.split())
    for text in ("simulator: model (default), rtl, or both", "cycle limit of the run",
                 "output channels per input channel", "Shape options: matmul kernels"):
        assert text in flat, text
    r = tessera("cc", "--help", timeout=60)
    for text in ("the ELF to write", "preprocessor macro", "include directory"):
        assert text in r.stdout, r.stdout
    r = tessera("gen", "--help", timeout=60)
    assert "gc2_like is model-only" in " ".join(r.stdout.split())
    r = tessera("demo", "--help", timeout=60)
    assert "implies --profile" in " ".join(r.stdout.split())
    # bench --only lists every benchmark (it left out 'engine')
    from tessera.cli.bench import BENCHMARKS
    r = tessera("bench", "--help", timeout=60)
    assert "comma-separated subset: " + ", ".join(BENCHMARKS) in " ".join(r.stdout.split())


# -- 6. exchange latency recorded in the ELF ------------------------------------------------

def test_elf_records_xlatency(elfs):
    from tessera.toolchain.elf import load_elf
    assert load_elf(elfs[3]).xlatency == (3,)
    assert load_elf(elfs[5]).xlatency == (5,)
    assert load_elf(elfs["hello"]).xlatency == ()          # no exchange: no record


def test_xlatency_mismatch_rejected(elfs):
    r = tessera("exec", elfs[3], "--xlatency", "5", timeout=120)
    assert_one_line_error(r, "compiled for exchange latency 3", "exchange latency 5")
    r = tessera("exec", elfs[5], "--xlatency", "5", timeout=120)
    assert r.returncode == 0, r.stderr
    # ring: tile t receives tile (t-1)'s id*7+1 -> exit code of context 0 (hand values)
    assert "tile 0: exit codes [22, 0, 0, 0, 0, 0]" in r.stdout, r.stdout
    for lat in ("2", "7"):                 # no exchange: any latency (L >= 2, contract v2)
        r = tessera("exec", elfs["hello"], "--xlatency", lat, timeout=120)
        assert r.returncode == 0, r.stderr


def test_xlatency_check_api():
    from tessera.toolchain.elf import Image, Segment, XLatencyMismatch
    img = Image("p.elf", 0, [Segment(0, b"\0" * 4, 4)], {}, (2, 4))
    with pytest.raises(XLatencyMismatch, match="mixed latencies 2/4.*exchange latency 3"):
        img.check_xlatency(ArrayConfig(exchange_latency=3))
    Image("q.elf", 0, [Segment(0, b"\0" * 4, 4)], {}, (3,)).check_xlatency(ArrayConfig())


# -- 7. tessera cc checks -------------------------------------------------------------------

def test_cc_checks(tmp_path):
    src = tmp_path / "s.S"
    src.write_text(".section .text.start\n.globl _start\n_start:\n  ecall\n")
    r = tessera("cc", src, "-o", tmp_path / "s.elf", "-O", "4")
    assert_one_line_error(r, "invalid optimisation level '4'")
    r = tessera("cc", src, "-o", tmp_path / "s.elf")
    assert r.returncode == 2 and "--no-crt" in r.stderr and "Traceback" not in r.stderr
    big = tmp_path / "big.c"
    big.write_text("static char buf[1045000] __attribute__((used));\n"
                   "int main(void){ buf[3] = 1; return buf[3]; }\n")
    r = tessera("cc", big, "-o", tmp_path / "big.elf", "-Os")
    assert r.returncode == 0, r.stderr
    assert "warning:" in r.stderr and "largest tile SRAM" in r.stderr, r.stderr


# -- 9. report wording ----------------------------------------------------------------------

def test_report_wording():
    from tessera.toolchain.kernels.run import format_report
    base = {"kernel": "requantize", "tiles": 1, "contexts": 4, "backend": "model",
            "match": True, "status": "halted", "cycles": 10,
            "phase_cycles": {"compute": 8, "sync": 1, "exchange": 1}, "macs": 0,
            "mac_utilization": 0.0, "compute_utilization": 0.0, "exchange_cycles": 0,
            "exchange_bound": 0, "exchange_bound_met": True, "exchange_phases": 0}
    text = format_report(base)
    assert "macs n/a" in text and "utilisation 0.0%" not in text
    assert "agree" not in text
    assert "model and RTL agree" in format_report(dict(base, backends_agree=True))
    assert "DISAGREE" in format_report(dict(base, backends_agree=False))


def test_exec_timeout_summary_says_states(tmp_path):
    src = tmp_path / "spin.c"
    src.write_text("int main(void){ for (;;) {} }\n")
    r = tessera("cc", src, "-o", tmp_path / "spin.elf")
    assert r.returncode == 0, r.stderr
    r = tessera("exec", tmp_path / "spin.elf", "--preset", "tiny", "--max-cycles", "200")
    assert r.returncode == 3
    assert "tile 0: context states [" in r.stdout and "exit codes" not in r.stdout, r.stdout


def test_gen_lint_summary(tmp_path):
    from tessera.hdl.gen import LINT_WAIVERS
    r = tessera("gen", "--preset", "tiny", "-o", tmp_path, "--lint", timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"lint: clean ({len(LINT_WAIVERS)} waived warning kinds" in r.stdout, r.stdout


def test_demo_bad_arch_is_one_line():
    """``tessera demo --arch`` with a layer list the parser refuses: one line naming --arch
    and the layer, before anything trains or runs."""
    r = tessera("demo", "--backend", "model", "--arch", "c3:8,p2,k8", "--no-progress",
                timeout=60)
    assert_one_line_error(r, "--arch: layer 1 'p2'")
    assert "cycles" not in r.stdout, r.stdout
