"""The engine record of architecture §11: ``tsr_mrun`` (tessera.h) records TSR_ENGINE_MACS in
the non-loaded ELF section ``.tessera.engine``; the loader refuses a program built for another
``engine_macs`` P with one clear error (and runs programs without the record on any P)."""

import textwrap

import pytest

from tessera.spec.config import ArrayConfig
from tessera.toolchain.elf import EngineMismatch, Image, Segment, load_elf

from helpers.cli import one_line_error, run_cli

# One RAW command, C = 2 channels, J = K = 8 (one block): X = [1..8], W(0) = 1s, W(1) = 2s,
# bias (5, -1): acc = (5 + 36, -1 + 72) = (41, 71); main returns 41 + 71 = 112 (hand values)
SRC = textwrap.dedent("""\
    #include "tessera.h"
    static int8_t x[8] __attribute__((aligned(8))) = {1, 2, 3, 4, 5, 6, 7, 8};
    static int8_t w[16] __attribute__((aligned(8))) = {1, 1, 1, 1, 1, 1, 1, 1,
                                                       2, 2, 2, 2, 2, 2, 2, 2};
    static tsr_mparam p[2] __attribute__((aligned(8))) = {{5, 0, 0, 0}, {-1, 0, 0, 0}};
    static int32_t out[2] __attribute__((aligned(8)));
    static tsr_mdesc d;
    int main(void) {
        if (tsr_context_id() != 0) return 0;
        d.a_base = (uint32_t)x; d.w_base = (uint32_t)w; d.w_sm = 8;
        d.c_base = (uint32_t)out; d.p_base = (uint32_t)p;
        d.J0 = d.J1 = d.K0 = d.K1 = 1; d.C = 2; d.mode = 0;
        tsr_mrun(&d);
        tsr_mwait();
        return out[0] + out[1];
    }
    """)


def tessera(*args, timeout=300):
    return run_cli(*args, timeout=timeout)


@pytest.fixture(scope="module")
def elfs(tmp_path_factory):
    d = tmp_path_factory.mktemp("engine_record")
    src = d / "mm.c"
    src.write_text(SRC)
    out = {}
    for p in (16, 32):
        out[p] = d / f"mm{p}.elf"
        r = tessera("cc", src, "-o", out[p], "--engine-macs", p)
        assert r.returncode == 0, r.stderr
    out["default"] = d / "mm.elf"
    r = tessera("cc", src, "-o", out["default"])
    assert r.returncode == 0, r.stderr
    return out


def test_elf_records_engine_macs(elfs):
    assert load_elf(elfs[16]).engine_macs == (16,)
    assert load_elf(elfs[32]).engine_macs == (32,)
    assert load_elf(elfs["default"]).engine_macs == (32,)      # TSR_ENGINE_MACS_DEFAULT


def test_engine_mismatch_rejected_before_the_run(elfs):
    r = tessera("exec", elfs[32], "--preset", "tiny", "--engine-macs", "16", timeout=120)
    one_line_error(r, "compiled for engine_macs 32", "engine_macs 16", "--engine-macs 16")
    r = tessera("exec", elfs[16], "--preset", "tiny", "--engine-macs", "0", timeout=120)
    one_line_error(r, "compiled for engine_macs 16", "no matrix engine")
    for p, elf in ((16, elfs[16]), (32, elfs[32])):
        r = tessera("exec", elf, "--preset", "tiny", "--engine-macs", str(p), timeout=120)
        assert r.returncode == 0, r.stderr
        # tiny preset: T = 6 contexts (§1, contract v2); context 0 returns 112, the others 0
        assert "exit codes [112, 0, 0, 0, 0, 0]" in r.stdout, r.stdout


def test_engine_check_api():
    seg = [Segment(0, b"\0" * 4, 4)]
    with pytest.raises(EngineMismatch, match="mixed engine_macs 16/32.*engine_macs 64"):
        Image("p.elf", 0, seg, {}, engine_macs=(16, 32)).check_engine(
            ArrayConfig(engine_macs=64))
    Image("q.elf", 0, seg, {}, engine_macs=(32,)).check_engine(ArrayConfig())
    for p in (0, 16, 64):                         # no record: runs on any P
        Image("r.elf", 0, seg, {}).check_engine(ArrayConfig(engine_macs=p))
