"""Compiled C/asm programs run on the golden model through the toolchain's exec path.

Expected values are computed independently here (numpy, or by hand from the spec), never
taken from the model's output.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from tessera import backends
from tessera.spec.config import ArrayConfig, PRESETS
from tessera.spec.result import COUNTER_NAMES, RunStatus
from tessera.toolchain.cc import compile_program
from tessera.toolchain.demo import run_demo
from tessera.toolchain.elf import load_elf
from tessera.toolchain.run import exec_program

from helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"


def _model_available():
    try:
        from tessera.golden_model import Array  # noqa: F401
        return True
    except ImportError:
        return False


pytestmark = pytest.mark.skipif(not _model_available(),
                                reason="tessera.golden_model.Array not available yet")

M32 = 0xFFFFFFFF


def tessera(*args):
    return run_cli(*args, timeout=600)


def build(tmp_path, name, text, **kw):
    src = tmp_path / name
    src.write_text(text)
    return compile_program([src], tmp_path / (src.stem + ".elf"), **kw)


def codes(result):
    return [[c.exit_code for c in t.contexts] for t in result.tiles]


def test_bare_asm_exit_codes(tmp_path):
    elf = compile_program([EXAMPLES / "hello.S"], tmp_path / "hello.elf", no_crt=True)
    cfg = PRESETS["small"]
    res, _ = exec_program(elf, cfg, max_cycles=1000)
    assert RunStatus(res.status) == RunStatus.HALTED
    assert codes(res) == [[t * 16 + c for c in range(cfg.contexts)] for t in range(cfg.tiles)]
    # 5 instructions per context, all contexts issue in consecutive slots: the last
    # context's ecall is its 5th instruction, issued at cycle 4*T + (T-1); every context is
    # HALTED from 5 cycles later and the run ends D = ceil(log2 4) + 2 = 4 cycles after that
    # (spec §4, §7, contract v2).
    T = cfg.contexts
    assert res.cycles == 4 * T + (T - 1) + 5 + 4
    for t in res.tiles:
        assert t.counters["retired"] == 5 * T
        assert all(c.retired == 5 for c in t.contexts)


def test_csrs_stack_and_counters_from_c(tmp_path):
    elf = build(tmp_path, "csr.c", """
#include <tessera.h>
uint32_t info[16][8];
int main(void) {
    uint32_t c = tsr_context_id();
    volatile uint32_t local = 0;
    uint64_t c0 = tsr_cycle();
    uint64_t i0 = tsr_instret();
    info[c][0] = tsr_tile_id();
    info[c][1] = c;
    info[c][2] = tsr_tile_count();
    info[c][3] = tsr_context_count();
    info[c][4] = tsr_sram_bytes();
    info[c][5] = (uint32_t)(uintptr_t)&local;
    info[c][6] = (uint32_t)(tsr_cycle() - c0);
    info[c][7] = (uint32_t)(tsr_instret() - i0);
    return (int)(tsr_tile_id() * 100 + c);
}
""")
    cfg = ArrayConfig(tiles=3, contexts=7, sram_bytes=32 * 1024, name="t3")     # T >= 6
    img = load_elf(elf)
    addr = img.symbols["info"]
    res, mem = exec_program(img, cfg, max_cycles=20000,
                            readback=[(t, addr, 16 * 8 * 4) for t in range(cfg.tiles)])
    assert RunStatus(res.status) == RunStatus.HALTED
    assert codes(res) == [[t * 100 + c for c in range(7)] for t in range(3)]
    for t in range(3):
        info = np.frombuffer(mem[t], dtype="<u4").reshape(16, 8)
        for c in range(7):
            assert list(info[c, :5]) == [t, c, 3, 7, 32 * 1024]
            top = 32 * 1024 - c * 1024           # crt0: sp = sram_bytes - context_id * 1 KiB
            assert top - 1024 <= info[c, 5] < top
            assert info[c, 6] > 0 and info[c, 6] % 7 == 0   # cycle CSR = issue cycle; slots T apart
            assert info[c, 7] > 0                           # instret grows
        assert not info[7:].any()
    for t in res.tiles:
        cnt = t.counters
        assert cnt["compute"] + cnt["sync"] + cnt["exchange"] + cnt["halted"] == res.cycles
        assert cnt["retired"] == sum(c.retired for c in t.contexts)
        assert cnt["macs"] == 0


def test_dot4_through_header_matches_numpy(tmp_path):
    rng = np.random.default_rng(7)
    a = rng.integers(-128, 128, 64, dtype=np.int8)
    b = rng.integers(-128, 128, 64, dtype=np.int8)

    def words(x):
        return ", ".join(f"{w:#010x}u" for w in np.frombuffer(x.tobytes(), dtype="<u4"))
    elf = build(tmp_path, "dot.c", f"""
#include <tessera.h>
const uint32_t A[16] = {{ {words(a)} }};
const uint32_t B[16] = {{ {words(b)} }};
int main(void) {{
    uint32_t c = tsr_context_id();
    int32_t acc = (c == 2) ? 0x7FFFFF00 : 0;
    if (c > 2) return 0;
    for (int i = 0; i < 16; i++)
        acc = (c == 1) ? tsr_dot4su(acc, A[i], B[i]) : tsr_dot4(acc, A[i], B[i]);
    return acc;
}}
""")
    res, _ = exec_program(elf, PRESETS["small"], max_cycles=50000)
    assert RunStatus(res.status) == RunStatus.HALTED
    ss = int((a.astype(np.int64) * b.astype(np.int64)).sum())
    su = int((a.astype(np.int64) * b.view(np.uint8).astype(np.int64)).sum())
    for t in res.tiles:
        got = [c.exit_code for c in t.contexts]
        assert got[0] == ss & M32
        assert got[1] == su & M32
        assert got[2] == (0x7FFFFF00 + ss) & M32
        assert got[3:] == [0] * (len(got) - 3)
        assert t.counters["macs"] == 3 * 16 * 4


def test_crt0_zeroes_bss_but_not_noinit(tmp_path):
    elf = build(tmp_path, "bss.c", """
#include <tessera.h>
uint32_t zeroed[64];
__attribute__((section(".noinit"))) uint32_t kept;
int main(void) {
    uint32_t c = tsr_context_id(), acc = 0;
    if (c == 1) { for (int i = 0; i < 64; i++) acc |= zeroed[i]; return acc; }
    if (c == 2) return kept;
    return 7;
}
""")
    img = load_elf(elf)
    lo, hi = img.symbols["__bss_start"], img.symbols["__bss_end"]
    assert lo <= img.symbols["zeroed"] and img.symbols["zeroed"] + 256 <= hi
    cfg = PRESETS["small"]
    junk = [(t, lo, b"\xA5" * (hi - lo)) for t in range(cfg.tiles)]
    junk += [(t, img.symbols["kept"], b"\x5A\xA5\x5A\xA5") for t in range(cfg.tiles)]
    res, mem = exec_program(img, cfg, max_cycles=50000, preload=junk,
                            readback=[(0, lo, hi - lo)])
    assert RunStatus(res.status) == RunStatus.HALTED
    for t in res.tiles:
        got = [c.exit_code for c in t.contexts]
        assert got[1] == 0                 # bss seen zeroed by another context after sync TILE
        assert got[2] == 0xA55AA55A       # .noinit keeps the host's data
        assert got[0] == 7
    assert mem[0] == bytes(hi - lo)


@pytest.mark.parametrize("tiles,latency", [(4, 3), (5, 2), (3, 6)])      # L >= 2
def test_ring_shift_in_c(tmp_path, tiles, latency):
    elf = compile_program([EXAMPLES / "ring.c"], tmp_path / "ring.elf",
                          defines=[f"TSR_XLATENCY={latency}"])
    cfg = ArrayConfig(tiles=tiles, contexts=6, exchange_latency=latency)
    res, _ = exec_program(elf, cfg, max_cycles=50000)
    assert RunStatus(res.status) == RunStatus.HALTED
    for t in res.tiles:
        assert t.contexts[0].exit_code == ((t.tile - 1) % tiles) * 7 + 1
        assert [c.exit_code for c in t.contexts[1:]] == [0] * 5
        # the exchange phase lasted: send, idle L-1, recv, end = L + 2 cycles
        assert t.counters["exchange"] == latency + 2


def test_fault_and_timeout_exit_3(tmp_path):
    brk = build(tmp_path, "brk.S", """
    .section .text.start, "ax"
    .globl _start
_start:
    nop
    ebreak
""", no_crt=True)
    out = tmp_path / "f.json"
    r = tessera("exec", brk, "--preset", "tiny", "--json", out)  # T = 6
    assert r.returncode == 3, r.stderr
    assert "Traceback" not in r.stderr and "fault" in r.stdout
    d = json.loads(out.read_text())
    assert d["status"] == "fault"
    f = d["tiles"][0]["fault"]
    # context 0 issues ebreak first, at cycle T (its second slot), visible from T + 5; the
    # other contexts' ebreaks (T + 1 .. T + 5) are recorded behind it; cycles = T + 5 + D(1)
    assert f == {"context": 0, "cause": "breakpoint", "pc": 4, "addr": 4}
    assert d["cycles"] == PRESETS["tiny"].contexts + 5 + 2

    loop = build(tmp_path, "loop.c", "int main(void){ for(;;) { __asm__ volatile(\"\"); } }\n")
    r = tessera("exec", loop, "--preset", "tiny", "--max-cycles", "500", "--json", out)
    assert r.returncode == 3, r.stderr
    d = json.loads(out.read_text())
    assert d["status"] == "timeout" and d["cycles"] == 500
    assert all(c["state"] == "running" for c in d["tiles"][0]["contexts"])


def test_exec_cli_json_schema(tmp_path):
    elf = tmp_path / "ring.elf"
    r = tessera("cc", EXAMPLES / "ring.c", "-o", elf, "-DTSR_XLATENCY=3")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "r.json"
    r = tessera("exec", elf, "--preset", "small", "--json", out)
    assert r.returncode == 0, r.stderr
    assert "status: halted" in r.stdout and "tile 0: exit codes [22, 0, 0, 0, 0, 0]" in r.stdout
    d = json.loads(out.read_text())
    assert set(d) == {"status", "cycles", "config", "not_arrived", "tiles"}
    assert d["config"] == PRESETS["small"].to_dict() and d["not_arrived"] == []
    assert len(d["tiles"]) == 4
    for i, t in enumerate(d["tiles"]):
        assert set(t) == {"tile", "counters", "fault", "contexts"} and t["tile"] == i
        assert set(t["counters"]) == set(COUNTER_NAMES) and t["fault"] is None
        assert sum(t["counters"][k] for k in ("compute", "sync", "exchange", "halted")) \
            == d["cycles"]
        assert len(t["contexts"]) == 6
        for j, c in enumerate(t["contexts"]):
            assert set(c) == {"context", "state", "pc", "exit_code", "retired", "regs"}
            assert c["context"] == j and c["state"] == "halted"
            assert len(c["regs"]) == 32 and c["regs"][0] == 0
            assert all(0 <= v <= M32 for v in c["regs"])
            assert c["regs"][10] == c["exit_code"]          # a0 at the ecall
        assert t["contexts"][0]["exit_code"] == ((i - 1) % 4) * 7 + 1
    # --json - prints the same JSON on stdout (summary on stderr)
    r = tessera("exec", elf, "--preset", "small", "--json", "-")
    assert r.returncode == 0 and json.loads(r.stdout) == d and "status: halted" in r.stderr


def test_demo_cli_matches():
    r = tessera("demo", "--program", "vecsum")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "match: yes" in r.stdout and "cycles:" in r.stdout and "macs" in r.stdout


def test_demo_other_config_and_mismatch_detection():
    lines = []
    cfg = ArrayConfig(tiles=3, contexts=6, sram_bytes=16 * 1024, exchange_latency=2)
    assert run_demo(cfg, words_per_tile=40, out=lines.append) == 0, "\n".join(lines)

    @backends.register("corrupting-test")
    def corrupt(config, image, max_cycles, *, preload=(), readback=()):
        res, data = backends.get("model")(config, image, max_cycles, preload=preload,
                                          readback=readback)
        res.tiles[1].contexts[0].exit_code ^= 1
        return res, data
    lines = []
    assert run_demo(cfg, words_per_tile=40, backend="corrupting-test", out=lines.append) == 3
    assert any("match: NO" in ln for ln in lines)


def test_tsr_halt_and_main_return(tmp_path):
    elf = build(tmp_path, "halt.c", """
#include <tessera.h>
static void deep(uint32_t c) { if (c == 1) tsr_halt(0xC0DE0000u | tsr_tile_id()); }
int main(void) { deep(tsr_context_id()); return -1; }
""")
    res, _ = exec_program(elf, PRESETS["small"], max_cycles=20000)
    assert RunStatus(res.status) == RunStatus.HALTED
    for t in res.tiles:
        got = [c.exit_code for c in t.contexts]
        assert got[1] == 0xC0DE0000 | t.tile
        assert got[0] == got[2] == M32            # main's -1 through crt0's ecall
