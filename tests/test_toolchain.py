"""Toolchain tests that need no simulator: tessera.h, zig cc driver, link.ld/crt0, ELF loader.

Expected encodings come from tessera/spec/isa.py, tessera/spec/csr.py and tessera/spec/exchange.py (the spec
modules), never from the header generator's output.
"""

import struct

import pytest
from elftools.elf.elffile import ELFFile

from tessera.spec import isa
from tessera.spec.config import ArrayConfig, PRESETS
from tessera.spec.csr import Csr
from tessera.spec.exchange import Step, encode_program
from tessera.toolchain import ToolchainError
from tessera.toolchain.cc import CompileError, compile_program
from tessera.toolchain.elf import ElfError, ProgramTooBig, load_elf
from tessera.toolchain.header import generate, include_dir


def _text_words(path):
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        words = []
        for sec in elf.iter_sections():
            if sec["sh_flags"] & 0x4 and sec["sh_size"]:  # SHF_EXECINSTR
                d = sec.data()
                words += [int.from_bytes(d[i:i + 4], "little") for i in range(0, len(d) - 3, 4)]
        return words


def _symbol_bytes(path, name, size):
    img = load_elf(path)
    addr = img.symbols[name]
    return img.flat()[addr:addr + size]


def _csrr(csr, rd_any=True):
    """Mask/value of `csrrs rd, csr, x0` (Zicsr, spec chapter 9) ignoring rd."""
    value = int(csr) << 20 | 0 << 15 | 2 << 12 | isa.Opcode.SYSTEM
    mask = 0xFFFFF07F
    return mask, value


def test_header_is_deterministic_and_complete():
    text = generate()
    assert text == generate()
    for name in ("tsr_dot4(", "tsr_dot4su(", "tsr_sync_tile(", "tsr_sync_array(", "tsr_tile_id(",
                 "tsr_context_id(", "tsr_tile_count(", "tsr_context_count(", "tsr_sram_bytes(",
                 "tsr_cycle(", "tsr_instret(", "tsr_set_xprog(", "TSR_XSTEP(", "TSR_XIDLE(",
                 "TSR_XEND("):
        assert name in text, name
    for c in Csr:
        assert f"#define TSR_CSR_{c.name} {int(c):#05x}" in text
    assert '"+r"(acc)' in text  # dot4 reads and writes rd
    d = include_dir()
    assert (d / "tessera.h").read_text() == text


def test_custom_instruction_and_csr_encodings(tmp_path):
    src = tmp_path / "enc.c"
    src.write_text("""
#include <tessera.h>
volatile uint32_t sink[16];
int main(void) {
    tsr_sync_tile();
    tsr_sync_array();
    sink[0] = tsr_dot4(sink[1], sink[2], sink[3]);
    sink[4] = tsr_dot4su(sink[5], sink[6], sink[7]);
    sink[8] = tsr_tile_id() + tsr_context_id() + tsr_tile_count() + tsr_context_count()
            + tsr_sram_bytes();
    uint64_t c = tsr_cycle(), r = tsr_instret();
    sink[9] = (uint32_t)c ^ (uint32_t)(c >> 32) ^ (uint32_t)r ^ (uint32_t)(r >> 32);
    tsr_set_xprog((const void *)0x1234);
    return 0;
}
""")
    elf = compile_program([src], tmp_path / "enc.elf")
    words = _text_words(elf)
    assert isa.encode_sync(isa.SyncZone.TILE) in words
    assert isa.encode_sync(isa.SyncZone.ARRAY) in words
    # dot4 / dot4su: CUSTOM_0, funct7 = 0, funct3 0 / 1 (any registers)
    rmask = 0xFE00707F
    assert any(w & rmask == isa.encode_dot4(0, 0, 0) for w in words)
    assert any(w & rmask == isa.encode_dot4su(0, 0, 0) for w in words)
    for csr in (Csr.TILE_ID, Csr.CONTEXT_ID, Csr.TILE_COUNT, Csr.CONTEXT_COUNT, Csr.SRAM_BYTES,
                Csr.CYCLE, Csr.CYCLEH, Csr.INSTRET, Csr.INSTRETH):
        mask, value = _csrr(csr)
        assert any(w & mask == value for w in words), f"no csrr of {csr.name}"
    # csrw xprog = csrrw x0, 0x800, rs1
    assert any(w & 0xFFF07FFF == (int(Csr.XPROG) << 20 | 1 << 12 | isa.Opcode.SYSTEM)
               for w in words)
    # the 64-bit reads retry: cycleh is read twice per tsr_cycle()
    mask, value = _csrr(Csr.CYCLEH)
    assert sum(w & mask == value for w in words) >= 2


def test_exchange_macros_match_spec_encoder(tmp_path):
    src = tmp_path / "x.c"
    src.write_text("""
#include <tessera.h>
const tsr_xstep_t prog[] = {
    TSR_XSEND(0x100),
    TSR_XRECV(5, 0x2000),
    TSR_XRECV_REL(3, 0xFFFFC),
    TSR_XSENDRECV(0x40, 2047, 0x44),
    TSR_XSENDRECV_REL(0x3FFFFC, 1, 0x8),
    TSR_XNOP(),
    TSR_XIDLE(1),
    TSR_XIDLE(77),
    TSR_XIDLE(TSR_XIDLE_MAX),
    TSR_XSTEP(1, 0x10, 0, 1, 9, 0x20),
    TSR_XEND(),
};
int main(void) { return (int)(uintptr_t)prog; }
""")
    elf = compile_program([src], tmp_path / "x.elf")
    want = encode_program([
        Step.send_recv(send_addr=0x100),
        Step.send_recv(recv_src=5, recv_addr=0x2000),
        Step.send_recv(recv_src=3, recv_addr=0xFFFFC, relative=True),
        Step.send_recv(0x40, 2047, 0x44),
        Step.send_recv(0x3FFFFC, 1, 0x8, relative=True),
        Step.send_recv(),
        Step.idle(1), Step.idle(77), Step.idle(1 << 20),
        Step.send_recv(send_addr=0x10),  # recv_en = 0: word1 and relative ignored
        Step.end(),
    ])
    img = load_elf(elf)
    assert img.symbols["prog"] % 8 == 0
    assert _symbol_bytes(elf, "prog", len(want)) == want


def test_crt0_and_link_layout(tmp_path):
    src = tmp_path / "m.c"
    src.write_text("int zeroed[10]; int initd = 5; int main(void){ return zeroed[3] + initd; }\n")
    elf = compile_program([src], tmp_path / "m.elf")
    img = load_elf(elf)
    assert img.entry == 0 and img.symbols["_start"] == 0
    assert img.symbols["__stack_bytes"] == 1024 == img.stack_bytes
    assert img.symbols["__bss_start"] <= img.symbols["zeroed"] < img.symbols["__bss_end"]
    assert img.symbols["__bss_start"] % 4 == 0 and img.symbols["__bss_end"] % 4 == 0
    assert img.end >= img.symbols["__bss_end"]
    words = _text_words(elf)
    assert words[:2] == [_csrr(Csr.CONTEXT_ID)[1] | (5 << 7),  # csrr t0, context_id
                         _csrr(Csr.SRAM_BYTES)[1] | (6 << 7)]  # csrr t1, sram_bytes
    assert isa.encode_sync(isa.SyncZone.TILE) in words and isa.INSN_ECALL in words
    assert struct.unpack_from("<i", img.flat(), img.symbols["initd"])[0] == 5


def test_stack_bytes_override_and_check_fits(tmp_path):
    src = tmp_path / "big.c"
    src.write_text("#include <tessera.h>\nTSR_SET_STACK_BYTES(2048);\n"
                   "char blob[20000] = {1}; int main(void){ return blob[0]; }\n")
    elf = compile_program([src], tmp_path / "big.elf")
    img = load_elf(elf)
    assert img.stack_bytes == 2048
    img.check_fits(PRESETS["small"])  # 64 KiB
    with pytest.raises(ProgramTooBig) as ei:
        img.check_fits(PRESETS["tiny"])  # 16 KiB
    need = img.end + 6 * 2048          # tiny: T = 6 contexts (§1, contract v2), 2048 B each
    assert f"needs {need} bytes" in str(ei.value) and "available 16384" in str(ei.value)
    assert "tile 0" in str(ei.value)
    assert img.bytes_needed(PRESETS["tiny"]) == need


def test_no_crt_asm_program(tmp_path):
    src = tmp_path / "bare.S"
    src.write_text("""#include "tessera.h"
    .section .text.start, "ax"
    .globl _start
_start:
    csrr a0, TSR_CSR_TILE_ID
    addi a0, a0, 42
    ecall
""")
    elf = compile_program([src], tmp_path / "bare.elf", no_crt=True)
    img = load_elf(elf)
    assert img.entry == 0
    assert _text_words(elf)[:3] == [_csrr(Csr.TILE_ID)[1] | (10 << 7),
                                    isa.encode_i(isa.Opcode.OP_IMM, 10, 0, 10, 42),
                                    isa.INSN_ECALL]


def test_cc_errors(tmp_path):
    with pytest.raises(ToolchainError, match="source file not found"):
        compile_program([tmp_path / "missing.c"], tmp_path / "o.elf")
    (tmp_path / "x.txt").write_text("hi")
    with pytest.raises(ToolchainError, match="unsupported source"):
        compile_program([tmp_path / "x.txt"], tmp_path / "o.elf")
    bad = tmp_path / "bad.c"
    bad.write_text("int main(void) { return undefined_thing; }\n")
    with pytest.raises(CompileError) as ei:
        compile_program([bad], tmp_path / "o.elf")
    assert "undefined_thing" in ei.value.output
    with pytest.raises(ToolchainError, match="output directory"):
        compile_program([bad], tmp_path / "nodir" / "o.elf")


def _elf_header(ei_class, ei_data, machine, e_type=2):
    ident = b"\x7fELF" + bytes([ei_class, ei_data, 1]) + bytes(9)
    fmt = "<" if ei_data == 1 else ">"
    return ident + struct.pack(fmt + "HHI", e_type, machine, 1) + bytes(64)


def test_elf_loader_rejects_bad_files(tmp_path):
    with pytest.raises(ElfError, match="no such file"):
        load_elf(tmp_path / "nope.elf")
    txt = tmp_path / "t.elf"
    txt.write_text("not an elf at all")
    with pytest.raises(ElfError, match="not an ELF"):
        load_elf(txt)
    f64 = tmp_path / "64.elf"
    f64.write_bytes(_elf_header(2, 1, 243))
    with pytest.raises(ElfError, match="32-bit"):
        load_elf(f64)
    be = tmp_path / "be.elf"
    be.write_bytes(_elf_header(1, 2, 243))
    with pytest.raises(ElfError, match="big-endian"):
        load_elf(be)
    trunc = tmp_path / "trunc.elf"
    trunc.write_bytes(b"\x7fELF\x01\x01\x01")
    with pytest.raises(ElfError):
        load_elf(trunc)


def test_elf_loader_rejects_other_machine_and_objects(tmp_path):
    import subprocess, sys
    src = tmp_path / "a.c"
    src.write_text("int f(int x){ return x + 1; }\n")
    arm = tmp_path / "a_arm.o"
    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "arm-freestanding-none",
                    "-O2", "-c", str(src), "-o", str(arm)], check=True)
    with pytest.raises(ElfError, match="not RISC-V"):
        load_elf(arm)
    rv = tmp_path / "a_rv.o"
    subprocess.run([sys.executable, "-m", "ziglang", "cc", "-target", "riscv32-freestanding-none",
                    "-mcpu=generic_rv32+m", "-O2", "-c", str(src), "-o", str(rv)], check=True)
    with pytest.raises(ElfError, match="executable"):
        load_elf(rv)


def test_check_fits_counts_contexts():
    from tessera.toolchain.elf import Image, Segment
    img = Image("p.elf", 0, [Segment(0, b"\0" * 100, 4000)], {"__image_end": 4096})
    cfg = ArrayConfig(tiles=1, contexts=12, sram_bytes=16384)
    img.check_fits(cfg)                      # 4096 + 12 * 1024 = 16384: exactly fits
    with pytest.raises(ProgramTooBig, match="needs 16400 bytes"):
        Image("p.elf", 0, [Segment(0, b"", 4112)], {}).check_fits(cfg)


def test_engine_header_matches_spec(tmp_path):
    """tsr_mrun/tsr_mwait encode as the spec's rows; tsr_mdesc's layout is Descriptor.pack()'s;
    TSR_ENGINE_MACS / TSR_ENGINE_LANES follow -DTSR_ENGINE_MACS (architecture §12)."""
    from tessera.spec.engine import DESC_FIELDS, ChannelParams, Descriptor, Flag, Mode
    from tessera.spec.instructions import encode_mrun, encode_mwait
    text = generate()
    for name in ("tsr_mrun(", "tsr_mwait(", "tsr_mdesc;", "tsr_mparam;", "TSR_ENGINE_LANES",
                 "TSR_MMODE_TFLITE", "TSR_MFLAG_OUT_UNSIGNED"):
        assert name in text, name
    for name, _, off in DESC_FIELDS:
        assert f"__builtin_offsetof(tsr_mdesc, {name}) == {off}" in text
    d = Descriptor(a_base=0x1000, a_s0=64, a_s1=0x400, ak_s1=0xFFFFFFF8, w_base=0x2000, w_sm=72,
                   c_base=0x3000, c_s0=16, c_s1=256, p_base=0x4000, J0=128, J1=2, K0=9, K1=3,
                   C=4, mode=Mode.TFLITE, flags=Flag.A_UNSIGNED | Flag.OUT_UNSIGNED, zp=-7,
                   qmin=-7, qmax=127)
    p = ChannelParams(bias=-5, multiplier=0x40000000, shift=-3)
    src = tmp_path / "eng.c"
    src.write_text("""
#include <tessera.h>
const tsr_mdesc desc = { .a_base = 0x1000, .a_s0 = 64, .a_s1 = 0x400, .ak_s1 = (uint32_t)-8,
    .w_base = 0x2000, .w_sm = 72, .c_base = 0x3000, .c_s0 = 16, .c_s1 = 256, .p_base = 0x4000,
    .J0 = 128, .J1 = 2, .K0 = 9, .K1 = 3, .C = 4, .mode = TSR_MMODE_TFLITE,
    .flags = TSR_MFLAG_A_UNSIGNED | TSR_MFLAG_OUT_UNSIGNED, .zp = -7, .qmin = -7, .qmax = 127 };
const tsr_mparam param = { -5, 0x40000000, -3, 0 };
const uint32_t lanes = TSR_ENGINE_LANES, macs = TSR_ENGINE_MACS;
int main(void) { tsr_mrun(&desc); tsr_mwait(); return 0; }
""")
    elf = compile_program([src], tmp_path / "eng.elf", defines=["TSR_ENGINE_MACS=64"])
    words = _text_words(elf)
    assert any(w & ~(0x1F << 15) == encode_mrun(0) for w in words)
    assert encode_mwait() in words
    assert _symbol_bytes(elf, "desc", 64) == d.pack()
    assert _symbol_bytes(elf, "param", 16) == p.pack()
    assert _symbol_bytes(elf, "lanes", 4) == (8).to_bytes(4, "little")
    assert _symbol_bytes(elf, "macs", 4) == (64).to_bytes(4, "little")
    assert load_elf(elf).symbols["desc"] % 8 == 0


def test_engine_instructions_assemble_and_disassemble():
    from tessera.spec.instructions import encode_mrun, encode_mwait
    from tessera.toolchain import asm
    from tessera.toolchain.disasm import disasm
    assert asm.mrun("a0") == encode_mrun(10)
    assert asm.mwait() == encode_mwait() == 0x0000300B
    assert disasm(encode_mrun(10)) == "mrun a0"
    assert disasm(encode_mwait()) == "mwait"
    assert disasm(0x0000300B | 1 << 7).startswith(".word")   # rd != 0: not mwait
