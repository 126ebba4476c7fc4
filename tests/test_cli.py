"""CLI tests that need no simulator: bad input gives exit 2 and a one-line message, no traceback;
`tessera cc` works; the backend registry dispatches and reports missing backends clearly."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tessera import backends
from tessera.spec.config import PRESETS
from tessera.spec.result import (ContextResult, ContextState, RunResult, RunStatus, TileResult,
                            COUNTER_NAMES)
from tessera.toolchain.run import exec_program, resolve_config, summarize, UsageError

from helpers.cli import run_cli

ROOT = Path(__file__).resolve().parents[1]


def tessera(*args, cwd=None):
    return run_cli(*args, cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def small_elf(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli")
    src = d / "ret.c"
    src.write_text("#include <tessera.h>\nint main(void){ return (int)tsr_tile_id(); }\n")
    out = d / "ret.elf"
    r = tessera("cc", src, "-o", out, "-O2", "-DUNUSED=1", "-I", d)
    assert r.returncode == 0, r.stderr
    return out


def assert_usage_error(r, *needles):
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    for n in needles:
        assert n in r.stderr, (n, r.stderr)


def test_cc_produces_riscv_elf(small_elf):
    raw = small_elf.read_bytes()
    assert raw[:4] == b"\x7fELF" and raw[4] == 1 and raw[5] == 1      # ELF32, little-endian
    assert int.from_bytes(raw[18:20], "little") == 243                  # EM_RISCV
    assert int.from_bytes(raw[24:28], "little") == 0                    # entry 0


def test_cc_errors(tmp_path):
    assert_usage_error(tessera("cc", tmp_path / "missing.c", "-o", tmp_path / "o.elf"),
                       "source file not found", "missing.c")
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return oops; }\n")
    r = tessera("cc", bad, "-o", tmp_path / "o.elf")
    assert_usage_error(r, "oops", "compilation of")
    assert_usage_error(tessera("cc", bad), "-o")             # -o is required


def test_exec_bad_inputs(tmp_path, small_elf):
    assert_usage_error(tessera("exec", tmp_path / "nope.elf"), "no such file")
    txt = tmp_path / "notelf.elf"
    txt.write_text("hello")
    assert_usage_error(tessera("exec", txt), "not an ELF")
    assert_usage_error(tessera("exec", small_elf, "--preset", "huge"), "unknown preset 'huge'")
    assert_usage_error(tessera("exec", small_elf, "--tiles", "0"), "--tiles")
    assert_usage_error(tessera("exec", small_elf, "--tiles", "many"), "--tiles")
    assert_usage_error(tessera("exec", small_elf, "--tiles", "4096"), "tiles")
    assert_usage_error(tessera("exec", small_elf, "--sram-bytes", "5000"), "sram_bytes")
    assert_usage_error(tessera("exec", small_elf, "--contexts", "3"), "contexts")
    assert_usage_error(tessera("exec", small_elf, "--max-cycles", "-5"), "--max-cycles")
    assert_usage_error(tessera("exec", small_elf, "--backend", "fpga"), "--backend")
    assert_usage_error(tessera("exec", small_elf, "--waves", "vcd"), "--waves needs --backend rtl")
    assert_usage_error(tessera(), "COMMAND")


def test_exec_program_too_big(tmp_path):
    src = tmp_path / "big.c"
    src.write_text("char blob[14000] = {1}; int main(void){ return blob[0]; }\n")
    elf = tmp_path / "big.elf"
    assert tessera("cc", src, "-o", elf).returncode == 0
    r = tessera("exec", elf, "--preset", "tiny")
    assert_usage_error(r, "does not fit tile 0", "available 16384 bytes")
    # one line message
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1


def test_resolve_config():
    assert resolve_config() == PRESETS["small"]
    assert resolve_config("tiny") == PRESETS["tiny"]
    c = resolve_config("array16", xlatency=7, contexts=8)
    assert (c.tiles, c.contexts, c.exchange_latency) == (16, 8, 7)
    c = resolve_config(tiles=2)
    assert c.tiles == 2 and c.contexts == 6
    with pytest.raises(UsageError, match="unknown preset"):
        resolve_config("nope")
    with pytest.raises(UsageError, match="exchange_latency"):
        resolve_config(xlatency=65)


def _fake_result(config, codes):
    tiles = []
    for t in range(config.tiles):
        ctxs = [ContextResult(c, ContextState.HALTED, 0x40, codes[t][c], 10, [0] * 32)
                for c in range(config.contexts)]
        tiles.append(TileResult(t, {k: i for i, k in enumerate(COUNTER_NAMES)}, None, ctxs))
    return RunResult(config, RunStatus.HALTED, 123, tiles)


def test_backend_registry_and_exec_json(tmp_path, small_elf):
    seen = {}

    @backends.register("fake-test")
    def fake(config, image, max_cycles, *, preload=(), readback=()):
        seen.update(entry=image.entry, max_cycles=max_cycles, preload=preload,
                    nseg=len(image.segments))
        codes = [[t * 10 + c for c in range(config.contexts)] for t in range(config.tiles)]
        return _fake_result(config, codes), [b"\x01" * n for _, _, n in readback]

    assert "fake-test" in backends.available()
    cfg = PRESETS["small"]
    out = tmp_path / "r.json"
    res, data = exec_program(small_elf, cfg, backend="fake-test", max_cycles=99, json_out=out,
                             preload=[(1, 0x100, b"ab")], readback=[(0, 0, 3)])
    assert seen == {"entry": 0, "max_cycles": 99, "preload": [(1, 0x100, b"ab")],
                    "nseg": seen["nseg"]} and seen["nseg"] >= 1
    assert data == [b"\x01\x01\x01"] and res.backend == "fake-test"
    d = json.loads(out.read_text())
    assert set(d) == {"status", "cycles", "config", "not_arrived", "tiles"}
    assert d["tiles"][2]["contexts"][3]["exit_code"] == 23
    s = summarize(res)
    assert "status: halted" in s and "cycles: 123" in s and "tile 3: exit codes [30, 31" in s

    with pytest.raises(backends.BackendError, match="unknown backend 'nosuch'"):
        backends.run_program("nosuch", cfg, None, 10)
    with pytest.raises(ValueError, match="max_cycles"):
        backends.run_program("fake-test", cfg, None, 0)


def test_console_script_installed():
    script = Path(sys.executable).parent / "tessera"
    assert script.exists(), "run `make setup` (pip install -e .) to install the tessera script"
    r = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "cc" in r.stdout and "exec" in r.stdout and "demo" in r.stdout
    r = subprocess.run([str(script), "exec", "/nonexistent.elf"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr
