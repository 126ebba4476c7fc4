"""`tessera exec --backend rtl --tiles N` (CLI, C program with crt0) gives the same JSON as
`--backend model`, and the values computed by hand; N = 4 in the default suite, 8 and 16
under the slow marker (the 16-tile Verilator build takes ~3 min on the shared 2-core machine).
"""

import json
from pathlib import Path

import pytest

from helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.rtl

PROGRAM = r"""
#include <tessera.h>
#include <stdint.h>

static volatile uint32_t acc[16];

int main(void) {
    uint32_t t = tsr_tile_id(), c = tsr_context_id();
    uint32_t x = t * 1000u + c * 7u;
    for (int i = 0; i < 5; i++) {
        acc[c] += x * (uint32_t)(i + 1);   /* 15 x */
        tsr_sync_array();
    }
    return (int)(acc[c] ^ tsr_tile_count());
}
"""


def tessera(*args):
    return run_cli(*args, timeout=1800)


@pytest.fixture(scope="module")
def elf(tmp_path_factory):
    d = tmp_path_factory.mktemp("exec")
    (d / "p.c").write_text(PROGRAM)
    r = tessera("cc", d / "p.c", "-o", d / "p.elf", "-O2")
    assert r.returncode == 0, r.stderr
    return d / "p.elf"


def _run(elf, n, tmp_path):
    docs = {}
    for backend in ("model", "rtl"):
        out = tmp_path / f"{backend}.json"
        r = tessera("exec", elf, "--tiles", n, "--backend", backend, "--json", out)
        assert r.returncode == 0, (backend, r.stdout, r.stderr)
        docs[backend] = json.loads(out.read_text())
        docs[backend].pop("backend", None)
    from tessera.tb.parity import compare_results
    diffs = compare_results(docs["model"], docs["rtl"])
    assert not diffs, "\n".join(diffs[:30])
    doc = docs["rtl"]
    assert doc["status"] == "halted" and len(doc["tiles"]) == n
    for t in doc["tiles"]:
        for c in t["contexts"]:
            want = (15 * (t["tile"] * 1000 + c["context"] * 7)) ^ n
            assert c["exit_code"] == want, (t["tile"], c["context"])
        assert t["counters"]["exchange"] >= 5          # five ARRAY barriers


def test_exec_rtl_tiles4(elf, tmp_path):
    _run(elf, 4, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("n", [8, 16])
def test_exec_rtl_tiles_slow(elf, tmp_path, n):
    _run(elf, n, tmp_path)
