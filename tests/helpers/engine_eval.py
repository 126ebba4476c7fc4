"""A functional (untimed) evaluator of matrix-engine descriptors, written from
docs/architecture.md §12 "Semantics", for checking the kernel library's host-built descriptor
tables independently of the golden model (tests only; the model is the contract's executable
form)."""

from __future__ import annotations

import struct

import numpy as np

from tessera.golden_model.kernels.requantize import multiply_by_quantized_multiplier
from tessera.spec.engine import DESC_BYTES, Descriptor, Flag, Mode


def run_descriptor(sram: bytearray, d: Descriptor) -> None:
    """Apply one command to ``sram`` (a whole tile's bytes) in place."""
    mem = np.frombuffer(bytes(sram), dtype=np.uint8)
    c, kb = d.C, d.KB
    prm = [struct.unpack_from("<iii", sram, d.p_base + 16 * m) for m in range(c)]
    acc = np.zeros((d.J, c), dtype=np.int64)
    acc[:] = [p[0] for p in prm]
    W = np.zeros((c, kb * 8), dtype=np.int64)
    for m in range(c):
        a = (d.w_base + m * d.w_sm) % 2**32
        W[m] = mem[a:a + 8 * kb].astype(np.int8)
    for j1 in range(d.J1):
        for j0 in range(d.J0):
            j = j1 * d.J0 + j0
            x = []
            for k1 in range(d.K1):
                if d.flags & Flag.K_GATHER:         # g[k1]: the u32 at ak_s1 + 8·k1
                    o = struct.unpack_from("<I", sram, (d.ak_s1 + 8 * k1) % 2**32)[0]
                else:
                    o = k1 * d.ak_s1
                a = (d.a_base + j1 * d.a_s1 + j0 * d.a_s0 + o) % 2**32
                assert a % 8 == 0, hex(a)
                x.append(mem[a:a + 8 * d.K0])
            xv = np.concatenate(x)
            xv = xv.astype(np.int64) if d.flags & Flag.A_UNSIGNED else xv.view(np.int8).astype(np.int64)
            acc[j] += W @ xv
    acc = ((acc + 2**31) % 2**32) - 2**31
    for j1 in range(d.J1):
        for j0 in range(d.J0):
            j = j1 * d.J0 + j0
            cj = (d.c_base + j1 * d.c_s1 + j0 * d.c_s0) % 2**32
            if d.mode == Mode.RAW:
                assert cj % 8 == 0, hex(cj)
                sram[cj:cj + 4 * c] = acc[j].astype("<i4").tobytes()
            elif d.mode == Mode.FLOAT32:
                # min(max(rne(fl32(fl32(acc) M)) + zp, qmin), qmax) in IEEE binary32 (numpy);
                # |rne(.)| beyond 2^10 saturates every byte output, so clip there first
                assert cj % 8 + c <= 8, hex(cj)
                m = (np.array([p[1] for p in prm], np.int64) & 0xFFFFFFFF).astype(
                    np.uint32).view(np.float32)
                with np.errstate(over="ignore"):
                    p_ = acc[j].astype(np.float64).astype(np.float32) * m
                y = np.rint(np.clip(p_, -1024, 1024)).astype(np.int64)
                y = np.clip(y + d.zp, d.qmin, d.qmax)
                dt = np.uint8 if d.flags & Flag.OUT_UNSIGNED else np.int8
                sram[cj:cj + c] = y.astype(dt).tobytes()
            else:
                assert cj % 8 + c <= 8, hex(cj)
                y = multiply_by_quantized_multiplier(acc[j], [p[1] for p in prm],
                                                     [p[2] for p in prm]).astype(np.int64)
                y = np.clip(y + d.zp, d.qmin, d.qmax)
                dt = np.uint8 if d.flags & Flag.OUT_UNSIGNED else np.int8
                sram[cj:cj + c] = y.astype(dt).tobytes()


def run_table(sram: bytearray, addr: int, count: int) -> None:
    for i in range(count):
        run_descriptor(sram, Descriptor.unpack(bytes(sram[addr + DESC_BYTES * i:
                                                          addr + DESC_BYTES * (i + 1)])))


def run_engine_vertices(eng, compute_set_names=None) -> None:
    """Apply every engine descriptor table of a graph Engine's compiled graph to its regions
    (in variable order, i.e. kernel build order)."""
    comp = eng.compiled
    for name, (var, addrs) in comp.tensors.items():
        cmds = getattr(var, "engine_commands", None)
        if cmds is None:
            continue
        tile = var.intervals[0].tile
        region = eng._regions[tile]
        sram = bytearray(comp.base) + region
        run_table(sram, int(addrs[0]), len(cmds))
        region[:] = sram[comp.base:]
