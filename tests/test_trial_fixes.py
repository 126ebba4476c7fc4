"""Regressions for the fresh-clone trial report: memory-safe tensor slicing, impossible sizes
rejected at once, one-line CLI errors (exit 2, no traceback), output paths checked before
the run, ELF exchange-latency note, ``tessera cc`` checks, help texts."""

import subprocess
import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from tessera.config import ArrayConfig, PRESETS
from toolchain.graph import Graph, GraphError, map_linearly

ROOT = Path(__file__).resolve().parents[1]


def tessera(*args, cwd=None, timeout=300):
    return subprocess.run([sys.executable, "-m", "tessera.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or ROOT, timeout=timeout)


def assert_one_line_error(r, *needles, code=2):
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


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
