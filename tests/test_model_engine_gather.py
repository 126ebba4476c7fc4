"""Golden model: the matrix engine's ``K_GATHER`` flag (docs/architecture.md §12: X(j, b) at
``a_base + j1·a_s1 + j0·a_s0 + g[k1] + 8·k0`` with g[k1] the u32 at ``ak_s1 + 8·k1``, one
gather step before the lane loads of each k1, check 1 on the gather word's address).

Expected values are derived by hand from the text (comments) or computed with the numpy
reference ``tessera.golden_model.kernels.matmul`` on the gathered rows; both golden-model
engines run every test (the fixture of ``test_model_engine``).
"""

import struct

import numpy as np
import pytest

from tessera.golden_model.kernels import matmul
from tessera.spec.config import ArrayConfig
from tessera.spec.engine import Descriptor, Flag, Mode, command_steps

from helpers.model_engine import (A, D0, OUT, P, SRAM, STD_MEM, W, check_fault, fault,  # noqa: F401
                                  fault_case, good, i32, make, issuer, model_engine, params,
                                  run_cmd)

GT = 0x2C00        # gather table (8 bytes per entry, u32 in the low half)


def gtable(offsets, junk=0x5A5A5A5A):
    """Gather table bytes: entry k1 = (offset, junk) — the high half must be ignored."""
    return b"".join(struct.pack("<II", o & 0xFFFFFFFF, junk) for o in offsets)


def test_gather_small_by_hand():
    # C = 1, J = 1, K0 = 1, K1 = 3, RAW; X rows are 8-byte vectors at A + 8r with all bytes
    # r + 1 (r = 0..7); W(0, b) = [b + 1] * 8 (b = 0, 1, 2); gather g = (40, 8, 56): rows
    # 5, 1, 7 -> bytes 6, 2, 8. acc = bias + 8·(6·1 + 2·2 + 8·3) = 100 + 8·34 = 372.
    rows = np.repeat(np.arange(1, 9, dtype=np.int8), 8)
    w = np.repeat(np.arange(1, 4, dtype=np.int8), 8)
    desc = Descriptor(a_base=A, ak_s1=GT, w_base=W, w_sm=24, c_base=OUT, p_base=P, K1=3, C=1,
                      mode=Mode.RAW, flags=Flag.K_GATHER)
    arr, res = run_cmd(desc, {A: rows.tobytes(), W: w.tobytes(), P: params([100]),
                              GT: gtable([40, 8, 56])})
    assert list(i32(arr, OUT, 1)) == [372]
    # steps: 8 + 2 + G·K1 (3) + KB·C (3) + (KB − 1)·J (2) + J·OW (1) + WRITE_DELAY (10) =
    # 29 (vs 26 without K_GATHER)
    assert command_steps(desc) == 29
    assert res.tiles[0].counters["engine"] == 30          # busy x .. x + 29
    assert res.tiles[0].counters["macs"] == 3 * 8



@pytest.mark.parametrize("tiles", [2, 3])
def test_gather_small_by_hand_on_tiles_in_lock_step(tiles):
    # test_gather_small_by_hand on every tile of a 2- or 3-tile array: the tiles run the same
    # command at the same streaming steps, so the vectorized engine steps them as one group
    # (its gather step reads the u32 g[k1] of every tile at once). §12 makes every tile's
    # engine independent: each tile's acc is the 1-tile one, 100 + 8·(6·1 + 2·2 + 8·3) = 372.
    # (Kills golden-model mutant M0615f6: the group gather step read 5 bytes per tile.)
    rows = np.repeat(np.arange(1, 9, dtype=np.int8), 8)
    w = np.repeat(np.arange(1, 4, dtype=np.int8), 8)
    desc = Descriptor(a_base=A, ak_s1=GT, w_base=W, w_sm=24, c_base=OUT, p_base=P, K1=3, C=1,
                      mode=Mode.RAW, flags=Flag.K_GATHER)
    cfg = ArrayConfig(tiles=tiles, contexts=6, sram_bytes=SRAM)
    arr, res = run_cmd(desc, {A: rows.tobytes(), W: w.tobytes(), P: params([100]),
                              GT: gtable([40, 8, 56])}, cfg=cfg)
    for t in range(tiles):
        assert list(i32(arr, OUT, 1, tile=t)) == [372], f"tile {t}"
        # the 1-tile command's 29 steps (8 + 2 + 3 + 3 + 2 + 1 + WRITE_DELAY 10, above) + the
        # accept cycle on every tile
        assert res.tiles[t].counters["engine"] == 30          # busy x .. x + 29
        assert res.tiles[t].counters["macs"] == 3 * 8

def test_gather_is_an_offset_not_an_address_and_wraps():
    # a_base = A + 64 and g = -64 (mod 2^32) reaches row 0 at A: acc = 7·8·(1·1) + 0 = 8
    rows = np.repeat(np.arange(1, 9, dtype=np.int8), 8)
    desc = Descriptor(a_base=A + 64, ak_s1=GT, w_base=W, w_sm=8, c_base=OUT, p_base=P, C=1,
                      mode=Mode.RAW, flags=Flag.K_GATHER)
    arr, _ = run_cmd(desc, {A: rows.tobytes(), W: np.ones(8, np.int8).tobytes(),
                            P: params([0]), GT: gtable([-64])})
    assert list(i32(arr, OUT, 1)) == [8]


@pytest.mark.parametrize("mode", [Mode.RAW, Mode.TFLITE])
def test_block_sparse_column_against_kernels(mode):
    # A [J = 24, K = 128] row-major (128 bytes per row); a block-sparse column stores the
    # 16-row blocks 1, 2, 6 of K (block size 16: K0 = 2 vectors per block, K1 = 3 blocks):
    # g = (16, 32, 96) bytes into each row; W packs the three blocks per channel (48 bytes).
    rng = np.random.default_rng(3)
    J, K, C = 24, 128, 4
    a = rng.integers(-128, 128, (J, K)).astype(np.int8)
    blocks = [1, 2, 6]
    wfull = np.zeros((C, K), np.int8)
    for bk in blocks:
        wfull[:, 16 * bk:16 * bk + 16] = rng.integers(-128, 128, (C, 16))
    wpack = np.concatenate([wfull[:, 16 * bk:16 * bk + 16] for bk in blocks], axis=1)
    bias = rng.integers(-1000, 1000, C)
    mult, shift = [1 << 30] * C, [-8] * C
    desc = Descriptor(a_base=A, a_s0=K, ak_s1=GT, w_base=W, w_sm=48, c_base=OUT,
                      c_s0=16 if mode == Mode.RAW else 8, p_base=P, J0=J, K0=2, K1=3, C=C,
                      mode=mode, flags=Flag.K_GATHER, zp=0)
    arr, res = run_cmd(desc, {A: a.tobytes(), W: wpack.tobytes(), P: params(bias, mult, shift),
                              GT: gtable([16 * bk for bk in blocks])})
    acc = matmul(a, wfull.T.copy()).astype(np.int64) + bias       # the dense product
    if mode == Mode.RAW:
        assert (i32(arr, OUT, 4 * J).reshape(J, 4) == acc).all()
    else:
        from tessera.golden_model.kernels import multiply_by_quantized_multiplier
        want = np.clip(multiply_by_quantized_multiplier(acc, mult, shift), -128, 127)
        got = np.frombuffer(arr.read_mem(0, OUT, 8 * J), np.int8).reshape(J, 8)[:, :C]
        assert (got == want).all()
    # only the 3 stored blocks are streamed: 3 · 2 · J stream steps of 8·C MACs
    assert res.tiles[0].counters["macs"] == 3 * 2 * J * 8 * C
    ow = 1          # RAW: ⌈C/4⌉ = 1 at C = 4 (one write of 16 bytes, two words); TFLITE: 1
    # 8 + 2C + G·K1 + KB·C + (KB − 1)·J + J·OW + WRITE_DELAY (§12), WRITE_DELAY = 10
    assert command_steps(desc) == 8 + 8 + 3 + 6 * 4 + 5 * J + J * ow + 10


def test_gather_read_sees_a_store_before_its_step():
    # the gather word is read in its own step (step 8 + 2C = 10 for C = 1): a store that
    # changes it before (the issuer writes g = 8 with sw before the mrun) is seen
    rows = np.repeat(np.arange(1, 9, dtype=np.int8), 8)
    desc = Descriptor(a_base=A, ak_s1=GT, w_base=W, w_sm=8, c_base=OUT, p_base=P, C=1,
                      mode=Mode.RAW, flags=Flag.K_GATHER)
    from tessera.toolchain import asm
    code = [*asm.li(6, GT), *asm.li(7, 8), asm.sw(7, 0, 6), *issuer()]
    arr, _ = run_cmd(desc, {A: rows.tobytes(), W: np.ones(8, np.int8).tobytes(),
                            P: params([0]), GT: gtable([0])}, code=code)
    assert list(i32(arr, OUT, 1)) == [2 * 8]                      # row 1: bytes 2


def test_fault_gather_word_outside_or_misaligned():
    # C = 1, K1 = 2: the gather steps are step 10 (k1 = 0) and, after W(0, 0) (step 11) and
    # J = 2 stream steps (12, 13), step 14 (k1 = 1)
    mem = dict(STD_MEM)
    for ak, step, addr in ((GT + 4, 10, GT + 4), (SRAM - 8, 14, SRAM), (SRAM, 10, SRAM)):
        mem[GT] = gtable([0, 0])
        if ak == SRAM - 8:
            mem[SRAM - 8] = gtable([0])
        arr, res = fault_case(good(mode=Mode.RAW, K1=2, ak_s1=ak, flags=Flag.K_GATHER,
                                   w_sm=16), mem)
        check_fault(res, arr, step, addr)


def test_random_gather_commands_against_the_formula():
    rng = np.random.default_rng(8)
    for _ in range(12):
        C, J0, J1 = int(rng.integers(1, 5)), int(rng.integers(1, 6)), int(rng.integers(1, 3))
        K0, K1 = int(rng.integers(1, 3)), int(rng.integers(1, 5))
        mode = int(rng.choice([Mode.RAW, Mode.TFLITE, Mode.FLOAT32]))
        offs = [8 * int(v) for v in rng.integers(0, 40, K1)]
        J = J0 * J1
        desc = Descriptor(a_base=A, a_s0=8 * 48, a_s1=8 * 48 * J0, ak_s1=GT, w_base=W,
                          w_sm=8 * K0 * K1, c_base=OUT, c_s0=16 if mode == Mode.RAW else 8,
                          c_s1=(16 if mode == Mode.RAW else 8) * J0, p_base=P, J0=J0, J1=J1,
                          K0=K0, K1=K1, C=C, mode=mode, flags=Flag.K_GATHER, zp=0)
        abytes = rng.integers(-128, 128, 8 * 48 * J).astype(np.int8)
        wb = rng.integers(-128, 128, (C, 8 * K0 * K1)).astype(np.int8)
        bias = rng.integers(-500, 500, C)
        mb = [0x3C000000] * C                    # FLOAT32: M = 2^-7; TFLITE: 2^29·2^-31
        arr, res = run_cmd(desc, {A: abytes.tobytes(), W: wb.tobytes(),
                                  P: params(bias, mb, [-2] * C), GT: gtable(offs)})
        x = np.stack([np.concatenate([abytes[j * 384 + o:j * 384 + o + 8 * K0] for o in offs])
                      for j in range(J)])
        acc = matmul(x, wb.T.copy()).astype(np.int64) + bias
        if mode == Mode.RAW:
            got = i32(arr, OUT, 4 * J).reshape(J, 4)[:, :C]
            assert (got == acc).all()
        else:
            got = np.frombuffer(arr.read_mem(0, OUT, 8 * J), np.int8).reshape(J, 8)[:, :C]
            if mode == Mode.FLOAT32:                 # x·2^-7 exact in float32 (|acc| < 2^24)
                want = np.clip(np.rint(acc / 128.0), -128, 127)
            else:                                    # SRDHM(x, 2^29) = x/4 ties up, then /4
                from tessera.golden_model.kernels import multiply_by_quantized_multiplier
                want = np.clip(multiply_by_quantized_multiplier(acc, [0x3C000000] * C,
                                                                [-2] * C), -128, 127)
            assert (got == want).all()
        assert res.tiles[0].counters["engine"] == command_steps(desc) + 1
