"""Host port of the RTL array through cocotbext-axi (architecture §9), and the ``rtl``
backend / ``tessera exec --backend rtl`` giving the same JSON as the model."""

import json
import subprocess
import sys

import pytest

from tessera.toolchain import asm
from tessera.spec.config import PRESETS
from tessera.spec.hostmap import (MAGIC, ContextReg, Ctrl, Status, TileReg, context_reg_addr,
                             sram_addr, tile_reg_addr)

pytestmark = pytest.mark.rtl
TINY = PRESETS["tiny"]
OKAY, SLVERR, DECERR = 0, 2, 3


@pytest.fixture(scope="module")
def tiny_model():
    from tessera.tb.runner import build_array
    return build_array(TINY)


def test_bad_accesses(tiny_model):
    spin = asm.program([asm.addi(5, 0, 7), asm.jal(0, 0)])
    marker = 0x1234ABCD
    ops = [
        "load",
        {"op": "write", "addr": sram_addr(0, 0x200), "data": marker},
        {"op": "read", "addr": Ctrl.MAGIC, "n": 5},
        {"op": "read", "addr": 0x0000_0800},                       # unmapped -> DECERR
        {"op": "write", "addr": 0x0000_0800, "data": 1},           # unmapped -> DECERR
        {"op": "read", "addr": tile_reg_addr(TINY.tiles, 0)},      # no such tile -> DECERR
        "start",
        {"op": "cycles", "n": 50},
        {"op": "read", "addr": Ctrl.STATUS},
        {"op": "write", "addr": sram_addr(0, 0x200), "data": 0x55},  # running -> SLVERR
        "wait",
        {"op": "read", "addr": sram_addr(0, 0x200)},               # unchanged
        {"op": "read", "addr": Ctrl.STATUS},
        {"op": "read", "addr": context_reg_addr(0, 2, ContextReg.REGS + 4 * 5)},
        "collect",
    ]
    out = tiny_model.run({"jobs": [{"name": "axi", "segments": [[0, 0, spin.hex()]],
                                    "max_cycles": 400, "ops": ops}]})
    (job,) = out["jobs"]
    assert job["error"] is None, job["error"]
    a = job["axi"]
    assert a[0]["resp"] == OKAY
    assert a[1] == {"op": "read", "addr": 0, "resp": OKAY,
                    "data": [MAGIC, TINY.tiles, TINY.contexts, TINY.sram_bytes,
                             TINY.exchange_latency]}
    assert a[2]["resp"] == DECERR
    assert a[3]["resp"] == DECERR
    assert a[4]["resp"] == DECERR
    assert a[5]["data"] == [Status.RUNNING] and a[5]["resp"] == OKAY
    assert a[6]["resp"] == SLVERR
    assert a[7] == {"op": "read", "addr": sram_addr(0, 0x200), "resp": OKAY, "data": [marker]}
    assert a[8]["data"] == [Status.TIMEOUT]
    assert a[9]["data"] == [7]                                     # x5 of context 2
    r = job["result"]
    assert r["status"] == "timeout" and r["cycles"] == 400


class _Seg:
    def __init__(self, addr, data):
        self.addr, self.data = addr, data


class _Image:
    def __init__(self, words):
        self.entry = 0
        self.segments = [_Seg(0, asm.program(words))]


def test_backend_rtl_equals_model(tiny_model):
    from tessera.backends import run_program_io
    words = ([asm.csrrs(10, 0xCC1, 0), asm.slli(6, 10, 2), asm.lui(7, 3), asm.add(7, 7, 6),
              asm.sw(10, 0, 7), asm.addi(10, 10, 40), asm.ecall()])
    img = _Image(words)
    # context c stores c at 0x3000 + 4c and exits with 40 + c (tiny: T = 6 contexts)
    rb = [(0, 0x3000, 4 * TINY.contexts)]
    m, md = run_program_io("model", TINY, img, 1000, readback=rb)
    r, rd = run_program_io("rtl", TINY, img, 1000, readback=rb)
    assert r.to_json() == m.to_json()
    assert rd == md == [b"".join(c.to_bytes(4, "little") for c in range(TINY.contexts))]
    assert [c.exit_code for c in r.tiles[0].contexts] == [40 + c for c in range(TINY.contexts)]


def test_cli_exec_rtl_same_json(tmp_path, tiny_model):
    """`tessera exec --backend rtl` on an ELF gives the same JSON as --backend model."""
    try:
        from tessera.toolchain.cc import compile_program
    except ImportError as e:
        pytest.fail(f"toolchain not importable: {e}")
    src = tmp_path / "p.c"
    src.write_text("int main(void){ int s = 0; for (int i = 0; i < 10; i++) s += i; "
                   "return s; }\n")
    elf = tmp_path / "p.elf"
    compile_program([str(src)], str(elf))
    outs = {}
    for be in ("model", "rtl"):
        js = tmp_path / f"{be}.json"
        p = subprocess.run([sys.executable, "-m", "tessera.cli", "exec", str(elf),
                            "--preset", "tiny", "--backend", be, "--json", str(js)],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        outs[be] = json.loads(js.read_text())
    assert outs["rtl"] == outs["model"]
    assert all(c["exit_code"] == 45 for c in outs["rtl"]["tiles"][0]["contexts"])
    p = subprocess.run([sys.executable, "-m", "tessera.cli", "exec", str(elf), "--preset",
                        "tiny", "--backend", "both"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr


@pytest.mark.slow
def test_cli_exec_rtl_waves(tmp_path):
    """--waves builds a tracing model and leaves a VCD behind."""
    from tessera.toolchain.cc import compile_program
    src = tmp_path / "p.c"
    src.write_text("int main(void){ return 7; }\n")
    elf = tmp_path / "p.elf"
    compile_program([str(src)], str(elf))
    p = subprocess.run([sys.executable, "-m", "tessera.cli", "exec", str(elf), "--preset", "tiny",
                        "--backend", "rtl", "--waves", "vcd"], capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr
    line = [x for x in p.stderr.splitlines() if "waves written to" in x]
    assert line, p.stderr
    from pathlib import Path
    vcd = Path(line[0].split("waves written to ")[1].strip())
    assert vcd.exists() and vcd.stat().st_size > 1000
    assert "$enddefinitions" in vcd.read_text(errors="replace")[:200000]


def test_backend_both_detects_mismatch(tiny_model, monkeypatch):
    import tessera.backends as backends
    from tessera.tb.backend import BackendMismatch, run_on_both
    img = _Image([asm.addi(10, 0, 3), asm.ecall()])
    r, _ = run_on_both(TINY, img, 500)                       # agree: returns the RTL result
    assert r.status.value == "halted" and r.tiles[0].contexts[0].exit_code == 3
    real = backends.get("model")

    def skewed(*a, **k):
        res, data = real(*a, **k)
        res.cycles += 1
        return res, data
    monkeypatch.setitem(backends._REGISTRY, "model", skewed)
    with pytest.raises(BackendMismatch, match="cycles: model") as ei:
        run_on_both(TINY, img, 500)
    assert ei.value.exit_code == 3
