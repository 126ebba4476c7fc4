"""The spec modules in tessera/: configuration validation, encodings and map invariants
(docs/architecture.md §1, §3.3, §6, §9). Expected words are hand-encoded from the RISC-V
R/I-type layouts."""

import pytest

from tessera.spec import exchange, hostmap, isa
from tessera.spec.config import MAX_CONTEXTS, MAX_SRAM_BYTES, MAX_TILES, PRESETS, ArrayConfig, preset
from tessera.spec.exchange import Step, XOp
from tessera.spec.timing import decision_latency


def test_presets_match_the_contract():
    # §1 (v2): tiny = 1 tile, 6 contexts, 16 KiB
    assert (PRESETS["tiny"].tiles, PRESETS["tiny"].contexts, PRESETS["tiny"].sram_bytes) == (1, 6, 16384)
    assert PRESETS["small"].tiles == 4 and PRESETS["array16"].tiles == 16
    g = preset("gc2_like")
    assert (g.tiles, g.contexts, g.sram_bytes) == (1216, 6, 256 * 1024)


@pytest.mark.parametrize("tiles,s", [(1, 2), (2, 3), (3, 4), (4, 4), (5, 5), (16, 6), (17, 7), (1216, 13)])
def test_sync_latency_formula(tiles, s):
    # §1 / §7 (v2): D = ceil(log2 N) + 2 (N = 1 gives 2), the ARRAY release latency as well
    assert ArrayConfig(tiles=tiles).sync_latency == s
    assert ArrayConfig(tiles=tiles).decision_latency == s
    assert decision_latency(tiles) == s


@pytest.mark.parametrize("bad", [0, -1, 1.0, True, "4"])
def test_decision_latency_refuses_bad_tile_counts(bad):
    with pytest.raises(ValueError, match="decision_latency: tiles must be an int >= 1"):
        decision_latency(bad)


@pytest.mark.parametrize("field,value", [
    ("tiles", 0), ("tiles", MAX_TILES + 1), ("contexts", 3), ("contexts", 4), ("contexts", 5),
    ("contexts", MAX_CONTEXTS + 1),
    ("sram_bytes", 8192), ("sram_bytes", 48 * 1024), ("sram_bytes", 2 * MAX_SRAM_BYTES),
    ("exchange_latency", 0), ("exchange_latency", 1), ("exchange_latency", 65)])
def test_config_rejects_out_of_range(field, value):
    with pytest.raises(ValueError, match=f"ArrayConfig.{field}"):
        ArrayConfig(**{field: value})


def test_config_rejects_wrong_types_and_unknown_names():
    with pytest.raises(TypeError, match="ArrayConfig.tiles"):
        ArrayConfig(tiles=2.0)
    with pytest.raises(TypeError):
        ArrayConfig(tiles=True)
    with pytest.raises(ValueError, match="unknown preset 'nope'"):
        preset("nope")
    with pytest.raises(ValueError, match="unknown ArrayConfig field"):
        ArrayConfig.from_dict({"tiles": 2, "cores": 3})
    c = ArrayConfig(tiles=8, contexts=7)   # T >= 6 (§1 v2)
    assert ArrayConfig.from_dict(c.to_dict()) == c


def test_custom_instruction_words():
    assert isa.encode_sync(isa.SyncZone.TILE) == 0x0000002B
    assert isa.encode_sync(isa.SyncZone.ARRAY) == 0x0010002B
    assert isa.encode_dot4(10, 11, 12) == 0x00C5850B      # dot4 a0, a1, a2
    assert isa.encode_dot4su(10, 11, 12) == 0x00C5950B
    with pytest.raises(ValueError):
        isa.encode_sync(2)                                  # EXTERNAL: reserved
    with pytest.raises(ValueError, match="rs1"):
        isa.encode_dot4(1, 32, 2)


def test_exchange_step_encoding_by_hand():
    # STEP send word 0x100 (byte 0x400), receive from relative +1 into byte 0x800
    w0, w1 = exchange.encode_step(Step.send_recv(0x400, 1, 0x800, relative=True))
    assert w0 == (0 << 30) | (1 << 29) | (1 << 28) | 0x100
    assert w1 == (1 << 31) | (1 << 20) | 0x200
    assert exchange.encode_step(Step.idle(5)) == ((1 << 30) | 4, 0)
    assert exchange.encode_step(Step.end()) == (2 << 30, 0)
    prog = [Step.send_recv(send_addr=8), Step.send_recv(recv_src=3, recv_addr=12), Step.idle(2)]
    assert exchange.decode_program(exchange.encode_program(prog)) == prog + [Step.end()]
    assert exchange.decode_step(3 << 30, 0).op == XOp.RESERVED


@pytest.mark.parametrize("bad", [Step.send_recv(send_addr=2), Step.idle(0),
                                 Step.send_recv(recv_src=2048, recv_addr=0),
                                 Step.send_recv(recv_src=1)])
def test_exchange_step_errors(bad):
    with pytest.raises(ValueError):
        exchange.encode_step(bad)


def test_host_map_blocks_fit():
    # every context block of the largest tile fits in one tile register block (§9)
    last = hostmap.TileReg.CONTEXT_BASE + MAX_CONTEXTS * hostmap.CONTEXT_STRIDE
    assert last <= hostmap.TILE_REG_STRIDE
    assert hostmap.ContextReg.REGS + 32 * 4 <= hostmap.CONTEXT_STRIDE
    # register blocks of all tiles stay below the SRAM windows, windows hold the largest SRAM
    assert hostmap.TILE_REG_BASE + MAX_TILES * hostmap.TILE_REG_STRIDE <= hostmap.SRAM_BASE
    assert hostmap.SRAM_STRIDE >= MAX_SRAM_BYTES
    assert hostmap.SRAM_BASE + MAX_TILES * hostmap.SRAM_STRIDE <= 1 << 32
    assert hostmap.context_reg_addr(1, 15, hostmap.ContextReg.PC) == 0x0010_0000 + 0x2000 + 0x100 + 15 * 0x100 + 4


def test_engine_output_writes_by_hand():
    # §12 "Step schedule": OW = ⌈C/4⌉ write steps per element in RAW mode (16 bytes a step:
    # two 8-byte words), 1 in the byte modes. The example of §12: C = 4, J = 128, KB = 16 is
    # 8 + 8 + 64 + 15·128 + 128 + 10 = 2,138 steps in RAW and in TFLITE mode (WRITE_DELAY = 10).
    from tessera.spec.engine import (ENGINE_WRITE_WORDS, Descriptor, Mode, command_steps,
                                     output_words)
    assert ENGINE_WRITE_WORDS == 2
    assert [output_words(Mode.RAW, c) for c in range(1, 9)] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert {output_words(m, c) for m in (Mode.TFLITE, Mode.FLOAT32) for c in range(1, 9)} == {1}
    for mode in (Mode.RAW, Mode.TFLITE):
        assert command_steps(Descriptor(J0=128, K0=16, C=4, mode=mode)) == 2138
    # C = 8 (P = 64), J = 10, KB = 2, RAW: 8 + 16 + 16 + 10 + 10·2 + 10 = 80
    assert command_steps(Descriptor(J0=10, K0=2, C=8, mode=Mode.RAW)) == 80
