"""Run-time stack safety (docs/architecture.md §7 "Stack limit", §11 crt0): a C program or a
codelet whose stack outgrows its context's stack faults ``stack_overflow`` at the instruction
that moves sp below the bottom of the stack, on both backends, and the report names the tile,
context, stack size and range and the address sp would have had. Before the stack limit, the
same programs silently overwrote the stack of the next context."""

import json

import numpy as np
import pytest

from helpers.cli import run_cli
from tessera.spec.config import preset
from tessera.toolchain.graph import (Engine, EngineError, Execute, Graph, compile_graph,
                                     map_linearly)

DEEP = """#include "tessera.h"
__attribute__((noinline)) static int touch(volatile char *p, int n) { p[n & 63] = (char)n; return p[0]; }
__attribute__((noinline)) static int depth(int n) {        /* DEPTH */
    volatile char buf[64];
    buf[0] = (char)n;
    if (n == 0) return touch(buf, n);
    int r = depth(n - 1);
    return r + touch(buf, n);
}
int main(void) { return tsr_context_id() == 1 ? depth(40) : 0; }
"""

BIG_FRAME = """#include <stdint.h>
#include "tsr_graph.h"
typedef struct { TSR_FIELD(int32_t, out); } fields_t;
void big_frame(const fields_t *f, uint32_t part, uint32_t nparts)
{
    volatile int32_t buf[512];                                 /* 2 KiB: twice the stack */
    for (uint32_t i = 0; i < 512; i++)
        buf[i] = (int32_t)(i + part);
    for (uint32_t i = part; i < f->out_n; i += nparts)
        f->out[i] = buf[i];
}
"""


def _elf(tmp_path):
    src = tmp_path / "deep.c"
    src.write_text(DEEP)
    elf = tmp_path / "deep.elf"
    r = run_cli("cc", src, "-o", elf)
    assert r.returncode == 0, r.stderr
    return elf


def _exec(elf, backend, tmp_path):
    out = tmp_path / f"{backend}.json"
    r = run_cli("exec", elf, "--backend", backend, "--json", out, "--preset", "tiny")
    return r, json.loads(out.read_text())


def _check_report(r, doc):
    # 40 frames of > 64 bytes do not fit 1 KiB: context 1 faults. The tiny preset (1 tile) has
    # 16 KiB: context 1's stack is [0x4000 - 2·1024, 0x4000 - 1024) = [0x3800, 0x3c00)
    # (crt0: sp = sram_bytes - context_id · 1024, limit = sp - 1024).
    assert doc["status"] == "fault"
    f = doc["tiles"][0]["fault"]
    assert (f["context"], f["cause"]) == (1, "stack_overflow")
    assert 0x3800 - 256 <= f["addr"] < 0x3800             # one frame below the limit
    ctx1 = doc["tiles"][0]["contexts"][1]
    assert ctx1["state"] == "fault" and ctx1["regs"][2] >= 0x3800   # sp never went below
    text = r.stdout + r.stderr
    assert "FAULT stack_overflow context=1" in text
    # the prologue's `addi sp, sp, -N` is on the function's first line (the DEPTH marker)
    line = next(i for i, ln in enumerate(DEEP.splitlines(), 1) if "DEPTH" in ln)
    assert "in depth (" in text and f"deep.c:{line})" in text, text
    assert "context 1's stack is 1024 bytes [0x3800, 0x3c00)" in text
    assert f"sp would have become {f['addr']:#x}, {0x3800 - f['addr']} bytes below it" in text


def test_deep_recursion_faults_on_the_model(tmp_path):
    r, doc = _exec(_elf(tmp_path), "model", tmp_path)
    assert r.returncode != 0
    _check_report(r, doc)


@pytest.mark.rtl
def test_deep_recursion_faults_on_the_rtl_like_the_model(tmp_path):
    elf = _elf(tmp_path)
    rr, rtl = _exec(elf, "rtl", tmp_path)
    _check_report(rr, rtl)
    _, model = _exec(elf, "model", tmp_path)
    rtl.pop("backend", None)
    model.pop("backend", None)
    assert rtl == model


def test_codelet_frame_larger_than_the_stack_names_the_vertex(tmp_path):
    src = tmp_path / "big.c"
    src.write_text(BIG_FRAME)
    g = Graph(preset("small"))
    x = g.add_variable("x", (4, 8), "int32", map_linearly(grain=8))
    c = g.add_codelet("big_frame", src, [("out", "out", "int32")])
    cs = g.add_compute_set("work")
    for t in range(4):
        g.add_vertex(cs, c, out=x[t])
    eng = Engine(compile_graph(g, Execute(cs), stack_bytes=1024), backend="model")
    with pytest.raises(EngineError) as ei:
        eng.run()
    e = ei.value
    assert e.cause == "stack_overflow"
    top = 0x10000 - e.context * 1024
    assert e.addr < top - 1024                       # the 2 KiB frame starts below the limit
    msg = str(e)
    assert "codelet 'big_frame'" in msg and "compute set 'work'" in msg
    assert (f"context {e.context}'s stack is 1024 bytes [{top - 1024:#x}, {top:#x})") in msg


INTO_BSS = """#include "tessera.h"
volatile int pad[PAD];       /* .bss, sized so that it ends right below the stacks */
__attribute__((noinline)) static int touch(volatile char *p, int n) { p[n & 63] = (char)n; return p[0]; }
__attribute__((noinline)) static int depth(int n) {        /* 40 frames of > 64 bytes */
    volatile char buf[64];
    buf[0] = (char)n;
    if (n == 0) return touch(buf, n);
    int r = depth(n - 1);
    return r + touch(buf, n);
}
int main(void) { return tsr_context_id() == 5 ? depth(40) + pad[PAD - 1] : 0; }
"""


def test_last_context_overflowing_into_bss_faults(tmp_path):
    """Case 'stack overflow into .bss silent': the last context's stack is the lowest one,
    right above the image (§11: sp = sram_bytes - context_id · stack_bytes), so its overflow
    runs into .bss. Before the stack limit the run halted normally with .bss overwritten
    (exit code 848 instead of 820 + pad[PAD - 1] = 820: a saved frame word landed in pad).
    Small preset, 1 tile: 64 KiB, 6 contexts of 1 KiB; context 5's stack is
    [0x10000 - 6·1024, 0x10000 - 5·1024) = [0xe800, 0xec00)."""
    from tessera.toolchain.elf import load_elf
    src = tmp_path / "bss.c"
    src.write_text(INTO_BSS)
    elf = tmp_path / "bss.elf"

    def build(pad_words):
        r = run_cli("cc", src, "-o", elf, "-D", f"PAD={pad_words}")
        assert r.returncode == 0, r.stderr
        return load_elf(elf).symbols

    probe = build(16)
    # grow pad by the room left between the image and context 5's stack (8-byte steps)
    room = (0xe800 - probe["__image_end"]) // 8 * 8
    sym = build(16 + room // 4)
    assert 0xe800 - 8 < sym["__image_end"] <= 0xe800, hex(sym["__image_end"])
    assert sym["__bss_end"] > 0xe800 - 64                # .bss reaches the stacks
    out = tmp_path / "r.json"
    r = run_cli("exec", elf, "--tiles", 1, "--json", out)
    assert r.returncode != 0
    doc = json.loads(out.read_text())
    assert doc["status"] == "fault"
    f = doc["tiles"][0]["fault"]
    assert (f["context"], f["cause"]) == (5, "stack_overflow")
    assert 0xe800 - 256 <= f["addr"] < 0xe800               # one frame below the limit
    assert doc["tiles"][0]["contexts"][5]["regs"][2] >= 0xe800   # sp never entered .bss
    text = r.stdout + r.stderr
    assert "FAULT stack_overflow context=5" in text
    assert "context 5's stack is 1024 bytes [0xe800, 0xec00)" in text, text
