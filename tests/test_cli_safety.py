"""CLI and output safety (each test names the case it covers; each failed on the code before
these checks existed): --version, objdump, exec --trace / --load, outputs never
overwrite inputs, ``--json -`` is JSON only, the vecsum demo report, signed and per-tile
exit codes, source-level fault reports, run timeouts, profile --from errors, demo gc2_like,
cc --xlatency, ELFs linked elsewhere or with RVC, stack sizes, bench --only and timing,
and the 256-tile exchange bench patterns."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tessera
from tessera.spec.config import ArrayConfig, preset

from helpers.cli import one_line_error

ROOT = Path(__file__).resolve().parents[1]


def tessera_cli(*args, cwd=None, timeout=300, module="tessera.cli"):
    return subprocess.run([sys.executable, "-m", module, *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or ROOT, timeout=timeout)




def line_of(src: Path, marker: str) -> int:
    """1-based line number of the first source line containing ``marker``."""
    for i, ln in enumerate(src.read_text().splitlines(), 1):
        if marker in ln:
            return i
    raise AssertionError(marker)


FAULT_C = """#include <tessera.h>
volatile int *bad_ptr = (int *)0x7fff0;
__attribute__((noinline)) int load_it(int x)
{
    return *bad_ptr + x;   /* FAULT HERE */
}
int main(void) { return load_it((int)tsr_tile_id()); }
"""

SPIN_C = """#include <tessera.h>
__attribute__((noinline)) void spin_forever(void)
{
    for (;;) __asm__ volatile("");   /* SPIN HERE */
}
int main(void) { if (tsr_context_id() == 1) spin_forever(); return 0; }
"""

LOAD_C = """#include <tessera.h>
#include <stdint.h>
int32_t input[4] __attribute__((section(".noinit")));
int32_t zeroed[4];
int main(void)
{
    if (tsr_context_id() != 0) return 0;
    return input[0] + input[1] + input[2] + input[3] + zeroed[0];
}
"""


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    d = tmp_path_factory.mktemp("i15")
    out = {}
    for name, text in (("fault", FAULT_C), ("spin", SPIN_C), ("load", LOAD_C),
                       ("neg", "int main(void){ return -1; }\n"),
                       ("tid", "#include <tessera.h>\nint main(void){ return "
                               "(int)tsr_tile_id(); }\n"),
                       ("zero", "int main(void){ return 0; }\n")):
        src = d / f"{name}.c"
        src.write_text(text)
        elf = d / f"{name}.elf"
        r = tessera_cli("cc", src, "-o", elf)
        assert r.returncode == 0, r.stderr
        out[name], out[name + ".c"] = elf, src
    out["dir"] = d
    return out


# -- version, python -m tessera --------------------------------------------------------------

def test_version_and_python_m_tessera():
    """Case 'tessera --version' (was: exit 2, no such option); 'python -m tessera' already
    existed on the starting point and is checked here to stay the same command."""
    r = tessera_cli("--version")
    assert r.returncode == 0 and r.stdout.strip() == f"tessera {tessera.__version__}", r
    r = tessera_cli("--version", module="tessera")
    assert r.returncode == 0 and r.stdout.strip() == f"tessera {tessera.__version__}", r
    one_line_error(tessera_cli("exec", "/nonexistent.elf", module="tessera"), "no such file")


# -- objdump ---------------------------------------------------------------------------------

def test_objdump_symbols_and_source(progs):
    """Case 'tessera objdump ELF': disassembly with symbols (and -S source lines)."""
    r = tessera_cli("objdump", progs["fault"])
    assert r.returncode == 0, r.stderr
    text = r.stdout
    # crt0's first instructions, by hand (csrr = csrrs rd,csr,zero)
    assert re.search(r"^00000000 <_start>:$", text, re.M)
    assert re.search(r"^\s+0:\tcc1022f3\tcsrrs t0,context_id,zero$", text, re.M), text[:600]
    assert re.search(r"^[0-9a-f]{8} <main>:$", text, re.M)
    assert re.search(r"^[0-9a-f]{8} <load_it>:$", text, re.M)
    # crt0's `bnez t0, 2f` jumps to the sync TILE at 0x44 (instruction 17 of crt0.S: six
    # set-up instructions, the two stack-limit ones, bnez, four for the .bss bounds, the
    # four-instruction zeroing loop): the target is named
    assert "bne t0,zero,0x44 <_start+0x44>" in text
    assert re.search(r"^\s+44:\t0000002b\tsync TILE$", text, re.M)
    r = tessera_cli("objdump", "-S", progs["fault"])
    want = f"fault.c:{line_of(progs['fault.c'], 'FAULT HERE')}"
    assert any(ln.startswith("; ") and ln.endswith(want) for ln in r.stdout.splitlines()), want
    one_line_error(tessera_cli("objdump", progs["fault.c"]), "not an ELF")


# -- exec --trace ------------------------------------------------------------------------------

def test_exec_trace_jsonl(progs, tmp_path):
    """Case 'tessera exec --trace FILE': one JSON line per retired instruction (model);
    other backends are refused with a clear message."""
    tr, js = tmp_path / "t.jsonl", tmp_path / "r.json"
    r = tessera_cli("exec", progs["zero"], "--preset", "tiny", "--trace", tr, "--json", js)
    assert r.returncode == 0, r.stderr
    recs = [json.loads(ln) for ln in tr.read_text().splitlines()]
    result = json.loads(js.read_text())
    assert len(recs) == sum(t["counters"]["retired"] for t in result["tiles"])
    first = recs[0]
    assert (first["cycle"], first["tile"], first["context"], first["pc"]) == (0, 0, 0, 0)
    assert first["insn"] == 0xCC1022F3 and first["asm"] == "csrrs t0,context_id,zero"
    assert {"rd", "value", "store_addr", "store_data", "store_mask"} <= set(first)
    ecalls = [x for x in recs if x["asm"] == "ecall"]
    assert len(ecalls) == 6                       # tiny: 1 tile x 6 contexts, each halts once
    cycles = [x["cycle"] for x in recs]
    assert cycles == sorted(cycles)
    one_line_error(tessera_cli("exec", progs["zero"], "--backend", "rtl", "--trace", tr),
                   "--trace needs --backend model")


# -- exec --load -----------------------------------------------------------------------------

def test_exec_load_noinit(progs, tmp_path):
    """Case 'per-tile input data --load TILE:SYMBOL=FILE.bin into .noinit' (symbol from the
    ELF, size checked, clear errors)."""
    import numpy as np
    data = tmp_path / "in.bin"
    data.write_bytes(np.array([1, 2, 3, 40], dtype="<i4").tobytes())
    js = tmp_path / "r.json"
    r = tessera_cli("exec", progs["load"], "--load", f"2:input={data}", "--json", js)
    assert r.returncode == 0, r.stderr
    res = json.loads(js.read_text())
    codes = [t["contexts"][0]["exit_code"] for t in res["tiles"]]
    assert codes == [0, 0, 46, 0]                        # only tile 2 got the data
    r = tessera_cli("exec", progs["load"], "--load", f"all:input={data}", "--json", js)
    assert [t["contexts"][0]["exit_code"] for t in json.loads(js.read_text())["tiles"]] \
        == [46] * 4
    big = tmp_path / "big.bin"
    big.write_bytes(bytes(20))
    one_line_error(tessera_cli("exec", progs["load"], "--load", f"0:input={big}"),
                   "has 20 bytes", "'input' has 16 bytes")
    one_line_error(tessera_cli("exec", progs["load"], "--load", f"0:nosuch={data}"),
                   "no symbol 'nosuch'", "input")
    one_line_error(tessera_cli("exec", progs["load"], "--load", f"0:zeroed={data}"),
                   "'zeroed' is in .bss, not .noinit")
    one_line_error(tessera_cli("exec", progs["load"], "--load", f"9:input={data}"),
                   "tile 9 out of range 0..3")
    one_line_error(tessera_cli("exec", progs["load"], "--load", "input.bin"),
                   "expected TILE:SYMBOL=FILE")
    one_line_error(tessera_cli("exec", progs["load"], "--load", f"0:input={tmp_path}/no.bin"),
                   "cannot read")


# -- outputs never overwrite inputs ------------------------------------------------------------

def test_outputs_never_overwrite_inputs(progs, tmp_path):
    """Case 'cc p.c -o p.c' and 'exec p.elf --json p.elf': refused, nothing lost."""
    src = tmp_path / "p.c"
    src.write_text("int main(void){ return 3; }\n")
    before = src.read_bytes()
    one_line_error(tessera_cli("cc", src, "-o", src), "-o", "is the source")
    assert src.read_bytes() == before
    elf = tmp_path / "p.elf"
    assert tessera_cli("cc", src, "-o", elf).returncode == 0
    raw = elf.read_bytes()
    one_line_error(tessera_cli("exec", elf, "--json", elf), "--json", "is the program")
    one_line_error(tessera_cli("exec", elf, "--trace", elf), "--trace", "is the program")
    link = tmp_path / "alias.elf"
    link.symlink_to(elf)
    one_line_error(tessera_cli("exec", elf, "--json", link), "is the program")
    one_line_error(tessera_cli("exec", elf, "--json", tmp_path / "o", "--trace",
                               tmp_path / "o"), "are the same file")
    assert elf.read_bytes() == raw


# -- --json - --------------------------------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["exec", "{zero}", "--preset", "tiny"],
    ["demo", "--program", "vecsum", "--preset", "tiny"],
    ["demo", "--backend", "model", "--images", "4", "--no-progress"],
    ["profile", "--backend", "model", "--images", "4", "--no-progress", "--out", "{dir}/pr"],
    ["run", "requantize", "--m", "4", "--n", "8"],
    ["bench", "--quick", "--only", "exchange"],
])
def test_json_stdout_is_only_json(progs, args):
    """Case '--json - prints only JSON on stdout (text to stderr)' for every command with
    --json (demo and profile printed their summary on stdout)."""
    args = [a.format(zero=progs["zero"], dir=progs["dir"]) for a in args]
    r = tessera_cli(*args, "--json", "-", timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    json.loads(r.stdout)                         # the whole of stdout is one JSON document
    assert r.stderr.strip(), "the human-readable text goes to stderr"


def test_vecsum_json_is_the_demo_report(tmp_path):
    """Case 'demo --program vecsum --json FILE writes the demo report' (it wrote the raw run
    result)."""
    out = tmp_path / "v.json"
    r = tessera_cli("demo", "--program", "vecsum", "--json", out)
    assert r.returncode == 0, r.stderr
    rep = json.loads(out.read_text())
    assert rep["program"] == "vecsum" and rep["match"] is True and rep["exit_code"] == 0
    assert rep["total"] == rep["expected_total"]
    assert rep["tile_sums"] == rep["expected_tile_sums"]
    assert sum(rep["expected_tile_sums"]) == rep["expected_total"]
    # the run result inside is the §10 JSON of the same run
    rr = rep["run_result"]
    assert rr["status"] == "halted" and rr["cycles"] == rep["cycles"]
    regs0 = [t["contexts"][0]["exit_code"] for t in rr["tiles"]]
    assert [(v - (1 << 32)) if v >= 1 << 31 else v for v in regs0] == rep["tile_totals"]
    m = re.search(r"expected \(numpy\):\s+(-?\d+)", r.stdout)
    assert m and int(m.group(1)) == rep["expected_total"]


# -- exit codes --------------------------------------------------------------------------------

def test_signed_exit_codes(progs, tmp_path):
    """Case 'signed exit codes (return -1 shows -1)'; the JSON keeps the register value."""
    js = tmp_path / "r.json"
    r = tessera_cli("exec", progs["neg"], "--preset", "tiny", "--json", js)
    assert r.returncode == 0
    assert "tile 0: exit codes [-1, -1, -1, -1, -1, -1]" in r.stdout, r.stdout   # tiny: T = 6
    assert "4294967295" not in r.stdout
    assert json.loads(js.read_text())["tiles"][0]["contexts"][0]["exit_code"] == 0xFFFFFFFF


def test_exit_codes_above_16_tiles_not_dropped(progs):
    """Case 'per-tile exit codes above 16 tiles not silently dropped'."""
    r = tessera_cli("exec", progs["zero"], "--tiles", "64", "--contexts", "6")   # T >= 6
    assert r.returncode == 0
    assert "tiles 0-63: exit codes [0, 0, 0, 0, 0, 0]" in r.stdout, r.stdout
    r = tessera_cli("exec", progs["tid"], "--tiles", "32", "--contexts", "6")
    assert r.returncode == 0
    shown = [int(m) for m in re.findall(r"^tile (\d+): exit codes \[", r.stdout, re.M)]
    assert shown == list(range(16))
    for t in range(16):
        assert f"tile {t}: exit codes [{', '.join([str(t)] * 6)}]" in r.stdout
    assert "exit codes of 16 more tile(s) (tiles 16-31) not shown; --json has every " \
           "context" in r.stdout, r.stdout


# -- source-level fault and timeout reports ----------------------------------------------------

def test_exec_fault_and_timeout_name_function_and_line(progs):
    """Case (c) 'faults and timeouts name the function and file:line of the pc', hex pcs."""
    r = tessera_cli("exec", progs["fault"], "--preset", "tiny")
    assert r.returncode == 3
    line = line_of(progs["fault.c"], "FAULT HERE")
    m = re.search(r"tile 0: FAULT access_fault_load context=\d+ pc=(0x[0-9a-f]+) in "
                  r"load_it\+0x[0-9a-f]+ \((\S+):(\d+)\) addr=0x7fff0", r.stdout)
    assert m, r.stdout
    assert m.group(2).endswith("fault.c") and int(m.group(3)) == line
    r = tessera_cli("exec", progs["spin"], "--preset", "tiny", "--max-cycles", "3000")
    assert r.returncode == 3
    line = line_of(progs["spin.c"], "SPIN HERE")
    assert "timeout: the run did not end within 3000 cycles" in r.stdout, r.stdout
    assert re.search(rf"tile 0 context 1 at pc=0x[0-9a-f]+ in spin_forever(\+0x[0-9a-f]+)? "
                     rf"\(\S*spin.c:{line}\)", r.stdout), r.stdout


# -- tessera run timeout -----------------------------------------------------------------------

def test_run_timeout_is_reported_as_timeout(tmp_path):
    """Case 'tessera run --max-cycles 10 reports a timeout (not MISMATCH / no dot4)'."""
    js = tmp_path / "r.json"
    r = tessera_cli("run", "matmul", "--max-cycles", "10", "--json", js)
    assert r.returncode == 3
    assert "TIMEOUT" in r.stdout and "MISMATCH" not in r.stdout, r.stdout
    assert "does no dot4" not in r.stdout
    rep = json.loads(js.read_text())
    assert rep["status"] == "timeout" and rep["match"] is False and rep["compared"] is False


# -- profile --from errors ---------------------------------------------------------------------

def test_profile_from_errors_name_the_culprit(tmp_path):
    """Case 'profile --from empty.json / --out /proc/x errors name the right culprit'."""
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    one_line_error(tessera_cli("profile", "--from", empty, "--out", tmp_path / "o"),
                   f"--from {empty}", "missing key 'title'")
    r = tessera_cli("run", "requantize", "--m", "4", "--n", "8", "--profile", tmp_path / "p")
    assert r.returncode == 0, r.stderr
    good = tmp_path / "p" / "profile.json"
    err = one_line_error(tessera_cli("profile", "--from", good, "--out", "/proc/x"),
                         "--out /proc/x")
    assert str(good) not in err                       # the input is not blamed
    r = tessera_cli("profile", "--from", good, "--out", tmp_path / "again")
    assert r.returncode == 0, r.stderr
    assert json.loads((tmp_path / "again" / "profile.json").read_text()) == \
        json.loads(good.read_text())
    one_line_error(tessera_cli("profile", "--from", good, "--out", tmp_path / "p"),
                   "refusing to overwrite an input")


# -- demo gc2_like, cc --xlatency --------------------------------------------------------------

def test_demo_gc2_like_suggests_model_backend():
    """Case 'tessera demo --preset gc2_like suggests --backend model'."""
    one_line_error(tessera_cli("demo", "--preset", "gc2_like", "--no-progress"),
                   "1216 tiles is too large", "--backend model")


def test_cc_xlatency_range(tmp_path):
    """Case 'tessera cc --xlatency 99 refused (the array allows 2..64, contract v2)'."""
    src = tmp_path / "x.c"
    src.write_text("int main(void){ return 0; }\n")
    with pytest.raises(ValueError, match="2..64"):
        ArrayConfig(exchange_latency=99)               # the spec's range
    one_line_error(tessera_cli("cc", src, "-o", tmp_path / "x.elf", "--xlatency", "99"),
                   "--xlatency", "2..64")
    one_line_error(tessera_cli("cc", src, "-o", tmp_path / "x.elf", "--xlatency", "1"),
                   "--xlatency", "2..64")
    assert not (tmp_path / "x.elf").exists()
    assert tessera_cli("cc", src, "-o", tmp_path / "x.elf", "--xlatency", "64").returncode == 0


# -- ELF checks ---------------------------------------------------------------------------------

BARE_S = """    .section .text.start, "ax"
    .globl _start
_start:
    li a0, 5
    ecall
"""


def _zig(tmp_path, out, *flags):
    src = tmp_path / "bare.S"
    src.write_text(BARE_S)
    cmd = [sys.executable, "-m", "ziglang", "cc", "-target", "riscv32-freestanding-none",
           "-ffreestanding", "-nostdlib", *flags, str(src), "-o", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return out


def test_elf_linked_at_wrong_address(tmp_path):
    """Case 'ELF linked at the wrong address says so' (was: 'needs 76172 bytes')."""
    ld = tmp_path / "far.ld"
    ld.write_text("ENTRY(_start)\nSECTIONS { .text 0x11000 : { *(.text.start) } }\n")
    elf = _zig(tmp_path, tmp_path / "far.elf", "-mcpu=generic_rv32+m", "-T", str(ld))
    err = one_line_error(tessera_cli("exec", elf), "linked at address 0x11000, not 0")
    assert "needs" not in err


def test_elf_with_rvc_flag_refused(tmp_path):
    """Case 'ELF with the RVC flag (EF_RISCV_RVC) refused before running'."""
    from tessera.toolchain.cc import compile_program
    from tessera.toolchain.elf import EF_RISCV_RVC, load_elf
    elf = _zig(tmp_path, tmp_path / "rvc.elf", "-mcpu=generic_rv32+m+c",
               "-T", str(ROOT / "tessera" / "toolchain" / "link.ld"))
    assert load_elf(elf).flags & EF_RISCV_RVC
    one_line_error(tessera_cli("exec", elf, "--json", tmp_path / "r.json"),
                   "compressed instructions (RVC")
    assert not (tmp_path / "r.json").exists()          # refused before running
    ok = compile_program([tmp_path / "bare.S"], tmp_path / "ok.elf", no_crt=True)
    assert not load_elf(ok).flags & EF_RISCV_RVC       # tessera cc builds without C


# -- stack size at build time (f) ----------------------------------------------------------------

@pytest.mark.parametrize("n,why", [(0, "less than the minimum 256"),
                                   (3, "less than the minimum 256"),
                                   (1000, "not a multiple of 16"),
                                   (128, "less than the minimum 256")])
def test_stack_bytes_checked_at_build_time(tmp_path, n, why):
    """Case 1 'TSR_SET_STACK_BYTES(0)' / '(3)' accepted: now a clear build error, and an
    existing output ELF is left as it was."""
    src = tmp_path / "s.c"
    src.write_text(f"#include <tessera.h>\nTSR_SET_STACK_BYTES({n});\n"
                   "int main(void){ return (int)tsr_context_id() * 16; }\n")
    out = tmp_path / "s.elf"
    out.write_bytes(b"old contents")
    one_line_error(tessera_cli("cc", src, "-o", out), f"stack size {n} bytes per context",
                   why)
    assert out.read_bytes() == b"old contents"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_stack_bytes_loader_check():
    """Case 1, loader side: an ELF whose __stack_bytes is 0 or misaligned is refused before
    running (e.g. one linked by another tool)."""
    from tessera.toolchain.elf import Image, Segment, StackSizeError
    cfg = preset("small")
    for n in (0, 3, 520):
        img = Image("s.elf", 0, [Segment(0, b"\x73\0\0\0", 4)], {"__stack_bytes": n})
        with pytest.raises(StackSizeError, match=f"stack size {n} bytes"):
            img.check_runnable(cfg)
    Image("s.elf", 0, [Segment(0, b"\x73\0\0\0", 4)], {"__stack_bytes": 512}).check_runnable(cfg)


def test_valid_stack_bytes_still_run(tmp_path):
    """Valid stack sizes still build and give each context its own stack (exit codes
    0, 16, 32, ... are the issue's expected values for the 6-context program)."""
    src = tmp_path / "s.c"
    src.write_text("#include <tessera.h>\nTSR_SET_STACK_BYTES(2048);\n"
                   "int main(void){ volatile int x = (int)tsr_context_id() * 16; return x; }\n")
    out = tmp_path / "s.elf"
    assert tessera_cli("cc", src, "-o", out).returncode == 0
    r = tessera_cli("exec", out)
    assert r.returncode == 0 and "tiles 0-3: exit codes [0, 16, 32, 48, 64, 80]" in r.stdout


# -- bench (d) -------------------------------------------------------------------------------------

def test_bench_only_validates_its_list():
    """Case '--only validates its list (--only "" is an error)' (it ran the full suite)."""
    one_line_error(tessera_cli("bench", "--only", ""), "names no benchmark", "exchange")
    one_line_error(tessera_cli("bench", "--only", "model,"), "empty name")
    one_line_error(tessera_cli("bench", "--only", "exchange,nope"), "unknown benchmark nope")


def test_failed_bench_section_reports_its_time(monkeypatch):
    """Case 'a failed section does not say done in 0.0 s'."""
    import time
    import types
    from tessera.cli.bench import suite

    def run(quick):
        time.sleep(0.3)
        raise RuntimeError("broken on purpose")
    fake = types.ModuleType("tessera.cli.bench.fakefail")
    fake.run = run
    monkeypatch.setitem(sys.modules, "tessera.cli.bench.fakefail", fake)
    logs = []
    report = suite.run_suite(["fakefail"], quick=True, log=logs.append)
    sec = report["sections"][0]
    assert sec["error"] == "RuntimeError: broken on purpose"
    assert sec["seconds"] >= 0.3
    assert not any("done in" in m for m in logs), logs
    assert any(re.search(r"fakefail FAILED after 0\.[3-9] s: RuntimeError", m) for m in logs)


def test_kernels_bench_matmul_256x128x128_fits_16_tiles():
    """Case 'tessera bench --only kernels: matmul 256x128x128 on 16 tiles out of memory
    (exchange program copy0 30,756 bytes)'. The full-mode kernels row (M = 16 rows per tile,
    K = N = 128, the bench's _cfg: 6 contexts, 64 KiB, engine_macs = 0) must build, run and
    match numpy, with the exchange still at the König bound (architecture §6 "Runs": the
    scheduler merges consecutive words into STEP runs instead of one step per word)."""
    from tessera.cli.bench.kernels import _cfg
    from tessera.toolchain.kernels.run import run_kernel
    r = run_kernel("matmul", _cfg(16), backend="model", m=256, k=128, n=128)
    assert r["status"] == "halted" and r["compared"] and r["match"]
    assert r["macs"] == 256 * 128 * 128
    assert r["exchange_bound_met"] and r["exchange_cycles"] == r["exchange_bound"]


def test_exchange_bench_patterns_at_256_tiles():
    """Case 'tessera bench --only exchange: ExchangeScheduleError transfer 306 ... read/write
    hazard at 256 tiles'. The scheduler was right: the harness numbered source words
    globally, so at 256 tiles x 32 words the sources ran into the destination region. Every
    pattern must keep sources and destinations apart, and the full-mode 256-tile patterns
    must schedule."""
    from tessera.cli.bench.exchange import check_schedule, independent_bound, patterns
    from tessera.toolchain.exchange_scheduler import Transfer, schedule_exchange
    for n in (4, 16, 64, 256):
        for quick in (True, False):
            for name, _, tr in patterns(n, quick):
                srcs = {(s, a) for s, a, _ in tr}
                dsts = [(d, a) for _, _, ds in tr for d, a in ds]
                assert len(dsts) == len(set(dsts)), (n, quick, name)
                assert not srcs & set(dsts), (n, quick, name, sorted(srcs & set(dsts))[:3])
    cfg = ArrayConfig(tiles=256, contexts=6, sram_bytes=64 * 1024)
    for name, _, tr in patterns(256, quick=False):
        if "random" not in name:
            continue
        sched = schedule_exchange([Transfer(s, a, d) for s, a, d in tr], cfg)
        check_schedule(sched, tr)
        assert sched.slots >= independent_bound(tr)
